/**
 * Disk use levels off: the service with 1 MB segments and LOG_RETENTION_HOURS=0 takes 30 MB of events,
 * and once they are compacted the log directory holds a few segments, not 30 MB; every event is in the
 * org's database, and the service restarts on the trimmed log and takes more.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { LocalDatabase } from '../../../src/db/database.js';
import { type Credential, createOrgOverHttp, scrapeMetrics, spawnServer, waitForCompaction } from '../../helpers/server-process.js';
import { scaled } from '../../helpers/deadline.js';

const MB = 1024 * 1024;
const PADDING = 'x'.repeat(1800);

async function logDir(dataDir: string): Promise<{ segments: number; bytes: number }> {
  const dir = join(dataDir, 'log');
  const names = (await readdir(dir)).filter((name) => name.endsWith('.log'));
  // The service deletes segments meanwhile: one gone between the listing and its stat is not counted.
  const sizes = (await Promise.all(names.map((name) => stat(join(dir, name)).then((s) => s.size, () => undefined)))).filter((size) => size !== undefined);
  return { segments: sizes.length, bytes: sizes.reduce((a, b) => a + b, 0) };
}

async function sendBatch(url: string, cred: Credential, first: number, count: number): Promise<number> {
  const body = JSON.stringify({
    ...cred,
    batch: Array.from({ length: count }, (_, i) => ({
      clientId: 'c',
      sentAt: Date.now(),
      type: 'track',
      event: 'custom',
      properties: { eventName: 'filler', properties: { padding: PADDING } },
      traits: { email: `c${(first + i) % 50}@example.com` },
      messageId: `m-${first + i}`,
    })),
  });
  const res = await fetch(`${url}/http/v1/batch`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  if (res.status !== 200) throw new Error(`batch: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
  return body.length;
}

t.test('30 MB of events through 1 MB segments with LOG_RETENTION_HOURS=0 leave a few segments', async (t) => {
  const dataDir = t.testdir();
  const env = { DATA_DIR: dataDir, LOG_SEGMENT_MB: '1', LOG_RETENTION_HOURS: '0' };
  let server = await spawnServer(t, env);
  const cred = await createOrgOverHttp(server.url, 'filler');

  let sentBytes = 0;
  let events = 0;
  let mostSegments = 0;
  while (sentBytes < 30 * MB) {
    sentBytes += await sendBatch(server.url, cred, events, 200);
    events += 200;
    if (events % 2000 === 0) mostSegments = Math.max(mostSegments, (await logDir(dataDir)).segments);
  }
  await waitForCompaction(server.url, 'filler', cred, 60_000);
  events += 1; // the sentinel

  // Compacted segments go at the next release pass (every 5 s).
  const deadline = Date.now() + scaled(20_000);
  let now = await logDir(dataDir);
  while (now.segments > 3 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    now = await logDir(dataDir);
  }
  t.comment(`${(sentBytes / MB).toFixed(1)} MB in ${events} events; at most ${mostSegments} segments seen while sending; after compaction ${now.segments} segments, ${(now.bytes / MB).toFixed(2)} MB`);
  t.ok(now.segments <= 3, `a few segments left (${now.segments})`);
  t.ok(now.bytes <= 3 * MB, `the log holds at most 3 MB (${now.bytes} bytes)`);
  // A release pass may still remove a segment between a look at the folder and the scrape: the gauge
  // lies between the counts just before and just after it.
  const before = (await logDir(dataDir)).segments;
  const reported = Number(/^audience_log_segments (\d+)$/m.exec(await scrapeMetrics(server.url))?.[1]);
  const after = (await logDir(dataDir)).segments;
  t.ok(reported <= before && reported >= after, `audience_log_segments says so (${reported}; the folder held ${before}, then ${after})`);

  // The trimmed log reopens, numbering goes on, and compaction takes up where it was.
  await server.stop();
  server = await spawnServer(t, env);
  await waitForCompaction(server.url, 'filler', cred, 30_000);
  events += 1;
  await server.stop();

  const db = await LocalDatabase.open(join(dataDir, 'orgs', 'filler.duckdb'));
  t.teardown(() => db.close());
  const [row] = await db.all<{ n: bigint; distinct_ids: bigint }>('SELECT count(*) AS n, count(DISTINCT message_id) AS distinct_ids FROM events');
  t.equal(Number(row!.n), events, 'every event is in the org database');
  t.equal(Number(row!.distinct_ids), events, 'once each');
});
