/**
 * Backups while the service runs: `npx audiencectl backup <dir>` under a steady load of batches, then
 * `npx audiencectl restore` into a fresh DATA_DIR and a service started on it. Every event acknowledged
 * before the backup began is there, once; credentials, tokens and query files work as before; and the
 * restored service takes new events. One org's backup opens in DuckDB while the service runs.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import t, { type Test } from 'tap';
import { BACKUP_FORMAT } from '../../src/backup/backup.js';
import { restoreBackup, RestoreError } from '../../src/backup/restore.js';
import { readConfig } from '../../src/core/config.js';
import { ADMIN_KEY, type Credential, createOrgOverHttp, spawnServer, waitForCompaction } from '../helpers/server-process.js';
import { type CliRun, runCli } from '../helpers/cli.js';

const AUTH = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' };

const cli = (args: string[], env: Record<string, string>): Promise<CliRun> => runCli(args, { ...process.env, ADMIN_KEY, ...env });

function event(cred: Credential, messageId: string, email: string): Record<string, unknown> {
  return { clientId: 'c', sentAt: Date.now(), type: 'track', event: 'custom', messageId, properties: { eventName: 'load', properties: { n: messageId } }, traits: { email }, ...cred };
}

/** message_id → rows, in one org database file (opened read-only, as a data engineer would). */
async function messageIds(file: string): Promise<Map<string, number>> {
  const instance = await DuckDBInstance.create(file, { access_mode: 'READ_ONLY' });
  const connection = await instance.connect();
  try {
    const reader = await connection.runAndReadAll('SELECT message_id, count(*)::INTEGER AS n FROM events GROUP BY 1');
    return new Map(reader.getRowObjectsJS().map((row) => [row.message_id as string, row.n as number]));
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

t.test('a backup under load restores into a fresh DATA_DIR with every event acknowledged before it', async (t) => {
  const [first, second, backupDir, oneOrgDir] = ['first', 'second', 'backup', 'one-org'].map((name) => join(t.testdir(), name)) as [string, string, string, string];
  const env = (dir: string) => ({ DATA_DIR: join(dir, 'data'), QUERIES_DIR: join(dir, 'queries') });
  let server = await spawnServer(t, env(first));
  const creds = { acme: await createOrgOverHttp(server.url, 'acme'), beta: await createOrgOverHttp(server.url, 'beta') };
  await fetch(`${server.url}/admin/v1/orgs/acme`, { method: 'PATCH', headers: AUTH, body: JSON.stringify({ audienceApi: true }) });
  const token = ((await (await fetch(`${server.url}/admin/v1/orgs/acme/tokens`, { method: 'POST', headers: AUTH, body: JSON.stringify({ createdBy: 'ops@example.com' }) })).json()) as { token: string }).token;
  const trigger = await fetch(`${server.url}/admin/v1/orgs/acme/triggers/big_orders`, {
    method: 'PUT',
    headers: AUTH,
    body: JSON.stringify({
      sql: "SELECT identity, identity_type, ts, event_type, event_id, event_raw FROM event_triggers WHERE event_type = 'custom_load' AND ts > {cursor_start_time} AND ts <= {cursor_end_time}",
    }),
  });
  t.equal(trigger.status, 200, `a trigger saved (${trigger.status})`);
  const trait = await fetch(`${server.url}/admin/v1/orgs/acme/traits/loads`, { method: 'PUT', headers: AUTH, body: JSON.stringify({ sql: 'SELECT identity AS email, count(*) AS value FROM event_triggers GROUP BY identity' }) });
  t.equal(trait.status, 200, `a trait saved (${trait.status})`);

  // Two senders, one per org, each a batch of 50 at a time, until told to stop.
  const acked: Array<{ org: 'acme' | 'beta'; id: string; at: number }> = [];
  let sending = true;
  let failures = 0;
  const sender = async (org: 'acme' | 'beta') => {
    for (let batch = 0; sending; batch++) {
      const ids = Array.from({ length: 50 }, (_, i) => `${org}-${batch}-${i}`);
      const res = await fetch(`${server.url}/http/v1/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...creds[org], batch: ids.map((id, i) => event({} as Credential, id, `c${i % 10}@example.com`)) }),
      });
      await res.arrayBuffer();
      if (res.status !== 200) failures++;
      else for (const id of ids) acked.push({ org, id, at: Date.now() });
    }
  };
  const senders = [sender('acme'), sender('beta')];
  await new Promise((resolve) => setTimeout(resolve, 1500));

  const startedAt = Date.now();
  const backup = await cli(['backup', backupDir], { AUDIENCE_URL: server.url });
  const during = acked.filter((a) => a.at > startedAt).length;
  const oneOrg = await cli(['backup', oneOrgDir, '--org', 'beta'], { AUDIENCE_URL: server.url });
  sending = false;
  await Promise.all(senders);
  t.equal(failures, 0, 'collection went on: no batch refused');
  t.equal(backup.code, 0, `backup exit 0 ${backup.stderr}`);
  t.ok(during > 0, `events were acknowledged while the backup was taken (${during})`);
  const manifest = JSON.parse(backup.stdout) as { format: string; orgs: string[]; queryFiles: number; log: { kind: string } };
  t.match(manifest, { format: BACKUP_FORMAT, orgs: ['acme', 'beta'], queryFiles: 2, log: { kind: 'embedded' } }, 'the manifest is printed');

  t.equal(oneOrg.code, 0, `one org's backup exit 0 ${oneOrg.stderr}`);
  t.same(JSON.parse(oneOrg.stdout).orgs, ['beta']);
  t.notOk(existsSync(join(oneOrgDir, 'orgs', 'acme.duckdb')), "no other org's database in one org's backup");
  const oneOrgDocuments = JSON.parse(readFileSync(join(oneOrgDir, 'control.json'), 'utf8')) as Array<{ key: string }>;
  t.same(oneOrgDocuments.map((d) => d.key), ['org.beta'], "nor another org's documents");
  const exported = await messageIds(join(oneOrgDir, 'orgs', 'beta.duckdb'));
  t.ok(exported.size > 0, `the export opens read-only in DuckDB while the service runs (${exported.size} events)`);
  t.notOk([...exported.keys()].some((id) => id.startsWith('acme-')), 'and holds beta events only');
  await server.stop();

  const restore = await cli(['restore', backupDir], env(second));
  t.equal(restore.code, 0, `restore exit 0 ${restore.stderr}`);
  t.match(JSON.parse(restore.stdout), { orgs: ['acme', 'beta'], logPositions: 'reset', webhookKey: true, queryFiles: 2 });
  t.ok(existsSync(join(second, 'queries', 'acme', 'big_orders.sql')), 'the query file is back in QUERIES_DIR');
  t.ok(existsSync(join(second, 'queries', 'acme', 'traits', 'loads.sql')), 'and the trait file');
  t.equal(readFileSync(join(second, 'data', 'webhook.key'), 'utf8'), readFileSync(join(first, 'data', 'webhook.key'), 'utf8'), 'webhook signatures keep their key');

  server = await spawnServer(t, env(second));
  const res = await fetch(`${server.url}/http/v1/collect`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(event(creds.acme, 'after-restore', 'c1@example.com')) });
  t.equal(res.status, 200, 'the partner credentials work after the restore');
  await waitForCompaction(server.url, 'acme', creds.acme, 30_000);
  const lookup = await fetch(`${server.url}/audience/v2/contacts?identity=email:c1@example.com`, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
  t.equal(lookup.status, 200, 'the Audience API token works and the profile is there');
  const triggers = (await (await fetch(`${server.url}/admin/v1/orgs/acme/triggers`, { headers: AUTH })).json()) as { triggers: Array<{ name: string }> };
  t.ok(triggers.triggers.some((tr) => tr.name === 'big_orders'), 'the trigger is live');
  const restored = server;
  await t.test('the backup endpoint: admin key, org and query checked', (t) => endpointChecks(t, restored.url));
  await server.stop();

  for (const org of ['acme', 'beta'] as const) {
    const stored = await messageIds(join(second, 'data', 'orgs', `${org}.duckdb`));
    const before = acked.filter((a) => a.org === org && a.at < startedAt).map((a) => a.id);
    t.ok(before.length > 0);
    t.same(before.filter((id) => stored.get(id) !== 1), [], `${org}: every event acknowledged before the backup is there once (${before.length})`);
    t.same([...stored].filter(([, n]) => n > 1), [], `${org}: none twice`);
    if (org === 'acme') t.equal(stored.get('after-restore'), 1, 'an event sent after the restore is compacted');
  }
});

t.test('restore refuses what it cannot do, and says why', async (t) => {
  const dir = t.testdir();
  const config = (dataDir: string) => ({ ...readConfig({}), dataDir, queriesDir: join(dataDir, 'queries') });
  await t.rejects(restoreBackup(join(dir, 'missing'), config(join(dir, 'a'))), new RestoreError(`${join(dir, 'missing', 'manifest.json')} cannot be read (ENOENT): a backup is complete only once its manifest is written`));

  const fake = join(dir, 'fake');
  await mkdir(fake);
  await writeFile(join(fake, 'manifest.json'), JSON.stringify({ format: 'something-else', version: 1 }));
  await t.rejects(restoreBackup(fake, config(join(dir, 'b'))), /is not an Audience backup/);
  for (const slug of ['../../etc/passwd', '__proto__', 'Acme', 7]) {
    await writeFile(join(fake, 'manifest.json'), JSON.stringify({ format: BACKUP_FORMAT, version: 1, log: { kind: 'embedded', compactedSeq: 0 }, orgs: [slug] }));
    await t.rejects(restoreBackup(fake, config(join(dir, 'c'))), /lists an org that is not a slug/, `org ${JSON.stringify(slug)} refused`);
  }
  t.notOk(existsSync(join(dir, 'c', 'orgs')), 'nothing was written');

  const used = join(dir, 'used');
  await mkdir(join(used, 'log'), { recursive: true });
  await writeFile(join(used, 'log', '00000000000000000001.log'), 'x');
  await writeFile(join(fake, 'manifest.json'), JSON.stringify({ format: BACKUP_FORMAT, version: 1, log: { kind: 'embedded', compactedSeq: 0 }, orgs: [] }));
  await t.rejects(restoreBackup(fake, config(used)), /already holds events: restore into a fresh DATA_DIR/);
});

/** The backup endpoint's refusals, on a running service (the restored one of the first test: a service takes seconds to start). */
async function endpointChecks(t: Test, url: string): Promise<void> {
  const get = (query: string, headers: Record<string, string> = AUTH) => fetch(`${url}/admin/v1/backup${query}`, { headers });
  const cases: Array<[string, Record<string, string>, number, string]> = [
    ['', {}, 401, 'invalid_admin_key'],
    ['', { authorization: 'Bearer wrong-key-0123456789abcdef' }, 401, 'invalid_admin_key'],
    ['?org=nosuch', AUTH, 404, 'org_not_found'],
    ['?org=..%2F..%2Fetc', AUTH, 400, 'invalid_request'],
    ['?org=__proto__', AUTH, 400, 'invalid_request'],
    ['?org=a&org=b', AUTH, 400, 'invalid_request'],
    ['?path=/etc', AUTH, 400, 'invalid_request'],
  ];
  for (const [query, headers, status, code] of cases) {
    const res = await get(query, headers);
    t.equal(res.status, status, `${query || '(no query)'} ${JSON.stringify(headers).slice(0, 40)}: ${status}`);
    t.match(await res.json(), { code }, code);
  }
}
