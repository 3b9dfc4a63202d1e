/**
 * Restore keeps org log positions in NATS mode (docs/operations/backups.md); restoring cannot make new
 * events look already applied. A backup taken in NATS mode, the stream then deleted (sequences restart
 * at 1), restored into a fresh DATA_DIR and started: every event acknowledged after the restore is in
 * its org's database. Real processes, a private nats-server.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import t from 'tap';
import { restoreBackup } from '../../src/backup/restore.js';
import { readConfig } from '../../src/core/config.js';
import { LocalDatabase } from '../../src/db/database.js';
import { HIGH_WATER_FILE } from '../../src/storage/checkpoint.js';
import { hasNatsServerBinary, startNatsServer } from '../helpers/nats-server.js';
import { ADMIN_KEY, type Credential, createOrgOverHttp, spawnServer, waitForCompaction } from '../helpers/server-process.js';
import { entryArgs } from '../helpers/entry.js';
import { ROOT } from '../helpers/paths.js';

function backup(dir: string, url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [...entryArgs('cli'), 'backup', dir], { cwd: ROOT, env: { ...process.env, ADMIN_KEY, AUDIENCE_URL: url } }, (error, stdout, stderr) =>
      error ? reject(new Error(`backup failed: ${stderr}`)) : resolve(stdout),
    );
  });
}

async function send(url: string, cred: Credential, ids: string[]): Promise<string[]> {
  const acked: string[] = [];
  for (const messageId of ids) {
    const res = await fetch(`${url}/http/v1/collect`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...cred, clientId: 'c', sentAt: Date.now(), type: 'track', event: 'custom', messageId, properties: { eventName: 'x', properties: {} }, traits: { email: 'r@example.com' } }),
    });
    await res.arrayBuffer();
    if (res.status === 200) acked.push(messageId);
  }
  return acked;
}

const withNats = hasNatsServerBinary() ? t.test : t.skip;

withNats('NATS mode: restored positions against a recreated stream skip no new event', async (t) => {
  // The server first: its teardown (kill) then runs before the fixture dir's removal, not after (ENOTEMPTY).
  const nats = await startNatsServer(t, { syncAlways: true });
  const root = t.testdirName;
  const first = join(root, 'first');
  const second = join(root, 'second');
  let server = await spawnServer(t, { DATA_DIR: first, NATS_URL: nats.url });
  const cred = await createOrgOverHttp(server.url, 'acme');
  await send(server.url, cred, Array.from({ length: 20 }, (_, i) => `before-${i}`));
  await waitForCompaction(server.url, 'acme', cred);
  await backup(join(root, 'backup'), server.url);
  await server.stop();

  const nc = await connect({ servers: nats.url });
  await (await jetstreamManager(nc)).streams.delete('AUDIENCE_EVENTS');
  await nc.close();

  const report = await restoreBackup(join(root, 'backup'), { ...readConfig({}), dataDir: second, queriesDir: join(second, 'queries'), natsUrl: nats.url });
  t.equal(report.logPositions, 'kept');
  const db = await LocalDatabase.open(join(second, 'orgs', 'acme.duckdb'));
  const [cursor] = await db.all<{ seq: bigint }>('SELECT seq FROM log_cursor');
  await db.close();
  t.ok(Number(cursor!.seq) > 20, `the org's position is kept (${cursor!.seq})`);
  const mark = await readFile(join(second, 'orgs', HIGH_WATER_FILE), 'utf8').catch(() => 'missing');
  t.equal(Number(mark), Number(cursor!.seq), `and is the high-water mark (${mark.trim()})`);

  server = await spawnServer(t, { DATA_DIR: second, NATS_URL: nats.url });
  const acked = await send(server.url, cred, Array.from({ length: 10 }, (_, i) => `after-${i}`));
  t.equal(acked.length, 10);
  await waitForCompaction(server.url, 'acme', cred, 15_000).catch(() => t.fail('compaction did not reach the new events'));
  const log = server.stderr();
  await server.stop();
  const check = await LocalDatabase.open(join(second, 'orgs', 'acme.duckdb'));
  const rows = await check.all<{ message_id: string }>("SELECT message_id FROM events WHERE starts_with(message_id, 'after-')");
  await check.close();
  t.same(rows.map((r) => r.message_id).sort(), [...acked].sort(), 'every event acknowledged after the restore is compacted');
  t.match(log, /JetStream stream AUDIENCE_EVENTS was behind the org databases: it ends at position 0/, 'and the skip is logged');
});
