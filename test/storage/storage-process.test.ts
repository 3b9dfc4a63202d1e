/**
 * The Database interface across the process boundary (storage-client.ts ↔ storage-process.ts): parameters
 * and appended cells keep their DuckDB types, a failed transaction rolls back, a session holds the
 * connection, and DuckDB errors reach the caller with their message.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { listValue } from '@duckdb/node-api';
import t from 'tap';
import { microsParam, tsParam } from '../../src/db/database.js';
import { SINGLE_SHARD } from '../../src/core/shard.js';
import { rowsOf } from '../../src/db/sql.js';
import { StorageProcess } from '../../src/storage/storage-client.js';
import { waitFor } from '../helpers/deadline.js';
import { READ_PAGE_ROWS } from '../../src/storage/storage-protocol.js';
import { ProcessDatabase, type StorageCalls } from '../../src/storage/process-database.js';
import { storagePid } from '../helpers/storage-pid.js';
import { startTestApp, STORAGE_PROCESS } from '../helpers/app.js';
import { SERVICE_NODE_FLAGS } from '../../src/core/node-flags.js';

/** The storage process, and the database of one org, 'acme', through it. */
async function startWorker(
  t: { testdir(): string; teardown(fn: () => unknown): void },
  seen: { errors: string[]; restarts: Array<[string, boolean]> } = { errors: [], restarts: [] },
  process: { nice?: number } = {},
) {
  const dir = t.testdir();
  const worker = await StorageProcess.start({
    data: {
      orgsDir: join(dir, 'orgs'),
      limits: { maxOpen: 4, memoryLimit: '256MB', threads: 1, idleCloseMs: 60_000 },
      checkpointFile: join(dir, 'orgs', 'log.checkpoint'),
      shard: SINGLE_SHARD,
      threadPoolSize: 4,
    },
    process,
    events: {
      onCompacted: () => {},
      onMetric: () => {},
      onError: (_details, message) => void seen.errors.push(message),
      onRestarted: (reason, queryKilled) => void seen.restarts.push([reason, queryKilled]),
    },
  });
  t.teardown(() => worker.close());
  return { worker, db: worker.org('acme') };
}

t.test('parameters and appended cells keep their types across the process boundary', async (t) => {
  const { db } = await startWorker(t);
  await db.run('CREATE TABLE things (name VARCHAR, n INTEGER, big BIGINT, seen_at TIMESTAMPTZ, note VARCHAR)');
  await db.transaction((c) =>
    c.appendRows({ table: 'things' }, [{ name: 'a', n: 1 }, { name: 'b', n: 2 }], (a, row) => {
      a.appendVarchar(row.name);
      a.appendInteger(row.n);
      a.appendBigInt(9007199254740993n);
      a.appendTimestampTZ(tsParam(Date.UTC(2026, 0, 2)));
      a.appendNull();
    }),
  );
  const rows = await db.all<{ name: string; n: number; big: bigint; seen_at: Date; note: null }>(
    'SELECT * FROM things WHERE name IN (SELECT unnest($1::VARCHAR[])) AND seen_at >= $2 ORDER BY name',
    [listValue(['a', 'b', 'c']), tsParam(Date.UTC(2026, 0, 1))],
  );
  t.same(rows, [
    { name: 'a', n: 1, big: 9007199254740993n, seen_at: new Date(Date.UTC(2026, 0, 2)), note: null },
    { name: 'b', n: 2, big: 9007199254740993n, seen_at: new Date(Date.UTC(2026, 0, 2)), note: null },
  ]);
  const named = await db.all<{ v: string }>('SELECT $word AS v', { word: 'named' });
  t.same(named, [{ v: 'named' }], 'named parameters too');

  // An appended TIMESTAMPTZ is the same instant to the microsecond (the appender takes it as a plain
  // timestamp: database.ts), in summer time too, and compares with one given as a parameter.
  const instant = 1_782_907_200_123_456n; // 2026-07-01T12:00:00.123456Z
  await db.run('CREATE TABLE instants (seen TIMESTAMPTZ)');
  await db.transaction((c) => c.appendRows({ table: 'instants' }, [instant], (a, micros) => a.appendTimestampTZ(microsParam(micros))));
  const [read] = await db.all<{ us: bigint; same: boolean; text: string }>(
    "SELECT epoch_us(seen) AS us, seen = $1 AS same, strftime(seen AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%f') AS text FROM instants",
    [microsParam(instant)],
  );
  t.same(read, { us: instant, same: true, text: '2026-07-01T12:00:00.123456' });
});

t.test('a failing transaction rolls back and its error reaches the caller', async (t) => {
  const { db } = await startWorker(t);
  await db.run('CREATE TABLE kv (k VARCHAR PRIMARY KEY)');
  const error = await db
    .transaction(async (c) => {
      await c.run("INSERT INTO kv VALUES ('kept-only-if-committed')");
      await c.run("INSERT INTO kv VALUES ('dup'), ('dup')");
    })
    .catch((e: unknown) => e as Error);
  t.match(String((error as Error).message), /constraint|duplicate/i, 'the DuckDB message');
  t.same(await db.all('SELECT * FROM kv'), [], 'nothing of the transaction stayed');
});

t.test('a transaction is two calls around its work: BEGIN with its session, COMMIT or ROLLBACK with its release', async (t) => {
  const seen = { errors: [] as string[], restarts: [] as Array<[string, boolean]> };
  const { worker } = await startWorker(t, seen);
  const ops: string[] = [];
  const counted: StorageCalls = {
    get generation() {
      return worker.generation;
    },
    gate: worker.gate,
    call: (call, generation) => (ops.push(call.op), worker.call(call, generation)),
    callOn: (call) => (ops.push(call.op), worker.callOn(call)),
    up: () => worker.up(),
    send: (message, generation) => worker.send(message, generation),
    kill: (reason, generation, forOrg) => worker.kill(reason, generation, forOrg),
  };
  const db = new ProcessDatabase(counted, 'acme');
  await db.run('CREATE TABLE kv (k VARCHAR PRIMARY KEY)');
  const keys = async () => (await db.all<{ k: string }>('SELECT k FROM kv ORDER BY k')).map((r) => r.k);

  ops.length = 0;
  t.equal(await db.transaction(async (c) => (await c.run("INSERT INTO kv VALUES ('a'), ('b')"), 'done')), 'done', "the work's result");
  t.same(ops, ['open', 'run', 'release'], 'open (with BEGIN), the statement, release (with COMMIT)');
  t.same(await keys(), ['a', 'b'], 'committed');

  // Work that throws in JavaScript after writing: rolled back with the release, the connection usable after.
  ops.length = 0;
  const thrown = await db.transaction(async (c) => (await c.run("INSERT INTO kv VALUES ('c')"), Promise.reject(new Error('the caller changed its mind')))).catch((e: unknown) => e as Error);
  t.equal(thrown.message, 'the caller changed its mind');
  t.same(ops, ['open', 'run', 'release'], 'ROLLBACK went with the release');
  t.same(await keys(), ['a', 'b'], 'nothing of it kept');

  // A statement that fails inside: its error, nothing kept, and the next transaction runs on the same connection.
  const failed = (await db.transaction((c) => c.run("INSERT INTO kv VALUES ('d'), ('a')")).catch((e: unknown) => e)) as Error;
  t.match(failed.message, /constraint|duplicate/i);
  await db.transaction((c) => c.run("INSERT INTO kv VALUES ('e')"));
  t.same(await keys(), ['a', 'b', 'e']);

  // The process ends before COMMIT: the commit throws, and the new process holds nothing of it.
  const ended = await db
    .transaction(async (c) => {
      await c.run("INSERT INTO kv VALUES ('lost')");
      worker.kill('a test', worker.generation);
      await waitFor(() => seen.restarts.length === 1, { timeoutMs: 60_000, what: 'a new storage process' });
    })
    .catch((e: unknown) => e as Error);
  t.ok(ended instanceof Error, `the commit failed: ${String(ended)}`);
  t.same(await keys(), ['a', 'b', 'e'], 'not committed');
});

t.test('a session holds the connection: other statements wait for its release', async (t) => {
  const { db } = await startWorker(t);
  await db.run('CREATE TABLE steps (n INTEGER)');
  const order: string[] = [];
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const session = db.exclusive(async (c) => {
    await c.run('INSERT INTO steps VALUES (1)');
    order.push('session wrote');
    await held;
    t.same(await c.columnNames('SELECT n, n + 1 AS next FROM steps'), ['n', 'next'], 'columns from prepare');
    order.push('session done');
  });
  const outside = db.all('SELECT count(*) AS n FROM steps').then(() => order.push('outside ran'));
  await new Promise((r) => setTimeout(r, 100));
  order.push('released');
  release();
  await Promise.all([session, outside]);
  t.same(order, ['session wrote', 'released', 'session done', 'outside ran']);
});

t.test('a read crosses in pages of columns and comes back whole: names, values, the cut', async (t) => {
  const { db } = await startWorker(t);
  // More rows than three pages (READ_PAGE_ROWS) and a page's worth more than asked: the rows are the
  // same as in the process that reads them, in order, with a duplicate name kept apart.
  const sql = `SELECT range AS i, 'r' || range AS s, range % 2 = 0 AS even, NULL AS nothing, 7 AS i FROM range(${READ_PAGE_ROWS * 3 + 500})`;
  const page = await db.untrusted(5000, (c) => c.read(sql, [], READ_PAGE_ROWS * 3 + 10));
  t.same(page.names, ['i', 's', 'even', 'nothing', 'i:1']);
  t.equal(page.truncated, true);
  const rows = rowsOf<{ i: bigint; s: string; even: boolean; nothing: null; 'i:1': number }>(page);
  t.equal(rows.length, READ_PAGE_ROWS * 3 + 10);
  t.same(rows[0], { i: 0n, s: 'r0', even: true, nothing: null, 'i:1': 7 });
  t.same(rows[READ_PAGE_ROWS], { i: BigInt(READ_PAGE_ROWS), s: `r${READ_PAGE_ROWS}`, even: true, nothing: null, 'i:1': 7 });
  t.ok(rows.every((row, n) => row.i === BigInt(n)), 'every row in order, none lost or repeated between pages');
  const whole = await db.untrusted(5000, (c) => c.read('SELECT 1 AS a FROM range(3)', [], 3));
  t.same([rowsOf(whole), whole.truncated], [[{ a: 1 }, { a: 1 }, { a: 1 }], false]);
  const none = await db.untrusted(5000, (c) => c.read('SELECT 1 AS a WHERE false', [], 3));
  t.same([none.names, rowsOf(none), none.truncated], [['a'], [], false]);
});

t.test("a kill to stop an org's query is not an error line; any other end is", async (t) => {
  const seen = { errors: [] as string[], restarts: [] as Array<[string, boolean]> };
  const { worker, db } = await startWorker(t, seen);
  const restarted = async (count: number) => {
    await waitFor(() => seen.restarts.length >= count, { timeoutMs: 60_000, what: 'a new storage process' });
    await db.all('SELECT 1');
  };
  worker.kill('org "acme"\'s query ran past its deadline and could not be interrupted', worker.generation, 'acme');
  await restarted(1);
  t.same(seen.errors, [], 'the remedy for a runaway query: no error line');
  t.match(seen.restarts[0], [/acme.*could not be interrupted/, true], 'the takeover says why (logged at warn)');
  worker.kill('an operator', worker.generation);
  await restarted(2);
  t.same(seen.errors, ['storage process ended; starting a new one'], 'another end is still an error');
});

t.test('the process loads at full priority and takes its niceness once ready, a new one after a kill too', async (t) => {
  const seen = { errors: [] as string[], restarts: [] as Array<[string, boolean]> };
  const { worker, db } = await startWorker(t, seen, { nice: 10 });
  /** The niceness of each thread of the storage process (field 19 of /proc/<pid>/task/<tid>/stat). */
  const nices = () => {
    const pid = storagePid(process.pid)!;
    return readdirSync(`/proc/${pid}/task`).map((tid) => {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
    });
  };
  await db.all('SELECT 1'); // DuckDB's threads start with the org's database
  t.ok(nices().length > 4 && nices().every((n) => n === 10), 'every thread at nice 10, DuckDB\'s included');
  worker.kill('a test', worker.generation);
  await waitFor(() => seen.restarts.length === 1, { timeoutMs: 60_000, what: 'a new storage process' });
  await db.all('SELECT 1');
  t.ok(nices().every((n) => n === 10), 'the new process too');
});

t.test("an untrusted query's time starts once its session is open: a stall while opening it costs it nothing", async (t) => {
  const { worker, db } = await startWorker(t);
  await db.run('CREATE TABLE numbers AS SELECT range AS n FROM range(1000)');
  const pid = storagePid(process.pid)!;
  t.ok(pid, 'the storage process');
  const timeoutMs = 1000;
  // The process stalls (SIGSTOP) for longer than the deadline while it opens the session, as opening an
  // org's database after a restart can on a loaded machine: the caller waited for the process, not for
  // its query, which then has its whole time.
  const stalling: StorageCalls = Object.assign(Object.create(worker) as StorageCalls, {
    callOn: <T>(call: Parameters<StorageCalls['callOn']>[0]) => {
      if (call.op === 'open') {
        process.kill(pid, 'SIGSTOP');
        setTimeout(() => process.kill(pid, 'SIGCONT'), timeoutMs * 2);
      }
      return worker.callOn<T>(call);
    },
  });
  const started = performance.now();
  const rows = await new ProcessDatabase(stalling, 'acme').untrusted(timeoutMs, (sql) => sql.all<{ total: bigint }>('SELECT sum(n) AS total FROM numbers'));
  t.same(rows, [{ total: 499500n }], 'the query ran and answered');
  t.ok(performance.now() - started >= timeoutMs * 2, 'after the stall');
  t.equal(storagePid(process.pid), pid, 'the process was not killed');
  t.equal(worker.gate.pausedFor('acme'), 0, 'the org is not paused');
});

t.test("the service starts its storage process with the service's V8 flags (node-flags.ts)", async (t) => {
  await startTestApp(t, { config: STORAGE_PROCESS });
  const pid = await waitFor(() => storagePid(process.pid), { timeoutMs: 60_000, what: 'the storage process' });
  const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  for (const flag of SERVICE_NODE_FLAGS) t.ok(args.includes(flag), flag);
});
