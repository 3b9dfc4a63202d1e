/**
 * The compactor: tails the event log and writes each org's events, pending identities and quarantine
 * rows into that org's own database (plan-batch.ts → write-batch.ts). Each org's database holds its own
 * log position, written in the same transaction as its rows, so every org is exactly-once by itself: a
 * crash between two orgs' commits replays the batch, and each org skips the records it already holds.
 * Reading restarts from the checkpoint (storage/checkpoint.ts), the position every org has reached.
 *
 * An org whose commit fails (its database damaged or unreadable) is held: the other orgs go on, its
 * entries are left in the log, and the checkpoint stays at or below where it stopped, so neither a
 * restart nor the log's retention loses them. It is tried again after a pause (1 s, doubling to 30 s);
 * once it commits, reading starts again from the checkpoint and it catches up, the others skipping what
 * they hold.
 */
import type { Context } from '../../core/context.js';
import type { LogBackend, LogReader } from '../log/types.js';
import { DEDUPE_WINDOW_MS, DedupeWindow, dedupeKey } from './dedupe-window.js';
import { foldContactActivity } from './fold-contact-activity.js';
import { foldEventTypes } from './fold-event-types.js';
import { IdentityMap, clientKey } from './identity-map.js';
import { type PlanState, type SeqEntry, entriesByOrg, planEntries } from './plan-batch.js';
import { SeqWaiters } from './seq-waiters.js';
import { CURSOR_NAME, writeBatch } from './write-batch.js';
import { type KeptOut, loadTombstones } from './tombstones.js';
import type { Database } from '../../db/sql.js';
import { OrgUnavailable } from '../../core/unavailable.js';
import { type Shard, ownsOrg } from '../../core/shard.js';

/**
 * Events per transaction: large enough for appender throughput, small enough that one commit stays in
 * the tens of milliseconds. A record holds one group commit (1 to ~1,000 events), so the number of
 * records read is adapted to the recent events-per-record.
 */
const TARGET_EVENTS_PER_BATCH = 5000;
const MAX_RECORDS_PER_BATCH = 500;
/**
 * Under steady traffic a batch starts at least this long after the previous one, so each carries more
 * events: every commit costs ~6 ms of CPU besides its rows (BEGIN, COMMIT with the WAL sync, the
 * cursor, the profile refresh after it). Measured on 2 cores at the collect maximum: 0 ms → 40 commits/s,
 * 5.2–6.1k collect req/s; 100 ms → 8 commits/s, 6.4–7.1k req/s. An event arriving after a quiet
 * moment is committed at once, so an idle service's freshness does not change.
 */
const MIN_COMMIT_INTERVAL_MS = 100;
/** How long a read waits for new records before the loop looks at expired pending identities. */
const IDLE_WAIT_MS = 250;
const RETRY_AFTER_FAILURE_MS = 1000;
/** A held org is tried again after this long, doubling each time it fails again, up to the maximum. */
const HELD_RETRY_MS = 1000;
const HELD_RETRY_MAX_MS = 30_000;
/** Expired pending identities are swept at most this often (a pending row expires within this of its 7 days). */
const SWEEP_INTERVAL_MS = 10_000;
/**
 * Newly visible events are folded into the per-contact aggregates at most this often, and at most
 * FOLD_SHARE of the time: each profile computation reads the unfolded events, so folding bounds that
 * read to seconds of traffic, while one fold serves many commits (a fold per commit would double the
 * cost of small commits) and a backlog being drained is not slowed by folds of many contacts.
 */
const FOLD_INTERVAL_MS = 5_000;
const FOLD_SHARE = 0.1;

/** What one commit tells the service, e.g. to refresh profiles (its own thread or the storage worker's). */
export interface CommitReport {
  /** Contacts whose production events were written: their profiles need a refresh. */
  touched: Array<{ org: string; email: string }>;
  /** Orgs that stored new events in this batch: their real-time flows run now (flow-runner.ts). */
  orgs: string[];
  /** More records were waiting when this batch was read: compaction is working through a backlog. */
  backlog: boolean;
}

/** The metrics the compactor moves; in the storage worker they are forwarded to the main thread's registry. */
export interface CompactorMetrics {
  compactionBatchSeconds: { observe(seconds: number): void };
  eventsQuarantined: { inc(labels: { code: string }): void };
  duplicatesDropped: { inc(count: number): void };
  eventsKeptOut: { inc(labels: { reason: KeptOut }, count: number): void };
  compactionLag: { set(records: number): void };
  compactionLagSeconds: { set(seconds: number): void };
}

/** What the service holds of compaction, in this thread (Compactor) or in the storage process (storage-client.ts). */
export interface Compaction {
  /** Highest log seq whose records are committed to DuckDB (by every org but those whose database is damaged). */
  readonly compactedSeq: number;
  /** Every org holds its records up to here, held orgs included: the log may drop records up to it. */
  readonly retainFromSeq: number;
  /** Resolves once every record up to `seq` is in DuckDB and its touched profiles were queued for refresh. */
  whenCompacted(seq: number): Promise<void>;
  start(): Promise<void>;
  /** Finishes the batch in progress, then stops (graceful shutdown). */
  stop(): Promise<void>;
  /**
   * The org's state (its tombstones among it) is read again from its database before its next batch is
   * planned: an erasure changed it. A batch planned before may still commit; whenCompacted tells when.
   */
  reload(org: string): Promise<void>;
}

export interface CompactorDeps {
  /** Each org's database. */
  orgs: { org(slug: string): Database; slugs(): Promise<string[]>; isDropped(slug: string): boolean };
  /** The position every org has reached, and the highest any org may hold (storage/checkpoint.ts). */
  checkpoint: { read(): number; write(seq: number): void; highWater(): number; raiseHighWater(seq: number): Promise<void> };
  log: Pick<LogBackend, 'openReader' | 'headSeq'>;
  /** The orgs this process compacts; other orgs' records are skipped (unread where the log keeps records per org). */
  shard: Shard;
  ctx: Context;
  metrics: CompactorMetrics;
  logger: { error(details: object, message: string): void };
  /** Runs after each batch, before waiters are told (e.g. queues the touched profiles for refresh). */
  afterCommit?: (report: CommitReport) => Promise<void>;
  /** Told the committed position (and retainFromSeq) whenever they may have moved (the storage process reports them). */
  onProgress?: (seq: number, retainFromSeq: number) => void;
}

/** What the compactor keeps of one org between batches, loaded from the org's database. */
/** An org whose commit failed: the checkpoint stays at or below `from` until it commits again. */
interface HeldOrg {
  /** Every record after this may be missing from its database (the checkpoint when it first failed). */
  from: number;
  /** Its database cannot be opened (OrgUnavailable), rather than a failure that may pass by itself. */
  damaged: boolean;
  retryAt: number;
  pauseMs: number;
}

interface OrgState {
  plan: PlanState;
  /** The log seq up to which the org's database holds its entries (its log_cursor). */
  cursor: number;
  lastVisibleAtMicros: bigint;
  nextSweepAt: number;
  nextFoldAt: number;
}

export class Compactor implements Compaction {
  private readonly orgStates = new Map<string, Promise<OrgState>>();
  private reader: LogReader | undefined;
  /** Every org but the held ones holds its entries up to here. */
  private cursor = 0;
  /** No org's database holds a position above this (durable before an org commits one). */
  private highWater = 0;
  /** performance.now() of the last read that returned records, and whether it filled its batch. */
  private lastBatchReadAt = 0;
  private behind = false;
  /** receivedAt of the newest event compacted (0 before the first), for the lag in seconds. */
  private newestCompactedAt = 0;
  /** Moving average of entries per log record, for sizing reads. Undefined until the first read, which
   *  takes one record: after a restart the backlog may hold large batch records. */
  private entriesPerRecord: number | undefined;
  private stopping = false;
  private running: Promise<void> | undefined;
  private readonly waiters = new SeqWaiters();
  private readonly held = new Map<string, HeldOrg>();
  /** What the checkpoint file says (written by this compactor only). */
  private checkpointSeq = 0;

  constructor(private readonly deps: CompactorDeps) {}

  /** Held orgs whose database is damaged do not hold this back (they may stay so for days); others do. */
  get compactedSeq(): number {
    return Math.min(this.cursor, ...[...this.held.values()].filter((h) => !h.damaged).map((h) => h.from));
  }

  get retainFromSeq(): number {
    return this.checkpointSeq;
  }

  /** Also after `stop`: reading starts again from the checkpoint. */
  async start(): Promise<void> {
    this.stopping = false;
    await this.loadState();
    this.running = this.loop();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.running;
    await this.reader?.close();
    this.reader = undefined;
  }

  whenCompacted(seq: number): Promise<void> {
    return this.waiters.wait(seq, this.compactedSeq);
  }

  async reload(org: string): Promise<void> {
    this.orgStates.delete(org);
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      try {
        this.reader ??= await this.deps.log.openReader(this.cursor);
        await this.paceCommits();
        const max = this.recordsPerBatch();
        const records = await this.reader.read(max, IDLE_WAIT_MS);
        this.behind = records.length >= max;
        if (records.length > 0) this.lastBatchReadAt = performance.now();
        await this.commit(records, this.reader.position);
      } catch (error) {
        // State in memory may be ahead of the databases now: rebuild it from what was committed and replay.
        this.deps.logger.error({ err: error }, 'compaction batch failed; replaying from the saved positions');
        await this.reader?.close().catch(() => undefined);
        this.reader = undefined;
        await new Promise((r) => setTimeout(r, RETRY_AFTER_FAILURE_MS));
        await this.loadState().catch((e) => this.deps.logger.error({ err: e }, 'reloading compactor state failed'));
        this.notifyWaiters();
      }
    }
  }

  /** `through`: the reader's position, past the last record when positions after it hold none. */
  private async commit(records: Awaited<ReturnType<LogReader['read']>>, through: number): Promise<void> {
    const now = this.deps.ctx.clock.now();
    const { shard } = this.deps;
    const owned = (org: string) => ownsOrg(shard, org);
    const byOrg = await entriesByOrg(records.filter((r) => r.org === undefined || owned(r.org)), owned);
    // A deleted org's events still in the log go nowhere: its database is gone for good.
    for (const org of byOrg.keys()) if (this.deps.orgs.isDropped(org)) byOrg.delete(org);
    if (records.length > 0) {
      const entries = [...byOrg.values()].reduce((sum, list) => sum + list.length, 0);
      const observed = entries / records.length;
      this.entriesPerRecord = this.entriesPerRecord === undefined ? observed : 0.7 * this.entriesPerRecord + 0.3 * observed;
    }
    const orgs = await this.orgsToWrite(byOrg, now);
    const lastSeq = Math.max(this.cursor, through);
    if (lastSeq === this.cursor && orgs.length === 0) return;
    if (lastSeq > this.highWater) {
      await this.deps.checkpoint.raiseHighWater(lastSeq);
      this.highWater = lastSeq;
    }
    const touched: CommitReport['touched'] = [];
    const written: string[] = [];
    const recovered: string[] = [];
    let replayFrom = Infinity;
    for (const org of orgs) {
      const held = this.held.get(org);
      try {
        if (!held) {
          const outcome = await this.commitOrg(org, byOrg.get(org) ?? [], lastSeq, now);
          touched.push(...outcome.touched);
          if (outcome.events > 0) written.push(org);
        }
        else if (performance.now() >= held.retryAt) {
          // Its database opens again; the records it missed are read again below, in order, before any newer one.
          replayFrom = Math.min(replayFrom, held.from, replayPoint((await this.stateOf(org)).cursor));
          recovered.push(org);
        }
      } catch (error) {
        this.hold(org, error);
      }
    }
    // Held orgs (and those recovering) lack records after their `from`: the checkpoint stays at or below it.
    const safe = Math.min(lastSeq, ...[...this.held.values()].map((h) => h.from));
    if (safe > this.checkpointSeq) {
      this.deps.checkpoint.write(safe);
      this.checkpointSeq = safe;
    }
    for (const org of recovered) this.held.delete(org);
    const advanced = lastSeq > this.cursor;
    this.cursor = lastSeq;
    if (touched.length > 0 || written.length > 0) await this.runAfterCommit({ touched, orgs: written, backlog: this.behind });
    for (const list of byOrg.values()) for (const { entry } of list) this.newestCompactedAt = Math.max(this.newestCompactedAt, entry.receivedAt);
    if (advanced) await this.updateLag(now);
    this.notifyWaiters();
    if (recovered.length > 0) await this.replayFrom(replayFrom);
  }

  /**
   * `org`'s commit failed: the others go on without it, and its entries wait in the log. Logged once
   * when it is first held; its retries are quiet until it commits.
   */
  private hold(org: string, error: unknown): void {
    const held = this.held.get(org);
    const pauseMs = held ? Math.min(HELD_RETRY_MAX_MS, held.pauseMs * 2) : HELD_RETRY_MS;
    if (!held) this.deps.logger.error({ err: error, org }, 'compacting this org failed; its events stay in the log and the other orgs go on');
    this.held.set(org, { from: held?.from ?? this.checkpointSeq, damaged: error instanceof OrgUnavailable, retryAt: performance.now() + pauseMs, pauseMs });
    this.orgStates.delete(org);
  }

  /** A held org opens again: read from where it stopped, so it gets the records it missed (the others skip them). */
  private async replayFrom(seq: number): Promise<void> {
    await this.reader?.close().catch(() => undefined);
    this.reader = undefined;
    this.cursor = Math.min(seq, this.checkpointSeq);
  }

  /**
   * Orgs with entries in this batch, orgs whose expired pending identities are due a sweep, and held
   * orgs due a retry (an empty commit tells whether their database opens again).
   */
  private async orgsToWrite(byOrg: Map<string, unknown>, now: number): Promise<string[]> {
    const orgs = new Set(byOrg.keys());
    for (const [org, loading] of this.orgStates) {
      if (this.deps.orgs.isDropped(org)) this.orgStates.delete(org);
      else if (sweepDue(await loading, now)) orgs.add(org);
    }
    for (const [org, held] of this.held) {
      if (this.deps.orgs.isDropped(org)) this.held.delete(org);
      else if (performance.now() >= held.retryAt) orgs.add(org);
    }
    return [...orgs];
  }

  /** One org's share of a batch, in one transaction of its database with its new position. */
  private async commitOrg(org: string, batch: readonly SeqEntry[], lastSeq: number, now: number): Promise<{ touched: CommitReport['touched']; events: number }> {
    const state = await this.stateOf(org);
    // Records the org's database already holds (a batch replayed after a crash or failure) are skipped.
    const entries = batch.filter((e) => e.seq > state.cursor);
    const sweepExpired = sweepDue(state, now);
    if (entries.length === 0 && !sweepExpired) return { touched: [], events: 0 };
    const plan = await planEntries(entries, state.plan);
    plan.lastSeq = entries.length > 0 ? lastSeq : state.cursor;
    if (sweepExpired) state.nextSweepAt = now + SWEEP_INTERVAL_MS;
    const started = process.hrtime.bigint();
    const db = this.deps.orgs.org(org);
    const outcome = await writeBatch(db, plan, now, state.lastVisibleAtMicros, sweepExpired);
    this.deps.metrics.compactionBatchSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
    state.lastVisibleAtMicros = outcome.visibleAtMicros;
    state.cursor = plan.lastSeq;
    for (const key of outcome.pendingResolved) decrementPending(state.plan, key);
    for (const link of outcome.aliasMappings) state.plan.identities.record(link);
    for (const q of outcome.quarantined) this.deps.metrics.eventsQuarantined.inc({ code: q.code });
    this.deps.metrics.duplicatesDropped.inc(plan.duplicates);
    for (const [reason, count] of Object.entries(outcome.keptOut)) if (count > 0) this.deps.metrics.eventsKeptOut.inc({ reason: reason as KeptOut }, count);
    state.plan.dedupe.prune(now);
    if (outcome.events > 0 && now >= state.nextFoldAt) await this.fold(db, state, now);
    return { touched: outcome.touched, events: outcome.events };
  }

  /** Under steady traffic, batches start MIN_COMMIT_INTERVAL_MS apart; a backlog is read at once. */
  private async paceCommits(): Promise<void> {
    if (this.behind) return;
    const wait = this.lastBatchReadAt + MIN_COMMIT_INTERVAL_MS - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }

  private async runAfterCommit(report: CommitReport): Promise<void> {
    try {
      await this.deps.afterCommit?.(report);
    } catch (error) {
      // The rows are committed; a failed refresh must not replay them. The next touch refreshes again.
      this.deps.logger.error({ err: error }, 'after-commit step failed');
    }
  }

  private async fold(db: Database, state: OrgState, now: number): Promise<void> {
    const started = performance.now();
    try {
      await db.transaction(async (c) => {
        await foldContactActivity(c);
        await foldEventTypes(c);
      });
      state.nextFoldAt = now + Math.max(FOLD_INTERVAL_MS, (performance.now() - started) / FOLD_SHARE);
    } catch (error) {
      state.nextFoldAt = now + FOLD_INTERVAL_MS;
      // The batch is committed and profiles stay exact without the fold; the next one catches up.
      this.deps.logger.error({ err: error }, 'folding contact activity and event types failed');
    }
  }

  /**
   * Records behind the log's head, and how far behind real time the databases are: 0 when caught up,
   * else the age of the newest event compacted (every event still waiting arrived after it, so the
   * oldest waiting one is at most that old). Best effort: the batch is committed whether or not the log
   * answers.
   */
  private async updateLag(now: number): Promise<void> {
    try {
      const records = Math.max(0, (await this.deps.log.headSeq()) - this.cursor);
      this.deps.metrics.compactionLag.set(records);
      this.deps.metrics.compactionLagSeconds.set(records > 0 && this.newestCompactedAt > 0 ? Math.max(0, now - this.newestCompactedAt) / 1000 : 0);
    } catch {
      // The log is unavailable; the reader reports that on its next read.
    }
  }

  private recordsPerBatch(): number {
    if (this.entriesPerRecord === undefined) return 1;
    return Math.max(1, Math.min(MAX_RECORDS_PER_BATCH, Math.round(TARGET_EVENTS_PER_BATCH / this.entriesPerRecord)));
  }

  private notifyWaiters(): void {
    this.deps.onProgress?.(this.compactedSeq, this.retainFromSeq);
    this.waiters.reached(this.compactedSeq);
  }

  /** The checkpoint, and the state of every org with a database (so expired pending rows are swept). */
  private async loadState(): Promise<void> {
    this.orgStates.clear();
    this.cursor = this.checkpointSeq = this.deps.checkpoint.read();
    this.highWater = this.deps.checkpoint.highWater();
    for (const org of await this.deps.orgs.slugs()) {
      // A database that does not open is held from the start; the others load. One restored from an
      // older backup holds less than the checkpoint: reading starts where it stopped (the others skip).
      await this.stateOf(org).then(
        (state) => (this.cursor = Math.min(this.cursor, replayPoint(state.cursor))),
        (error: unknown) => this.hold(org, error),
      );
    }
  }

  private stateOf(org: string): Promise<OrgState> {
    let loading = this.orgStates.get(org);
    if (!loading) {
      loading = loadOrgState(this.deps.orgs.org(org), this.deps.ctx.clock.now());
      this.orgStates.set(org, loading);
      loading.catch(() => this.orgStates.delete(org));
    }
    return loading;
  }
}

/**
 * Where reading must start for an org to get every record it lacks. Position 0 is a database that never
 * compacted a record (a new org, or positions reset for a new log): it lacks nothing at or below the
 * checkpoint, so it asks for no replay.
 */
function replayPoint(cursor: number): number {
  return cursor > 0 ? cursor : Infinity;
}

/** Expired pending identities are looked for at most every SWEEP_INTERVAL_MS, and only if any exist. */
function sweepDue(state: OrgState, now: number): boolean {
  return state.plan.pendingByClient.size > 0 && now >= state.nextSweepAt;
}

function decrementPending(plan: PlanState, key: string): void {
  const left = (plan.pendingByClient.get(key) ?? 1) - 1;
  if (left > 0) plan.pendingByClient.set(key, left);
  else plan.pendingByClient.delete(key);
}

async function loadOrgState(db: Database, now: number): Promise<OrgState> {
  // Created once here, so each commit only updates it (write-batch.ts).
  await db.run('INSERT OR IGNORE INTO log_cursor VALUES ($1, 0, NULL)', [CURSOR_NAME]);
  const [cursor] = await db.all<{ seq: bigint; visible_us: bigint | null }>(
    'SELECT seq, epoch_us(visible_at) AS visible_us FROM log_cursor WHERE name = $1',
    [CURSOR_NAME],
  );

  const dedupe = new DedupeWindow();
  const since = BigInt(now - DEDUPE_WINDOW_MS);
  const seen = await db.all<{ org: string; environment: string; message_id: string; seen_ms: bigint }>(
    `SELECT org, environment, message_id, epoch_ms(received_at) AS seen_ms FROM events WHERE epoch_ms(received_at) > $1
     UNION ALL
     SELECT org, environment, message_id, epoch_ms(received_at) FROM pending_identity WHERE epoch_ms(received_at) > $1
     ORDER BY seen_ms`,
    [since],
  );
  for (const s of seen) dedupe.checkAndRecord(dedupeKey(s.org, s.environment, s.message_id), Number(s.seen_ms));

  const identities = new IdentityMap();
  const mappings = await db.all<{ org: string; environment: string; client_id: string; email: string; received_ms: bigint }>(
    'SELECT org, environment, client_id, email, epoch_ms(received_at) AS received_ms FROM identify_mappings',
  );
  for (const m of mappings) {
    identities.record({ org: m.org, environment: m.environment, clientId: m.client_id, email: m.email, receivedAt: Number(m.received_ms) });
  }

  const pendingByClient = new Map<string, number>();
  const pending = await db.all<{ org: string; environment: string; client_id: string; n: bigint }>(
    'SELECT org, environment, client_id, count(*) AS n FROM pending_identity GROUP BY ALL',
  );
  for (const p of pending) pendingByClient.set(clientKey(p.org, p.environment, p.client_id), Number(p.n));

  return {
    plan: { dedupe, identities, pendingByClient, tombstones: await loadTombstones(db) },
    cursor: Number(cursor?.seq ?? 0n),
    lastVisibleAtMicros: cursor?.visible_us ?? 0n,
    nextSweepAt: 0,
    // Opening the database folded what was there (storage/migrate.ts): the next fold is due later.
    nextFoldAt: now + FOLD_INTERVAL_MS,
  };
}
