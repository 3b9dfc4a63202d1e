/**
 * Damage stays with its org, whatever the damage (issue 37, finding 3): generated damage to one org's
 * real DuckDB files — cut anywhere, random bytes anywhere (header, middle, last blocks, its events' own
 * blocks), a WAL with garbage in it or cut mid-record — done before the pool opens it ("start") or while
 * it is open ("run": the next statement reads the bad block). In every case the other org of the same
 * pool reads and writes, the damaged one either answers right (a block nobody reads, a WAL DuckDB drops
 * whole: its rows and its log position go together) or answers OrgUnavailable naming it, stays so while
 * its files are unchanged (no coming and going), and comes back once they are repaired: restored from a
 * copy (every row) or moved aside (empty, for the log to fill). A tenant's SQL cannot pass its own error
 * off as damage.
 */
import { cpSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, statSync, truncateSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { OrgUnavailable } from '../../src/core/unavailable.js';
import type { LocalDatabase } from '../../src/db/database.js';
import { OrgDatabases } from '../../src/storage/org-databases.js';
import { orgDatabaseFile } from '../../src/storage/org-files.js';
import { foldContactActivity } from '../../src/events/compaction/fold-contact-activity.js';
import { foldEventTypes } from '../../src/events/compaction/fold-event-types.js';
import { scaled, waitFor } from '../helpers/deadline.js';

/** The longest slugs the service accepts (40 characters). */
const VICTIM = 'v' + 'ictim_'.repeat(6) + 'abc';
const BYSTANDER = 'b' + 'ystander_'.repeat(4) + 'xyz';
const CHECKPOINTED = 20_000;
/** Events committed after the last checkpoint: only in the WAL. */
const IN_WAL = 1_000;
const TOTAL = CHECKPOINTED + IN_WAL;
const limits = { maxOpen: 4, memoryLimit: '128MB', threads: 1, idleCloseMs: 600_000, reopenDamagedMs: 0 };

/** Events and the log position that goes with them, in one transaction, as compaction commits them. */
async function commitEvents(db: LocalDatabase, slug: string, from: number, count: number): Promise<void> {
  await db.transaction(async (c) => {
    await c.run(
      `INSERT INTO events (org, environment, message_id, event_type, event_name, client_id, email, received_at, event_time, visible_at, properties, raw, log_seq)
       SELECT $1, 'production', 'm-' || i, 'track', 'custom_booking', 'c-' || (i % 97), 'guest.' || (i % 300) || '+tag@Example.com',
              now(), now(), now(), '{"n":1}', '{"payload":"' || md5(i::VARCHAR) || repeat('x', i % 120) || '"}', i + 1
       FROM range($2, $3) t(i)`,
      [slug, from, from + count],
    );
    await c.run("INSERT OR REPLACE INTO log_cursor VALUES ('compactor', $1, now())", [from + count]);
  });
}

/** The victim's files, with TOTAL events (the last IN_WAL only in its WAL), and where its events' rows live. */
async function makeFixture(root: string): Promise<{ dir: string; eventBlocks: number[]; blockSize: number }> {
  const live = join(root, 'live');
  const pool = new OrgDatabases(live, limits);
  const lease = await pool.lease(VICTIM);
  await commitEvents(lease.db, VICTIM, 0, CHECKPOINTED);
  // Folded as compaction folds them (every few seconds), so opening the database does not read them all.
  await lease.db.transaction(async (c) => {
    await foldContactActivity(c);
    await foldEventTypes(c);
  });
  await lease.db.run('CHECKPOINT');
  const blocks = await lease.db.all<{ block_id: bigint }>("SELECT DISTINCT block_id FROM pragma_storage_info('events') WHERE block_id >= 0 ORDER BY 1");
  const [{ block_size }] = (await lease.db.all<{ block_size: bigint }>('SELECT block_size FROM pragma_database_size()')) as [{ block_size: bigint }];
  await commitEvents(lease.db, VICTIM, CHECKPOINTED, IN_WAL);
  // Copied while open, as a kill -9 would leave them: the file as of the checkpoint, the rest in the WAL.
  const dir = join(root, 'fixture');
  mkdirSync(dir);
  for (const file of readdirSync(live)) cpSync(join(live, file), join(dir, file));
  lease.release();
  await pool.close();
  return { dir, eventBlocks: blocks.map((b) => Number(b.block_id)), blockSize: Number(block_size) };
}

type Kind = 'cut' | 'garbage' | 'garbage-in-events' | 'wal-garbage' | 'wal-cut';
interface Damage {
  kind: Kind;
  when: 'start' | 'run';
  /** Where, as a fraction of the file. */
  at: number;
  length: number;
  /** Of the random bytes written (a failing case is replayed with the same ones). */
  seed: number;
  repair: 'restore' | 'move-aside';
}

/** DuckDB's file layout: three 4 KiB headers, then blocks. */
const HEADER_BYTES = 3 * 4096;

function damage(dir: string, d: Damage, fixture: { eventBlocks: number[]; blockSize: number }): void {
  const file = orgDatabaseFile(dir, VICTIM);
  const target = d.kind.startsWith('wal') ? `${file}.wal` : file;
  const size = statSync(target).size;
  const offset = Math.min(size - 1, Math.floor(d.at * size));
  const garble = (at: number, length: number) => {
    const fd = openSync(target, 'r+');
    writeSync(fd, Buffer.from(fc.sample(fc.uint8Array({ minLength: length, maxLength: length }), { numRuns: 1, seed: d.seed + at })[0]!), 0, length, at);
    closeSync(fd);
  };
  switch (d.kind) {
    case 'cut':
    case 'wal-cut':
      truncateSync(target, offset);
      return;
    case 'garbage':
    case 'wal-garbage':
      garble(offset, Math.min(d.length, size - offset));
      return;
    case 'garbage-in-events':
      // The first bytes of each block of its events table (its checksum covers the whole block).
      for (const block of fixture.eventBlocks) garble(HEADER_BYTES + block * fixture.blockSize, Math.min(d.length, 4096));
      return;
  }
}

type Read = { ok: true; count: number; cursor: number | undefined } | { ok: false; error: unknown };

async function read(pool: OrgDatabases, slug: string): Promise<Read> {
  try {
    const [row] = await pool.use(slug, (db) => db.all<{ n: number; bytes: bigint }>('SELECT count(*)::INTEGER AS n, sum(length(raw)) AS bytes FROM events'));
    const cursor = await pool.use(slug, (db) => db.all<{ seq: bigint }>("SELECT seq FROM log_cursor WHERE name = 'compactor'"));
    return { ok: true, count: row!.n, cursor: cursor[0] === undefined ? undefined : Number(cursor[0].seq) };
  } catch (error) {
    return { ok: false, error };
  }
}

/** Its rows and its log position agree, and hold all its events or all but the WAL's (DuckDB drops a WAL whole). */
function whole(seen: { count: number; cursor: number | undefined }): boolean {
  return seen.count === seen.cursor && (seen.count === TOTAL || seen.count === CHECKPOINTED);
}

async function bystanderWorks(pool: OrgDatabases, round: number): Promise<boolean> {
  const lease = await pool.lease(BYSTANDER);
  try {
    await commitEvents(lease.db, BYSTANDER, round * 10, 10);
  } finally {
    lease.release();
  }
  const seen = await read(pool, BYSTANDER);
  return seen.ok && seen.count === (round + 1) * 10 && seen.cursor === (round + 1) * 10;
}

async function until(check: () => boolean, what: string): Promise<void> {
  await waitFor(check, { timeoutMs: 30_000, what });
}

t.test('damage of any kind, at start or at run time, stays with its org', { timeout: scaled(240_000) }, async (t) => {
  const root = t.testdir();
  const fixture = await makeFixture(root);
  const problems: string[] = [];
  const check = (ok: boolean, what: string) => void (ok || problems.push(what));

  const damageArb: fc.Arbitrary<Damage> = fc
    .record({
      kind: fc.constantFrom<Kind>('cut', 'garbage', 'garbage-in-events', 'wal-garbage', 'wal-cut'),
      when: fc.constantFrom<'start' | 'run'>('start', 'run'),
      // Skewed to both ends: the header and the last blocks hold the database's own metadata.
      at: fc.oneof(fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), fc.double({ min: 0, max: 0.02, noNaN: true }), fc.double({ min: 0.97, max: 1, noNaN: true, maxExcluded: true })),
      length: fc.oneof(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 4096, max: 65_536 })),
      seed: fc.integer(),
      repair: fc.constantFrom<'restore' | 'move-aside'>('restore', 'move-aside'),
    })
    // The WAL is read only when the database opens: damage to it while open is found at the next start.
    .map((d) => (d.kind.startsWith('wal') ? { ...d, when: 'start' as const } : d));

  /** How each case came out, by kind and time: the comment shows the property was not met vacuously. */
  const outcomes = new Map<string, number>();
  const note = (d: Damage, outcome: string) => outcomes.set(`${d.kind}@${d.when} ${outcome}`, (outcomes.get(`${d.kind}@${d.when} ${outcome}`) ?? 0) + 1);
  await fc.assert(
    fc.asyncProperty(damageArb, async (d) => {
      const label = JSON.stringify(d);
      const dir = mkdtempSync(join(root, 'case-'));
      for (const file of readdirSync(fixture.dir)) cpSync(join(fixture.dir, file), join(dir, file));
      let pool = new OrgDatabases(dir, limits);
      let round = 0;
      const other = async (what: string) => check(await bystanderWorks(pool, round++), `${label}: the other org reads and writes ${what}`);
      try {
        await other('before');
        // Open and in use, its events not read yet: the statement after the damage reads them from the file.
        if (d.when === 'run') check((await pool.use(VICTIM, (db) => db.all('SELECT seq FROM log_cursor'))).length === 1, `${label}: the victim works before its damage`);
        damage(dir, d, fixture);
        let seen = await read(pool, VICTIM);
        await other('beside the damaged one');
        if (seen.ok && d.when === 'run') {
          check(whole(seen), `${label}: answers over a damaged file are whole: ${JSON.stringify(seen)}`);
          // Damage the instance had no reason to read yet (its blocks in memory): the file is read again
          // once the instance is closed (idle, a restart) and the org used again.
          await pool.close();
          pool = new OrgDatabases(dir, limits);
          seen = await read(pool, VICTIM);
          await other('after a restart beside the damaged one');
        }
        note(d, seen.ok ? 'unseen' : 'unavailable');
        if (seen.ok) {
          // Nothing read the bad part, or DuckDB dropped the WAL whole: its rows and position together.
          check(whole(seen), `${label}: answers over a damaged file are whole: ${JSON.stringify(seen)}`);
          check(d.kind !== 'garbage-in-events', `${label}: a statement reading its damaged events finds it`);
          return;
        }
        const { error } = seen;
        check(error instanceof OrgUnavailable && error.slug === VICTIM && error.message.includes(`org "${VICTIM}"`), `${label}: OrgUnavailable naming the org, not ${String(error)}`);
        check(typeof pool.unavailable()[VICTIM] === 'string' && !pool.unavailable()[VICTIM]!.includes(dir), `${label}: listed as unavailable, without the directory: ${JSON.stringify(pool.unavailable())}`);
        // Its instance closes; its files unchanged, it stays unavailable, past the (zero) pause too.
        await until(() => pool.openCount === 1, 'the damaged instance closed');
        for (let i = 0; i < 3; i++) {
          const again = await read(pool, VICTIM);
          check(!again.ok && again.error instanceof OrgUnavailable, `${label}: still unavailable while its files are unchanged (${i})`);
        }
        await other('while the damaged one is unavailable');

        const file = orgDatabaseFile(dir, VICTIM);
        rmSync(file, { recursive: true, force: true });
        rmSync(`${file}.wal`, { force: true });
        if (d.repair === 'restore') for (const name of readdirSync(fixture.dir)) if (name.startsWith(VICTIM)) cpSync(join(fixture.dir, name), join(dir, name));
        const repaired = await read(pool, VICTIM);
        const expected = d.repair === 'restore' ? { ok: true, count: TOTAL, cursor: TOTAL } : { ok: true, count: 0, cursor: undefined };
        check(JSON.stringify(repaired) === JSON.stringify(expected), `${label}: after ${d.repair}: ${repaired.ok ? JSON.stringify(repaired) : String(repaired.error)}`);
        check(pool.unavailable()[VICTIM] === undefined, `${label}: no longer listed once repaired`);
      } finally {
        await pool.close();
        rmSync(dir, { recursive: true, force: true });
      }
    }),
    {
      numRuns: 24,
      examples: [
        // The finding: 16 KB of random bytes in the middle of the file, found at start.
        [{ kind: 'garbage', when: 'start', at: 0.5, length: 16_384, seed: 1, repair: 'restore' }],
        // Found at run time by the next statement that reads a bad block.
        [{ kind: 'garbage-in-events', when: 'run', at: 0, length: 16, seed: 1, repair: 'move-aside' }],
        [{ kind: 'garbage', when: 'start', at: 0, length: 4096, seed: 1, repair: 'move-aside' }],
        [{ kind: 'garbage', when: 'start', at: 0.999, length: 16_384, seed: 1, repair: 'restore' }],
        [{ kind: 'wal-garbage', when: 'start', at: 0.5, length: 16, seed: 1, repair: 'restore' }],
        [{ kind: 'wal-cut', when: 'start', at: 0.5, length: 1, seed: 1, repair: 'restore' }],
        [{ kind: 'cut', when: 'run', at: 0.3, length: 1, seed: 1, repair: 'restore' }],
      ],
    },
  );
  t.comment([...outcomes].sort().map(([what, n]) => `${what}: ${n}`).join(', '));
  t.same(problems, [], 'every damage stayed with its org');
});

t.test("a tenant's SQL cannot pass its own error off as damage", async (t) => {
  const pool = new OrgDatabases(t.testdir(), limits);
  t.teardown(() => pool.close());
  const forged = [
    'IO Error: Corrupt database file: computed checksum 1 does not match stored checksum 2 in block at location 4096',
    'FATAL Error: Failed: database has been invalidated because of a previous fatal error.',
    '\nIO Error: Could not read enough bytes',
    'x\nFATAL Error: checksum',
  ];
  for (const text of forged) {
    const outcome = await pool.use(VICTIM, (db) => db.untrusted(5_000, (c) => c.all('SELECT error($1)', [text]))).then(
      () => 'answered',
      (error: unknown) => error,
    );
    t.ok(outcome instanceof Error && !(outcome instanceof OrgUnavailable), `refused as its own error, not as damage: ${JSON.stringify(text)} → ${String(outcome)}`);
    t.same(pool.unavailable(), {}, 'the org is not marked unavailable');
  }
  t.same(await pool.use(VICTIM, (db) => db.all<{ n: number }>('SELECT 1 AS n')), [{ n: 1 }], 'and its database still answers');
});
