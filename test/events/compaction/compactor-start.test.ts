/**
 * The compactor's start does not wait for the orgs' state (a day of message ids among it): the service
 * listens while it loads, and compaction begins once it has. A load that fails is retried. Real embedded
 * log, real DuckDB files; the org list is held back by a gate.
 */
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import t, { type Test } from 'tap';
import { testCompactor } from '../../helpers/test-compactor.js';
import { EmbeddedLog } from '../../../src/events/log/embedded-log.js';
import { encodeRecord } from '../../../src/events/log/record-codec.js';
import type { LogEntry } from '../../../src/events/log/types.js';
import { OrgDatabases } from '../../../src/storage/org-databases.js';
import { LocalOrgStorage } from '../../../src/storage/org-storage.js';

/** An event of `acme`; without an e-mail it waits for its identity (pending_identity). */
function entry(n: number | string, receivedAt = Date.now(), email = true): LogEntry {
  const traits = email ? { email: `u${n}@example.com` } : {};
  const body = { clientId: `c-${n}`, type: 'track', event: 'custom', messageId: `m-${n}`, traits, properties: { eventName: 'x' } };
  return { kind: 'event', org: 'acme', environment: 'production', messageId: `m-${n}`, receivedAt, body: JSON.stringify(body), code: null, errors: null, facts: null };
}

async function setUp(t: Test, slugs: () => Promise<string[]>, dir = t.testdir(), records = 10) {
  const log = await EmbeddedLog.open(join(dir, 'log'));
  const pool = new OrgDatabases(join(dir, 'orgs'), { maxOpen: 4, memoryLimit: '256MB', threads: 1, idleCloseMs: 60_000 });
  const orgs = new LocalOrgStorage(pool);
  const errors: string[] = [];
  const compactor = testCompactor(join(dir, 'orgs'), {
    orgs: { org: (slug) => orgs.org(slug), slugs, isDropped: (slug) => orgs.isDropped(slug) },
    log,
    logger: { error: (_details, message) => errors.push(message) },
  });
  let closed: Promise<void> | undefined;
  const close = () => (closed ??= (async () => {
    await compactor.stop();
    await log.close();
    await pool.close();
  })());
  t.teardown(close);
  for (let r = 1; r <= records; r++) await log.write(`record-${r}`, encodeRecord([entry(r)]));
  const count = async (table: string) => Number((await orgs.org('acme').all<{ n: bigint }>(`SELECT count(*) AS n FROM ${table}`))[0]!.n);
  return { compactor, errors, log, close, rows: () => count('events'), pending: () => count('pending_identity') };
}

/** `promise`'s outcome, or 'late' after `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | 'late'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

t.test('start resolves while the state loads; compaction follows once it has', async (t) => {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let asked = 0;
  const { compactor, rows } = await setUp(t, async () => {
    asked++;
    await gate;
    return ['acme'];
  });
  t.not(await within(compactor.start(), 5_000), 'late', 'start did not wait for the org list');
  for (let waited = 0; asked === 0 && waited < 5_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
  t.equal(asked, 1, 'the state is loading');
  t.equal(await within(compactor.whenCompacted(1), 300), 'late', 'nothing is compacted before the state is loaded');
  t.equal(compactor.compactedSeq, 0);
  open();
  t.not(await within(compactor.whenCompacted(10), 20_000), 'late', 'compacted to the head once loaded');
  t.equal(await rows(), 10);
});

t.test('a state that fails to load is loaded again, and nothing is compacted without it', async (t) => {
  let failures = 2;
  const { compactor, errors, rows } = await setUp(t, async () => {
    if (failures-- > 0) throw new Error('the org list could not be read');
    return ['acme'];
  });
  await compactor.start();
  t.not(await within(compactor.whenCompacted(10), 20_000), 'late', 'compacted to the head after the failed loads');
  t.equal(await rows(), 10);
  t.match(errors, ['compaction batch failed; replaying from the saved positions', 'reloading compactor state failed']);
});

t.test('at start the window is rebuilt from every hour of the last day, stored and pending ids alike', async (t) => {
  const dir = t.testdir();
  const now = Date.now();
  const HOUR = 3_600_000;
  // Ids received over the last 30 h, one a few minutes ahead of this clock, some waiting for their identity.
  const ages = [30, 25, 24.01, 23.9, 20, 12.5, 6, 1, 0.5, 0.01, -0.1].map((h) => h * HOUR);
  const first = await setUp(t, async () => ['acme'], dir, 0);
  let seq = 0;
  for (const age of ages) {
    await first.log.write(`old-${++seq}`, encodeRecord([entry(`s${age}`, now - age), entry(`p${age}`, now - age, false)]));
  }
  await first.compactor.start();
  await first.compactor.whenCompacted(seq);
  t.equal(await first.rows(), ages.length);
  t.equal(await first.pending(), ages.length);
  await first.close();

  // A new compactor (a restart) over the same databases, and every id sent again now.
  const second = await setUp(t, async () => ['acme'], dir, 0);
  for (const age of ages) await second.log.write(`again-${++seq}`, encodeRecord([entry(`s${age}`, now), entry(`p${age}`, now, false)]));
  await second.compactor.start();
  await second.compactor.whenCompacted(seq);
  const storedAgain = ages.filter((age) => age >= 24 * HOUR).length;
  t.equal(await second.rows(), ages.length + storedAgain, 'only ids received 24 h or more before are stored again');
  t.equal(await second.pending(), ages.length + storedAgain, 'and only those wait again');
});

t.test('while the state loads, a waiter is not told of the checkpoint an org is below', async (t) => {
  const dir = t.testdir();
  const first = await setUp(t, async () => ['acme'], dir);
  await first.compactor.start();
  await first.compactor.whenCompacted(10);
  await first.close();
  // The org's database restored from an older backup: it holds the first record only; the checkpoint says 10.
  const instance = await DuckDBInstance.create(join(dir, 'orgs', 'acme.duckdb'));
  const connection = await instance.connect();
  await connection.run("UPDATE log_cursor SET seq = 1 WHERE name = 'compactor'");
  connection.closeSync();
  instance.closeSync();

  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const second = await setUp(t, async () => (await gate, ['acme']), dir, 0);
  await second.compactor.start();
  t.equal(await within(second.compactor.whenCompacted(10), 500), 'late', 'not compacted to 10 while acme, at 1, loads');
  open();
  t.not(await within(second.compactor.whenCompacted(10), 20_000), 'late', 'then replayed to 10');
  t.equal(await second.rows(), 10, 'the replayed records are repeats');
});
