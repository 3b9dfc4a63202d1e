/**
 * Compactor crash between DuckDB commit and "log ack": no duplicate rows, nothing lost.
 * In this design there is no separate log ack: the compactor saves its log position (log_cursor) in
 * the same DuckDB transaction as the rows. Proven two ways:
 *  - in process, deterministically: a failure injected right after COMMIT (and one right before it),
 *    with the clock moved past the 24 h dedupe window so that only the saved cursor can stop a replay;
 *  - with the real service killed -9 every 100–300 ms while it is compacting a backlog.
 */
import { join } from 'node:path';
import t from 'tap';
import { ManualClock } from '../../src/core/context.js';
import { type Database, LocalDatabase } from '../../src/db/database.js';
import { type TestApp, startTestApp, waitFor } from '../helpers/app.js';
import {
  type Credential,
  type ServerProcess,
  createOrgOverHttp,
  scrapeMetrics,
  spawnServer,
  waitForCompaction,
} from '../helpers/server-process.js';
import { sleep } from '../helpers/deadline.js';

const HOUR = 3600 * 1000;

function batchBody(cred: Credential, ids: string[], sentAt = Date.now()): Record<string, unknown> {
  return {
    ...cred,
    batch: ids.map((messageId) => ({
      clientId: `c-${messageId}`,
      sentAt,
      type: 'track',
      event: 'custom',
      properties: { eventName: 'x', properties: {} },
      traits: { email: 'replay@example.com' },
      messageId,
    })),
  };
}

const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

/** message_id → row count, over all events of the org. */
async function rowCounts(db: Database, org: string): Promise<Map<string, number>> {
  const rows = await db.all<{ message_id: string; n: bigint }>(
    'SELECT message_id, count(*) AS n FROM events WHERE org = $1 GROUP BY 1',
    [org],
  );
  return new Map(rows.map((r) => [r.message_id, Number(r.n)]));
}

type Transaction = Database['transaction'];

/** Makes the next compaction transaction fail once, `when` relative to its COMMIT; resolves when it did. */
function failNextTransaction(h: TestApp, when: 'after-commit' | 'before-commit', onFail: () => void): Promise<void> {
  const db = h.db();
  const original: Transaction = db.transaction.bind(db);
  return new Promise((resolve) => {
    const injected = async (work: Parameters<Transaction>[0]) => {
      db.transaction = original; // once
      if (when === 'after-commit') {
        await original(work);
      } else {
        // Everything written, then the failure inside the transaction: rolled back.
        await original(async (c) => {
          await work(c);
          throw new Error('simulated crash before COMMIT');
        }).catch(() => undefined);
      }
      onFail();
      resolve();
      throw new Error(`simulated crash ${when.replace('-', ' ')}`);
    };
    db.transaction = injected as Transaction;
  });
}

for (const when of ['after-commit', 'before-commit'] as const) {
  t.test(`in process: a compaction failure ${when.replace('-', ' ')} leaves every event exactly once`, async (t) => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const h = await startTestApp(t, { clock });
    const cred = await h.createOrg('acme');
    const log = h.app.eventLog!;
    const compactor = h.app.orgStorage!.compaction;
    const db = h.db();

    // Past the 24 h dedupe window, a replayed record would be stored again: only the cursor can stop it.
    const failed = failNextTransaction(h, when, () => clock.advance(25 * HOUR));
    const first = ids('a', 100);
    t.equal((await h.batch(batchBody(cred.production, first, clock.now()))).statusCode, 200, 'first batch acknowledged');
    await failed;
    t.equal(await log.headSeq(), 1, 'one log record (one batch)');

    if (when === 'after-commit') {
      const rows = await rowCounts(db, 'acme');
      t.equal(rows.size, 100, 'the failed batch was committed');
    }

    // The compactor retries after its back-off, from the position saved in DuckDB.
    await waitFor(async () => compactor!.compactedSeq >= 1, 5_000);
    const second = ids('b', 100);
    t.equal((await h.batch(batchBody(cred.production, second, clock.now()))).statusCode, 200, 'second batch acknowledged');
    await h.compacted();

    const rows = await rowCounts(db, 'acme');
    t.same([...rows.values()].filter((n) => n !== 1), [], 'no messageId stored twice');
    t.same(
      [...first, ...second].filter((id) => rows.get(id) !== 1),
      [],
      'every acknowledged messageId stored exactly once',
    );
    t.equal(rows.size, 200, '200 distinct events');
    const cursor = await db.all<{ seq: bigint }>("SELECT seq FROM log_cursor WHERE name = 'compactor'");
    t.equal(Number(cursor[0]?.seq), 2, 'the saved position is the log head');
  });
}

t.test('kill -9 during compaction, 5 times: every acknowledged event exactly once', async (t) => {
  const dataDir = t.testdir();
  const env = { DATA_DIR: dataDir };
  let server: ServerProcess = await spawnServer(t, env);
  const cred = await createOrgOverHttp(server.url, 'replay');
  const acked = new Set<string>();
  const unexpected: string[] = [];
  let batchNo = 0;

  const sendBatch = async (url: string, prefix: string): Promise<'ok' | 'dead'> => {
    const batch = ids(`${prefix}-${batchNo++}`, 100);
    try {
      const res = await fetch(`${url}/http/v1/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(batchBody(cred, batch)),
        signal: AbortSignal.timeout(10_000),
      });
      if (res.status !== 200) {
        unexpected.push(`${batch[0]}: ${res.status} ${await res.text().catch(() => '')}`);
        return 'ok';
      }
      for (const id of batch) acked.add(id); // atomic batch: a 200 acknowledges all of it
      await res.arrayBuffer().catch(() => undefined);
      return 'ok';
    } catch {
      return 'dead';
    }
  };

  // A backlog of 2,000 events, sent 4 batches at a time.
  for (let i = 0; i < 5; i++) await Promise.all(Array.from({ length: 4 }, () => sendBatch(server.url, 'base')));
  t.equal(acked.size, 2000, 'backlog acknowledged');

  const lagAtKill: number[] = [];
  for (let round = 1; round <= 5; round++) {
    // Keep appending while the compactor works through the backlog, then kill it 100–300 ms in.
    let killed = false;
    const url = server.url;
    const senders = Array.from({ length: 2 }, async () => {
      while (!killed && (await sendBatch(url, `r${round}`)) === 'ok');
    });
    await sleep(100 + Math.random() * 200);
    lagAtKill.push(await compactionLag(url));
    killed = true;
    await server.kill9();
    await Promise.all(senders);
    server = await spawnServer(t, env);
  }
  t.comment(`compaction lag (records) just before each kill: ${lagAtKill.join(', ')}`);

  await waitForCompaction(server.url, 'replay', cred, 30_000);
  await server.stop();

  t.same(unexpected, [], 'no error answers');
  const db = await LocalDatabase.open(join(dataDir, 'orgs', 'replay.duckdb'));
  const rows = await rowCounts(db, 'replay');
  await db.close();
  const missing = [...acked].filter((id) => !rows.has(id));
  const twice = [...rows].filter(([, n]) => n > 1).map(([id, n]) => `${id} x${n}`);
  t.same(missing.slice(0, 20), [], `every acknowledged messageId is stored (${missing.length} missing of ${acked.size})`);
  t.same(twice.slice(0, 20), [], `no messageId is stored twice (${twice.length} repeated)`);
});

/** audience_compaction_lag_records from /metrics (-1 when the server did not answer). */
async function compactionLag(url: string): Promise<number> {
  try {
    const text = await scrapeMetrics(url, { signal: AbortSignal.timeout(2_000) });
    const match = /^audience_compaction_lag_records (\d+)/m.exec(text);
    return match ? Number(match[1]) : -1;
  } catch {
    return -1;
  }
}
