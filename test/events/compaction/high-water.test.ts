/**
 * The compactor keeps the high-water mark (storage/checkpoint.ts) ahead of every org: it is durable
 * before an org commits a higher log position, and a batch whose mark cannot be written commits nothing.
 * Over positions that hold no record (the log resumed above the mark) the checkpoint still reaches the
 * head. Real embedded log, real DuckDB files.
 */
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { Compactor } from '../../../src/events/compaction/compactor.js';
import { testCompactor } from '../../helpers/test-compactor.js';
import type { CommitReport } from '../../../src/events/compaction/compaction.js';
import { EmbeddedLog } from '../../../src/events/log/embedded-log.js';
import { encodeRecord } from '../../../src/events/log/record-codec.js';
import type { LogEntry } from '../../../src/events/log/types.js';
import { CHECKPOINT_FILE, HIGH_WATER_FILE } from '../../../src/storage/checkpoint.js';
import { OrgDatabases } from '../../../src/storage/org-databases.js';
import { LocalOrgStorage } from '../../../src/storage/org-storage.js';

const ORGS = ['acme', 'beta'];

function entry(org: string, n: number): LogEntry {
  const messageId = `${org}-${n}`;
  const body = { clientId: `c-${n}`, type: 'track', event: 'custom', messageId, traits: { email: `u${n}@example.com` }, properties: { eventName: 'x' } };
  return { kind: 'event', org, environment: 'production', messageId, receivedAt: Date.now(), body: JSON.stringify(body), code: null, errors: null, facts: null };
}

interface Setup {
  log: EmbeddedLog;
  compactor: Compactor;
  errors: string[];
  /** Each org's log_cursor, read through the compactor's own pool. */
  cursors(): Promise<number[]>;
}

async function setUp(t: Test, dir: string, options: { highWater?: number } = {}): Promise<Setup> {
  const log = await EmbeddedLog.open(join(dir, 'log'), options);
  const pool = new OrgDatabases(join(dir, 'orgs'), { maxOpen: 4, memoryLimit: '256MB', threads: 1, idleCloseMs: 60_000 });
  const orgs = new LocalOrgStorage(pool);
  const errors: string[] = [];
  const compactor = testCompactor(join(dir, 'orgs'), {
    orgs,
    log,
    logger: { error: (details, message) => errors.push(`${message}: ${String((details as { err?: Error }).err?.message)}`) },
    afterCommit: async (_report: CommitReport) => {},
  });
  t.teardown(async () => {
    await compactor.stop();
    await log.close();
    await pool.close();
  });
  const cursors = async () => {
    const seqs: number[] = [];
    for (const org of ORGS) seqs.push(Number((await orgs.org(org).all<{ seq: bigint }>("SELECT seq FROM log_cursor WHERE name = 'compactor'"))[0]?.seq ?? 0n));
    return seqs;
  };
  return { log, compactor, errors, cursors };
}

/** Resolves when `promise` does, or fails the test after `ms` (the compactor never got there). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T | 'late'> {
  return Promise.race([promise, new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), ms).unref())]).then((outcome) => {
    if (outcome === 'late') t.fail(`${what} within ${ms} ms`);
    return outcome;
  });
}

t.test('no org commits a position the mark does not cover', async (t) => {
  const dir = t.testdir();
  await mkdir(join(dir, 'orgs'), { recursive: true });
  // A directory where the mark goes: every raise fails (EISDIR), as on a full or broken disk.
  await mkdir(join(dir, 'orgs', HIGH_WATER_FILE));
  const { log, compactor, errors, cursors } = await setUp(t, dir);
  for (let r = 0; r < 10; r++) await log.write(`record-${r}`, encodeRecord(ORGS.map((org) => entry(org, r))));
  await compactor.start();
  // The second failure means the first batch was retried (1 s apart); bounded, should it never fail.
  for (let waited = 0; errors.length < 2 && waited < 10_000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
  t.match(errors[0], /compaction batch failed.*EISDIR/, 'the batch fails on the mark');
  t.same(await cursors(), [0, 0], 'and no org holds any of it');
  t.equal(compactor.compactedSeq, 0);

  await rm(join(dir, 'orgs', HIGH_WATER_FILE), { recursive: true });
  await within(compactor.whenCompacted(10), 10_000, 'compaction reached the head once the mark could be written');
  const mark = Number(await readFile(join(dir, 'orgs', HIGH_WATER_FILE), 'utf8'));
  t.equal(mark, 10, 'the mark is the last position compacted');
  t.ok((await cursors()).every((cursor) => cursor <= mark), `every org's position is at or below it (${(await cursors()).join(', ')})`);
});

t.test('compaction reaches the head over positions that hold no record', async (t) => {
  const dir = t.testdir();
  const { log, compactor, errors } = await setUp(t, dir, { highWater: 50 });
  t.equal(await log.headSeq(), 50, 'the log resumed above the mark');
  await compactor.start();
  await within(compactor.whenCompacted(50), 10_000, 'the checkpoint passed the skipped positions without a new record');
  t.equal(await readFile(join(dir, 'orgs', CHECKPOINT_FILE), 'utf8'), '50\n', 'and is saved, so a backup waiting for the head is answered');
  await log.write('after', encodeRecord([entry('acme', 1)]));
  await within(compactor.whenCompacted(51), 10_000, 'the next record compacted');
  t.same(errors, []);
});
