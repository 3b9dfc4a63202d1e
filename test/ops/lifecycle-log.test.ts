/**
 * The logs tell the story (issue 28, part 3), read from a real service process's stdout: one info line
 * per admin change with its ids and no secret or e-mail; a readiness failure (a frozen NATS) one warn
 * line without a stack however often it is probed, and one line when it clears.
 */
import t from 'tap';
import { waitFor } from '../helpers/app.js';
import { hasNatsServerBinary, startNatsServer } from '../helpers/nats-server.js';
import { ADMIN_KEY, spawnServer } from '../helpers/server-process.js';

interface Line {
  level: number;
  msg: string;
  [field: string]: unknown;
}

const lines = (output: string): Line[] =>
  output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Line);

const natsTest = hasNatsServerBinary() ? t.test : t.skip;

natsTest('admin changes: one info line each; readiness: one warn line while it fails, one when it clears', async (t) => {
  // DATA_DIR first: startNatsServer keeps its store in the test dir, a later t.testdir() would wipe it.
  const dataDir = t.testdir();
  const nats = await startNatsServer(t);
  const server = await spawnServer(t, { DATA_DIR: dataDir, NATS_URL: nats.url, LOG_LEVEL: 'info' });
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    t.ok(res.ok, `${method} ${path}: ${res.status}`);
    return (await res.json()) as any;
  };

  const created = await admin('POST', '/admin/v1/orgs', { slug: 'acme', name: 'Acme' });
  const secret = created.credentials.production.partnerSecret as string;
  const token = await admin('POST', '/admin/v1/orgs/acme/tokens', { createdBy: 'ops@example.com' });
  const rotated = await admin('POST', '/admin/v1/orgs/acme/credentials/production/rotate');
  await admin('POST', '/admin/v1/orgs/acme/tokens/revoke', { createdBy: 'ops@example.com' });
  await admin('GET', '/admin/v1/orgs/acme'); // a read: no line

  await nats.freeze();
  t.teardown(() => nats.thaw());
  for (let i = 0; i < 5; i++) t.equal((await fetch(`${server.url}/readyz`)).status, 503, 'not ready while NATS is frozen');
  nats.thaw();
  await waitFor(async () => (await fetch(`${server.url}/readyz`)).status === 200, 15_000);
  for (let i = 0; i < 3; i++) t.equal((await fetch(`${server.url}/readyz`)).status, 200);
  await server.stop();

  const output = server.stderr();
  const log = lines(output);
  const one = (msg: string) => log.filter((line) => line.msg === msg);
  t.match(one('org created'), [{ level: 30, org: 'acme' }], 'org created: its slug');
  t.match(one('token created'), [{ level: 30, org: 'acme', tokenId: token.id }], 'token created: its id');
  t.match(one('partner secret rotated'), [{ level: 30, org: 'acme', env: 'production' }]);
  t.match(one('tokens revoked'), [{ level: 30, org: 'acme', revoked: 1 }]);
  t.equal(log.filter((line) => line.msg === 'org settings changed').length, 0, 'a read writes no line');
  for (const hidden of [secret, rotated.credentials.partnerSecret as string, token.token as string, 'ops@example.com', ADMIN_KEY]) {
    t.notOk(output.includes(hidden), `the output never holds ${hidden.slice(0, 6)}…`);
  }

  const notReady = log.filter((line) => line.msg.startsWith('not ready'));
  t.equal(notReady.length, 1, 'one line for five failing probes');
  t.match(notReady[0], { level: 40, failing: /log: NATS did not answer/ }, 'at warn, naming what fails');
  t.notOk('err' in notReady[0]! || 'stack' in notReady[0]!, 'without a stack');
  t.match(one('ready again'), [{ level: 30, was: /log/ }], 'one line when it clears');
  t.same(log.filter((line) => line.level >= 50), [], 'no error line at all');
});
