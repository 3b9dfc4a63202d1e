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
import type { LogReader } from '../log/types.js';
import { BatchPacing } from './batch-pacing.js';
import type { CommitReport, Compaction, CompactorDeps } from './compaction.js';
import { type OrgState, SWEEP_INTERVAL_MS, decrementPending, foldOrg, loadOrgState, replayPoint, sweepDue } from './org-state.js';
import { receiptTimes } from './profile-delays.js';
import { type SeqEntry, entriesByOrg, planEntries } from './plan-batch.js';
import { ReadHole, accountRead, lostAbove } from './read-accounting.js';
import { reportAgain } from './report-again.js';
import { HeldOrgs } from './held-orgs.js';
import { SeqWaiters } from './seq-waiters.js';
import { writeBatch } from './write-batch.js';
import type { KeptOut } from './tombstones.js';
import { OrgUnavailable } from '../../core/unavailable.js';
import type { Observations } from '../../ops/metrics.js';
import { ownsOrg } from '../../core/shard.js';

/** How long a read waits for new records before the loop looks at expired pending identities. */
const IDLE_WAIT_MS = 250;
const RETRY_AFTER_FAILURE_MS = 1000;

const LOST_MESSAGE = 'log records were removed before compaction read them: the events in them are lost (docs/operators.md "Records removed before compaction")';

export class Compactor implements Compaction {
  private readonly orgStates = new Map<string, Promise<OrgState>>();
  private reader: LogReader | undefined;
  /** Every org but the held ones holds its entries up to here. */
  private cursor = 0;
  /** No org's database holds a position above this (durable before an org commits one). */
  private highWater = 0;
  private readonly pacing = new BatchPacing();
  private stopping = false;
  private running: Promise<void> | undefined;
  private readonly waiters = new SeqWaiters();
  private readonly held = new HeldOrgs();
  /** What the checkpoint file says (written by this compactor only). */
  private checkpointSeq = 0;
  /** Lost positions up to here were reported (reportLost). */
  private lostReportedThrough = 0;
  /** Resolves once the state is loaded and the commits since `reportedSince` are told again (start). */
  private started: Promise<void> = Promise.resolve();

  constructor(private readonly deps: CompactorDeps) {}

  /** Held orgs whose database is damaged do not hold this back (they may stay so for days); others do. */
  get compactedSeq(): number {
    return Math.min(this.cursor, this.held.lowestFrom(false));
  }

  get retainFromSeq(): number {
    return this.checkpointSeq;
  }

  /**
   * Also after `stop`: reading starts again from the checkpoint. Resolves at once: each org's state (a
   * day of message ids among it) loads first thing in the loop, while the service listens. With 2.7 M
   * events of the last 24 h, loading it first (in one read) kept a start from listening for 17–21 s.
   */
  async start(options: { reportedSince?: number } = {}): Promise<void> {
    this.stopping = false;
    this.started = new Promise<void>((started) => (this.running = this.loop(options.reportedSince, started)));
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

  async holds(org: string, messageId: string): Promise<boolean> {
    // Once the commits a predecessor may not have reported are told again (start), and the batch being
    // read or committed now has ended (it records its ids before its commit).
    await this.started;
    await this.whenCompacted(this.reader?.position ?? this.cursor);
    return (await this.stateOf(org)).plan.dedupe.holdsMessage(org, messageId, this.deps.ctx.clock.now());
  }

  async reload(org: string): Promise<void> {
    this.orgStates.delete(org);
  }

  private async loop(reportedSince: number | undefined, started: () => void): Promise<void> {
    let loaded = false;
    while (!this.stopping) {
      try {
        if (!loaded) {
          await this.loadState();
          loaded = true;
          this.notifyWaiters();
        }
        if (reportedSince !== undefined) await reportAgain(this.orgStates, this.deps, reportedSince, (report) => this.runAfterCommit(report));
        reportedSince = undefined;
        started();
        this.reader ??= await this.deps.log.openReader(this.cursor);
        await this.pacing.pace();
        const max = this.pacing.recordsPerBatch();
        const from = this.reader.position;
        const records = await this.reader.read(max, IDLE_WAIT_MS);
        const account = accountRead(from, records, this.reader.skipped, this.reader.position);
        if (account.kind === 'hole') throw new ReadHole(account);
        this.reportLost(account.released);
        this.pacing.read(records.length, max);
        await this.commit(records, this.reader.position);
      } catch (error) {
        // State in memory may be ahead of the databases now: rebuild it from what was committed and replay.
        this.deps.logger.error({ err: error }, 'compaction batch failed; replaying from the saved positions');
        await this.reader?.close().catch(() => undefined);
        this.reader = undefined;
        await new Promise((r) => setTimeout(r, RETRY_AFTER_FAILURE_MS));
        loaded = await this.loadState().then(
          () => true,
          (e: unknown) => (this.deps.logger.error({ err: e }, 'reloading compactor state failed'), false),
        );
        this.notifyWaiters();
      }
    }
    started();
  }

  /**
   * Released positions above the checkpoint held records that not every org had: they were removed from
   * the log before compaction read them (the stream's age or size limit, a checkpoint lost with segments
   * released after it). Said once per position, however often a replay passes them again.
   */
  private reportLost(released: Parameters<typeof lostAbove>[0]): void {
    for (const range of lostAbove(released, Math.max(this.checkpointSeq, this.lostReportedThrough))) {
      const records = range.to - range.from + 1;
      this.deps.metrics.logRecordsLost.inc(records);
      this.deps.logger.error({ from: range.from, to: range.to, records }, LOST_MESSAGE);
      this.lostReportedThrough = range.to;
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
      this.pacing.observe([...byOrg.values()].reduce((sum, list) => sum + list.length, 0), records.length);
    }
    const orgs = await this.orgsToWrite(byOrg, now);
    const lastSeq = Math.max(this.cursor, through);
    if (lastSeq === this.cursor && orgs.length === 0) return;
    if (lastSeq > this.highWater) {
      await this.deps.checkpoint.raiseHighWater(lastSeq);
      this.highWater = lastSeq;
    }
    const recovered: string[] = [];
    let replayFrom = Infinity;
    for (const org of orgs) {
      const held = this.held.get(org);
      try {
        if (!held) {
          // Told per org as it commits: an org's flows and lookups do not wait for the other orgs' commits
          // of the batch (one of which may wait for its flows' statement in progress, flow-fairness.test.ts).
          const report = await this.commitOrg(org, byOrg.get(org) ?? [], lastSeq, now);
          if (report) await this.runAfterCommit(report);
        }
        else if (performance.now() >= held.retryAt) {
          // Its database opens again; the records it missed are read again below, in order, before any newer one.
          // One that opens empty after damage (its file moved aside) gets every record the log still holds.
          const { cursor } = await this.stateOf(org);
          replayFrom = Math.min(replayFrom, held.damaged && cursor === 0 ? 0 : Math.min(held.from, replayPoint(cursor)));
          recovered.push(org);
        }
      } catch (error) {
        this.hold(org, error);
      }
    }
    // Held orgs (and those recovering) lack records after their `from`: the checkpoint stays at or below it.
    const safe = Math.min(lastSeq, this.held.lowestFrom(true));
    if (safe > this.checkpointSeq) {
      this.deps.checkpoint.write(safe);
      this.checkpointSeq = safe;
    }
    for (const org of recovered) this.held.delete(org);
    this.cursor = lastSeq;
    this.notifyWaiters();
    if (recovered.length > 0) await this.replayFrom(replayFrom);
  }

  /** `org`'s commit failed: the others go on, its entries wait in the log. Logged when first held; its retries are quiet. */
  private hold(org: string, error: unknown): void {
    if (this.held.hold(org, error instanceof OrgUnavailable, this.checkpointSeq, performance.now())) {
      this.deps.logger.error({ err: error, org }, 'compacting this org failed; its events stay in the log and the other orgs go on');
    }
    this.orgStates.delete(org);
  }

  /** A held org opens again: read from where it stopped, so it gets the records it missed (the others skip them). */
  private async replayFrom(seq: number): Promise<void> {
    await this.reader?.close().catch(() => undefined);
    this.reader = undefined;
    this.cursor = Math.min(seq, this.checkpointSeq);
  }

  /** Orgs with entries in this batch, those due a sweep of expired pending identities, held ones due a retry (an empty commit). */
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

  /** One org's share of a batch, in one transaction of its database with its new position; its report, if it has one. */
  private async commitOrg(org: string, batch: readonly SeqEntry[], lastSeq: number, now: number): Promise<CommitReport | undefined> {
    const state = await this.stateOf(org);
    // Records the org's database already holds (a batch replayed after a crash or failure) are skipped.
    const entries = batch.filter((e) => e.seq > state.cursor);
    const sweepExpired = sweepDue(state, now);
    if (entries.length === 0 && !sweepExpired) return undefined;
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
    if (outcome.events > 0 && now >= state.nextFoldAt) await foldOrg(db, state, now, this.deps.logger);
    const { touched, events } = outcome;
    const received = receiptTimes(entries);
    if (touched.length === 0 && events === 0 && received.length === 0) return undefined;
    const newest: CommitReport['newest'] = received.length > 0 ? [[org, Math.max(...received.map(([at]) => at))]] : [];
    return { touched, orgs: events > 0 ? [org] : [], backlog: this.pacing.behind, received, newest, committedAt: Number(outcome.visibleAtMicros) };
  }

  private async runAfterCommit(report: CommitReport): Promise<void> {
    try {
      await this.deps.afterCommit?.(report);
    } catch (error) {
      // The rows are committed; a failed refresh must not replay them. The next touch refreshes again.
      this.deps.logger.error({ err: error }, 'after-commit step failed');
    }
  }

  private notifyWaiters(): void {
    this.deps.onProgress?.(this.compactedSeq, this.retainFromSeq);
    this.waiters.reached(this.compactedSeq);
  }

  /** The checkpoint, and the state of every org with a database (so expired pending rows are swept). */
  private async loadState(): Promise<void> {
    this.orgStates.clear();
    this.checkpointSeq = this.deps.checkpoint.read();
    this.highWater = this.deps.checkpoint.highWater();
    // The cursor is set once every org is read: a waiter must never see the checkpoint while an org below it loads.
    let cursor = this.checkpointSeq;
    for (const org of await this.deps.orgs.slugs()) {
      // A database that does not open is held from the start; the others load. One restored from an
      // older backup holds less than the checkpoint: reading starts where it stopped (the others skip).
      await this.stateOf(org).then((state) => (cursor = Math.min(cursor, replayPoint(state.cursor))), (error: unknown) => this.hold(org, error));
    }
    this.cursor = cursor;
  }

  private stateOf(org: string): Promise<OrgState> {
    let loading = this.orgStates.get(org);
    if (!loading) {
      loading = loadOrgState(this.deps.orgs.org(org), org, this.deps.ctx.clock.now());
      this.orgStates.set(org, loading);
      loading.catch(() => this.orgStates.delete(org));
    }
    return loading;
  }
}
