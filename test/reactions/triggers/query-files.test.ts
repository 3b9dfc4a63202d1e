/**
 * Only regular files inside QUERIES_DIR/<org>/ (and its segments/) are read or written. Each hostile form
 * someone with write access to QUERIES_DIR (a checkout of the team's repository) can plant — links to the
 * service's secrets, to a folder, to another org's folder, hard links, a FIFO, a device, a socket, a
 * folder named x.sql, a 1 GB sparse file, a planted temporary file — is refused and shown on its trigger,
 * never read, stored, hung on, or written through.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, linkSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, symlinkSync, writeFileSync, ftruncateSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import t from 'tap';
import { QueryFiles } from '../../../src/reactions/triggers/query-files.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { BOOKING_TRIGGER } from '../../helpers/flows.js';
import { ADMIN_KEY, createOrgOverHttp, spawnServer } from '../../helpers/server-process.js';

const ADMIN_SECRET = 'admin-secret-5f0c1e9a7b';

/** The service's secrets in DATA_DIR: the generated webhook.key, and an admin.key as `npm start` writes one. */
function secrets(h: TestApp): { webhookKey: string; adminKey: string } {
  writeFileSync(join(h.dataDir, 'admin.key'), `${ADMIN_SECRET}\n`, { mode: 0o600 });
  return { webhookKey: readFileSync(join(h.dataDir, 'webhook.key'), 'utf8').trim(), adminKey: join(h.dataDir, 'admin.key') };
}

async function versions(h: TestApp, org = 'acme'): Promise<string[]> {
  return (await h.db(org).all<{ name: string }>('SELECT DISTINCT name FROM trigger_versions ORDER BY name')).map((r) => r.name);
}

t.test('each file that is not a regular file of its own is refused, shown on its trigger, and never read or stored', async (t) => {
  const h = await startTestApp(t);
  await h.createOrg('acme');
  const { webhookKey, adminKey } = secrets(h);
  const dir = join(h.dataDir, 'queries', 'acme');
  mkdirSync(dir, { recursive: true });
  const at = (name: string) => join(dir, `${name}.sql`);
  writeFileSync(at('good'), BOOKING_TRIGGER);

  const cases: Array<[string, () => void, RegExp]> = [
    ['webhook_link', () => symlinkSync(join(h.dataDir, 'webhook.key'), at('webhook_link')), /is a symbolic link; only regular files are read/],
    ['admin_link', () => symlinkSync(adminKey, at('admin_link')), /is a symbolic link; only regular files are read/],
    ['dir_link', () => symlinkSync(h.dataDir, at('dir_link')), /is a symbolic link; only regular files are read/],
    ['hard_link', () => linkSync(adminKey, at('hard_link')), /has 2 hard links; only files with one link are read/],
    ['pipe', () => execFileSync('mkfifo', [at('pipe')]), /is a FIFO; only regular files are read/],
    ['folder', () => mkdirSync(at('folder')), /is a folder; only regular files are read/],
    [
      'sparse',
      () => {
        const fd = openSync(at('sparse'), 'w');
        ftruncateSync(fd, 1024 ** 3);
        closeSync(fd);
      },
      /is 1073741824 bytes; at most 300000 bytes are read/,
    ],
    ['long', () => writeFileSync(at('long'), `-- ${'x'.repeat(100_000)}`), /holds 100003 characters; a query may have at most 100000 \(what PUT accepts\)/],
  ];
  try {
    execFileSync('mknod', [at('zero'), 'c', '1', '5']);
    cases.push(['zero', () => undefined, /is a device file; only regular files are read/]);
  } catch {
    t.comment('mknod not permitted here: no device file case');
  }
  for (const [, make] of cases) make();
  // A socket's path is limited to 108 bytes; bound relative to the folder.
  const cwd = process.cwd();
  process.chdir(dir);
  const socket = createServer();
  await new Promise<void>((resolve) => socket.listen('sock.sql', resolve));
  process.chdir(cwd);
  t.teardown(() => new Promise((resolve) => socket.close(resolve)));
  cases.push(['sock', () => undefined, /is a socket; only regular files are read/]);

  await h.app.storageRole!.triggers.scan();
  const list = await h.admin('GET', '/admin/v1/orgs/acme/triggers');
  t.equal(list.statusCode, 200);
  const rows = new Map((list.json().triggers as Array<{ name: string }>).map((row) => [row.name, row]));
  t.match(rows.get('good'), { status: 'live', liveVersion: 1, error: null }, 'a regular file next to them is read as ever');
  for (const [name, , reason] of cases) {
    t.match(rows.get(name), { status: 'file_refused', liveVersion: null, latestVersion: null, committedAt: null, error: reason }, name);
    t.match(rows.get(name), { error: new RegExp(`^QUERIES_DIR/acme/${name}\\.sql `) }, `${name}: the reason names the file as the data engineer knows it`);
    const one = await h.admin('GET', `/admin/v1/orgs/acme/triggers/${name}`);
    t.match(one.json(), { status: 'file_refused', sql: null, error: reason }, `${name}: GET one shows the refusal`);
    t.equal((await h.admin('GET', `/admin/v1/orgs/acme/triggers/${name}/versions`)).statusCode, 404, `${name}: no version recorded`);
    t.equal((await h.admin('POST', `/admin/v1/orgs/acme/triggers/${name}/preview`, {})).statusCode, 404, `${name}: nothing to preview`);
  }
  t.same(await versions(h), ['good'], 'only the regular file reached the database');
  for (const body of [list.body, (await h.admin('GET', '/admin/v1/orgs/acme/triggers/webhook_link')).body, (await h.admin('GET', '/admin/v1/orgs/acme/triggers/hard_link')).body]) {
    t.notOk(body.includes(webhookKey) || body.includes(ADMIN_SECRET), 'no secret in any answer');
  }

  // Fixed: the refusal goes, the file is read.
  execFileSync('rm', ['-rf', at('folder')]);
  writeFileSync(at('folder'), BOOKING_TRIGGER);
  const fixed = (await h.admin('GET', '/admin/v1/orgs/acme/triggers')).json().triggers.find((row: { name: string }) => row.name === 'folder');
  t.match(fixed, { status: 'live', error: null }, 'a folder replaced by a file is read');
});

t.test("an org's folder or segments/ that is a link is not read: one org never sees another org's queries", async (t) => {
  const h = await startTestApp(t);
  await h.createOrg('acme');
  await h.createOrg('beta');
  const queries = join(h.dataDir, 'queries');
  const marker = '-- beta private 7d1e';
  mkdirSync(join(queries, 'beta', 'segments'), { recursive: true });
  writeFileSync(join(queries, 'beta', 'spy.sql'), `${BOOKING_TRIGGER}\n${marker}`);
  writeFileSync(join(queries, 'beta', 'segments', 'vip.sql'), `SELECT email_address AS email FROM profiles ${marker}`);
  symlinkSync(join(queries, 'beta'), join(queries, 'acme'));

  await h.app.storageRole!.triggers.scan();
  const list = await h.admin('GET', '/admin/v1/orgs/acme/triggers');
  t.same(list.json(), { triggers: [], folderError: 'QUERIES_DIR/acme is a symbolic link; only a real folder is read' }, 'the folder is refused, its names not even listed');
  const one = await h.admin('GET', '/admin/v1/orgs/acme/triggers/spy');
  t.match(one.json(), { status: 'file_refused', sql: null, error: 'QUERIES_DIR/acme is a symbolic link; only a real folder is read' });
  t.notOk(list.body.includes(marker) || one.body.includes(marker), "beta's SQL never shows under acme");
  t.same(await versions(h, 'acme'), [], 'nothing recorded for acme');
  t.match((await h.admin('GET', '/admin/v1/orgs/beta/triggers')).json(), { triggers: [{ name: 'spy', status: 'live' }], folderError: null }, "beta's own folder is read");

  const put = await h.admin('PUT', '/admin/v1/orgs/acme/triggers/planted', { sql: BOOKING_TRIGGER });
  t.equal(put.statusCode, 409, 'a save through the linked folder is refused');
  t.match(put.json(), { code: 'query_file_refused', detail: /^QUERIES_DIR\/acme is a symbolic link; only a real folder is written/ });
  t.notOk(existsSync(join(queries, 'beta', 'planted.sql')), "nothing written into beta's folder");
  t.same(await versions(h, 'acme'), [], 'and no version recorded');

  // A real org folder whose segments/ is a link.
  execFileSync('rm', [join(queries, 'acme')]);
  mkdirSync(join(queries, 'acme'));
  symlinkSync(join(queries, 'beta', 'segments'), join(queries, 'acme', 'segments'));
  const segments = await h.admin('GET', '/admin/v1/orgs/acme/segments');
  t.same(segments.json(), { segments: [], folderError: 'QUERIES_DIR/acme/segments is a symbolic link; only a real folder is read' });
  const putSegment = await h.admin('PUT', '/admin/v1/orgs/acme/segments/vip2', { sql: 'SELECT email_address AS email FROM profiles' });
  t.equal(putSegment.statusCode, 409);
  t.same(readdirSync(join(queries, 'beta', 'segments')), ['vip.sql'], "nothing written into beta's segments");
});

t.test('a save creates its temporary file exclusively: a planted .tmp link or file never redirects it', async (t) => {
  const h = await startTestApp(t);
  await h.createOrg('acme');
  const dir = join(h.dataDir, 'queries', 'acme');
  mkdirSync(dir, { recursive: true });
  const victim = join(h.dataDir, 'victim.txt');
  writeFileSync(victim, 'victim');

  symlinkSync(victim, join(dir, 'first.sql.tmp'));
  writeFileSync(join(dir, 'second.sql.tmp'), 'planted');
  symlinkSync(victim, join(dir, 'third.sql'));
  mkdirSync(join(dir, 'fourth.sql'));

  for (const name of ['first', 'second', 'third']) {
    const res = await h.admin('PUT', `/admin/v1/orgs/acme/triggers/${name}`, { sql: BOOKING_TRIGGER });
    t.equal(res.statusCode, 200, `${name} saved`);
    t.ok(lstatSync(join(dir, `${name}.sql`)).isFile(), `${name}.sql is a regular file`);
    t.equal(readFileSync(join(dir, `${name}.sql`), 'utf8'), BOOKING_TRIGGER);
  }
  t.equal(readFileSync(victim, 'utf8'), 'victim', 'the file the links point to is untouched');
  t.ok(lstatSync(join(dir, 'first.sql.tmp')).isSymbolicLink(), 'the planted link is left as it was');
  t.equal(readFileSync(join(dir, 'second.sql.tmp'), 'utf8'), 'planted', 'the planted file too');

  const folder = await h.admin('PUT', '/admin/v1/orgs/acme/triggers/fourth', { sql: BOOKING_TRIGGER });
  t.equal(folder.statusCode, 409);
  t.match(folder.json(), { code: 'query_file_refused', detail: /^QUERIES_DIR\/acme\/fourth\.sql is a folder/ });
  t.same(await versions(h), ['first', 'second', 'third'], 'the refused save recorded nothing');
  t.same(readdirSync(dir).filter((name) => name.endsWith('.tmp')).sort(), ['first.sql.tmp', 'second.sql.tmp'], 'no temporary file of ours is left');
});

t.test('a refusal is logged once, again when it changes, and forgotten when the file is fixed', async (t) => {
  const root = t.testdir({ acme: { 'Bad.sql': 'SELECT 1' } });
  const lines: Array<{ msg: string; reason?: string; file?: string }> = [];
  const logger = pino({ level: 'warn' }, new Writable({ write: (chunk, _encoding, done) => (lines.push(JSON.parse(String(chunk))), done()) }));
  const files = new QueryFiles(root, logger);
  const file = join(root, 'acme', 'x.sql');
  symlinkSync('/etc/passwd', file);

  for (let scan = 0; scan < 3; scan++) for (const name of files.names('acme', 'trigger')) t.match(files.read('acme', 'trigger', name), { kind: 'refused' });
  t.same(lines.map((l) => l.reason ?? l.file), ['QUERIES_DIR/acme/Bad.sql', 'QUERIES_DIR/acme/x.sql is a symbolic link; only regular files are read'], 'three scans: one line each');

  execFileSync('rm', [file]);
  execFileSync('mkfifo', [file]);
  files.read('acme', 'trigger', 'x');
  t.equal(lines.at(-1)?.reason, 'QUERIES_DIR/acme/x.sql is a FIFO; only regular files are read', 'a new reason is logged');
  execFileSync('rm', [file]);
  writeFileSync(file, 'SELECT 1');
  t.match(files.read('acme', 'trigger', 'x'), { kind: 'sql', sql: 'SELECT 1' });
  t.equal(files.refusal('acme', 'trigger', 'x'), undefined, 'fixed: no refusal');
  t.same(files.refusedNames('acme', 'trigger'), []);
  t.equal(lines.length, 3);
});

t.test('the service starts over a hostile QUERIES_DIR, answers, and logs each refusal once', async (t) => {
  const dir = t.testdir();
  const env = { DATA_DIR: join(dir, 'data'), QUERIES_DIR: join(dir, 'queries') };
  let server = await spawnServer(t, env);
  await createOrgOverHttp(server.url, 'acme');
  await server.stop();
  const acme = join(dir, 'queries', 'acme');
  mkdirSync(acme, { recursive: true });
  execFileSync('mkfifo', [join(acme, 'pipe.sql')]);
  symlinkSync(join(dir, 'data', 'webhook.key'), join(acme, 'leak.sql'));
  const fd = openSync(join(acme, 'big.sql'), 'w');
  ftruncateSync(fd, 1024 ** 3);
  closeSync(fd);
  writeFileSync(join(acme, 'good.sql'), BOOKING_TRIGGER);

  // Start-up scans QUERIES_DIR before it answers: a FIFO read there would never return.
  server = await spawnServer(t, env);
  const res = await fetch(`${server.url}/admin/v1/orgs/acme/triggers`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  t.equal(res.status, 200);
  const body = (await res.json()) as { triggers: Array<{ name: string; status: string }> };
  t.same(body.triggers.map((row) => [row.name, row.status]), [['big', 'file_refused'], ['good', 'live'], ['leak', 'file_refused'], ['pipe', 'file_refused']]);
  // The poll runs every second: wait out three of them.
  await new Promise((resolve) => setTimeout(resolve, 3500));
  const logged = server.stderr().split('\n').filter((line) => line.includes('trigger file refused'));
  for (const name of ['big', 'leak', 'pipe']) t.equal(logged.filter((line) => line.includes(`"name":"${name}"`)).length, 1, `${name}: logged once`);
  await server.stop();
});

t.test('QUERIES_DIR itself may be a link (the operator chose it); what is under it is checked', async (t) => {
  const dir = t.testdir({ real: { acme: { 'x.sql': 'SELECT 1', segments: { 'v.sql': 'SELECT 2' } } } });
  symlinkSync(join(dir, 'real'), join(dir, 'queries'));
  const files = new QueryFiles(join(dir, 'queries'), pino({ level: 'silent' }));
  t.same(files.read('acme', 'trigger', 'x'), { kind: 'sql', sql: 'SELECT 1' });
  t.same(files.read('acme', 'segment', 'v'), { kind: 'sql', sql: 'SELECT 2' });
  files.write('acme', 'trigger', 'y', 'SELECT 3');
  t.equal(readFileSync(join(dir, 'real', 'acme', 'y.sql'), 'utf8'), 'SELECT 3');
});
