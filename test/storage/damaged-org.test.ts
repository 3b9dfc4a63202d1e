/**
 * Issue 22, finding 5, and issue 37, finding 3: one damaged org database stopped the whole service from
 * starting. Now the damage stays with its org, on the real service (a child process): four orgs' files
 * are damaged four ways while it is stopped (cut in half, header zeroed, a directory in its place, 16 KB
 * of random bytes in the middle, found by a checksum only once compaction reads that block); it starts;
 * every other org collects, compacts, is looked up and administered; each damaged org answers 503
 * org_unavailable (its lookups too), /readyz names them and stays 200; events sent to a damaged org are
 * kept in the log, and once its file is restored from a copy they are in its database, without a restart
 * for the file that comes back while running; a file moved aside while running starts the org empty with
 * every event the log still holds. For the embedded log and for JetStream (a private nats-server: the
 * events wait in the stream). Damage of every other kind and found at run time: damage-kinds.test.ts,
 * damaged-instance.test.ts.
 */
import { cpSync, mkdirSync, openSync, rmSync, statSync, truncateSync, writeSync, closeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import t from 'tap';
import { hasNatsServerBinary, startNatsServer } from '../helpers/nats-server.js';
import { ADMIN_KEY, type Credential, createOrgOverHttp, spawnServer, waitForCompaction } from '../helpers/server-process.js';
import { scaled } from '../helpers/deadline.js';

const admin = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' };
const DAMAGED = ['cut', 'zeroed', 'gone', 'garbled'] as const;

function event(cred: Credential, messageId: string, email = 'ada@example.com'): object {
  return {
    ...cred,
    clientId: 'c-1',
    sentAt: Date.now(),
    type: 'track',
    event: 'custom',
    messageId,
    properties: { eventName: 'booking', properties: {} },
    traits: { email },
  };
}

const collect = (url: string, body: object) =>
  fetch(`${url}/http/v1/collect`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function messageIds(url: string, slug: string): Promise<{ status: number; ids: string[]; body: Record<string, unknown> }> {
  const res = await fetch(`${url}/admin/v1/orgs/${slug}/events/samples?env=production&limit=100`, { headers: admin });
  const body = (await res.json()) as { events?: Array<{ messageId: string }> } & Record<string, unknown>;
  // Without the sentinels waitForCompaction sends.
  return { status: res.status, ids: (body.events ?? []).map((e) => e.messageId).filter((id) => !id.startsWith('drain_')).sort(), body };
}

for (const log of ['embedded', 'jetstream'] as const) {
  const test = log === 'jetstream' && !hasNatsServerBinary() ? t.skip : t.test;
  test(`${log}: a damaged org database leaves that org unavailable and every other org running`, { timeout: scaled(300_000) }, async (t) => {
    const began = Date.now();
    const mark = (what: string) => t.comment(`${what} at ${((Date.now() - began) / 1000).toFixed(1)} s`);
    // DATA_DIR first: startNatsServer puts its store inside the test dir, a later t.testdir() would wipe it.
    const dataDir = t.testdir();
    const nats = log === 'jetstream' ? await startNatsServer(t) : undefined;
    const env = { DATA_DIR: dataDir, QUERIES_DIR: join(dataDir, 'queries'), ...(nats ? { NATS_URL: nats.url } : {}) };
    let server = await spawnServer(t, env);
    const creds = new Map<string, Credential>();
    for (const slug of ['fine', ...DAMAGED]) {
      creds.set(slug, await createOrgOverHttp(server.url, slug));
      t.equal((await collect(server.url, event(creds.get(slug)!, `${slug}-before`))).status, 200);
      await waitForCompaction(server.url, slug, creds.get(slug)!);
    }
    t.equal((await fetch(`${server.url}/admin/v1/orgs/fine`, { method: 'PATCH', headers: admin, body: JSON.stringify({ audienceApi: true }) })).status, 200);
    const token = ((await (await fetch(`${server.url}/admin/v1/orgs/fine/tokens`, { method: 'POST', headers: admin, body: JSON.stringify({ createdBy: 'ops@fine.example' }) })).json()) as { token: string }).token;
    await server.stop();

    // A copy of one healthy file, to restore later; then the damage, with the service stopped.
    const orgs = join(dataDir, 'orgs');
    const file = (slug: string) => join(orgs, `${slug}.duckdb`);
    mkdirSync(join(dataDir, 'saved'));
    cpSync(file('cut'), join(dataDir, 'saved', 'cut.duckdb'));
    truncateSync(file('cut'), Math.floor(statSync(file('cut')).size / 2));
    const fd = openSync(file('zeroed'), 'r+');
    writeSync(fd, Buffer.alloc(4096), 0, 4096, 0);
    closeSync(fd);
    rmSync(file('gone'));
    rmSync(`${file('gone')}.wal`, { force: true });
    mkdirSync(file('gone'));
    // Issue 37, finding 3: 16 KB of random bytes in the middle of the file. DuckDB finds the bad block's
    // checksum wrong only when a statement reads it — here after the org had loaded, and the start exited.
    const garbled = openSync(file('garbled'), 'r+');
    writeSync(garbled, randomBytes(16_384), 0, 16_384, Math.floor(statSync(file('garbled')).size / 2));
    closeSync(garbled);

    mark('damaged');
    server = await spawnServer(t, env);
    const { url } = server;
    mark('started');

    // Every other org runs.
    t.equal((await collect(url, event(creds.get('fine')!, 'fine-after'))).status, 200, 'collect for the healthy org');
    await waitForCompaction(url, 'fine', creds.get('fine')!);
    t.ok((await messageIds(url, 'fine')).ids.includes('fine-after'), 'the healthy org compacts');
    const lookup = await fetch(`${url}/audience/v2/contacts?identity=email:ada@example.com`, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
    t.equal(lookup.status, 200, 'and is looked up');

    // /readyz: ready, naming each damaged org.
    const ready = await fetch(`${url}/readyz`);
    t.equal(ready.status, 200, '/readyz 200: one org is not the service');
    const checks = ((await ready.json()) as { checks: { orgs: { note?: string; details?: Record<string, string> } } }).checks;
    t.same(Object.keys(checks.orgs.details ?? {}).sort(), [...DAMAGED].sort(), `/readyz names the damaged orgs: ${JSON.stringify(checks.orgs)}`);
    t.notMatch(JSON.stringify(checks.orgs), new RegExp(dataDir), 'without the data directory path');

    for (const slug of DAMAGED) {
      const samples = await messageIds(url, slug);
      t.equal(samples.status, 503, `${slug}: admin reads answer 503`);
      t.match(samples.body, { code: 'org_unavailable', detail: new RegExp(`org "${slug}"`) });
      const put = await fetch(`${url}/admin/v1/orgs/${slug}/triggers/t1`, {
        method: 'PUT',
        headers: admin,
        body: JSON.stringify({ sql: 'SELECT identity, identity_type, ts, event_type, event_id, event_raw FROM event_triggers WHERE ts > {cursor_start_time} AND ts <= {cursor_end_time}' }),
      });
      t.equal(put.status, 503, `${slug}: a trigger save answers 503, recording nothing: ${await put.text()}`);
      t.equal((await collect(url, event(creds.get(slug)!, `${slug}-during`))).status, 200, `${slug}: its events are still accepted (kept in the log)`);
    }

    mark('checked');
    // A file restored while the service runs is picked up: the events sent meanwhile reach it.
    rmSync(file('cut'));
    rmSync(`${file('cut')}.wal`, { force: true });
    cpSync(join(dataDir, 'saved', 'cut.duckdb'), file('cut'));
    const repaired = async (slug: string) => {
      const deadline = Date.now() + scaled(90_000);
      let seen = await messageIds(url, slug);
      while (!seen.ids.includes(`${slug}-during`) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 500));
        seen = await messageIds(url, slug);
      }
      return seen.ids;
    };
    t.same(await repaired('cut'), ['cut-before', 'cut-during'], 'restored: its events from before the backup and those kept in the log');
    // One moved aside starts empty and gets every event the log still holds, from before the damage too.
    // (After the restored one has caught up: its replay from its own older position would bring them.)
    rmSync(file('garbled'));
    rmSync(`${file('garbled')}.wal`, { force: true });
    t.same(await repaired('garbled'), ['garbled-before', 'garbled-during'], 'moved aside: every event the log holds, from before the damage and kept meanwhile');

    mark('restored');
    // Still damaged ones stay so across a restart, and the service starts every time.
    await server.stop();
    mark('stopped');
    server = await spawnServer(t, env);
    mark('started again');
    t.equal((await messageIds(server.url, 'zeroed')).status, 503, 'still unavailable after a restart');
    t.equal((await messageIds(server.url, 'cut')).status, 200, 'the restored org stays available');
    t.same((await messageIds(server.url, 'garbled')).ids, ['garbled-before', 'garbled-during'], 'and the one moved aside keeps what it got');
    t.equal((await collect(server.url, event(creds.get('fine')!, 'fine-last'))).status, 200);
    await waitForCompaction(server.url, 'fine', creds.get('fine')!);
    t.ok((await messageIds(server.url, 'fine')).ids.includes('fine-last'), 'the healthy org goes on compacting');
  });
}
