/**
 * The source of scheduled and recurring sends to a segment (issue 26). Each second a tick looks at the live
 * flows of those categories: an occurrence that has come (schedule-time.ts) and is not stored yet starts,
 * and the due members of started ones are decided and sent, a chunk at a time, as fast as the flow's
 * sendRatePerSecond allows.
 *
 * - **Start**: the audience segment is read once, its members (valid e-mails, sorted) get their due time
 *   (the occurrence's instant in the org's zone, or in each contact's) and are stored with the occurrence
 *   row in one transaction (occurrence-store.ts). A member due more than GRACE_MS before the start (the
 *   service was down, the flow went live late) is counted missed and not sent; so is a whole occurrence:
 *   a scheduled flow's is recorded skipped with why, a recurring flow's earlier occurrences are not caught
 *   up (the next one is sent).
 * - **Chunks**: at most CHUNK due members, in (due time, e-mail) order, each a trigger row of its own
 *   (identity = e-mail, event_id = `occurrence:<local date-time>`), decided by the decision pipeline like a
 *   trigger row (no event, so no history rules). Decisions, outbox rows and the removal of the chunk's member
 *   rows are one transaction: a crash repeats no decision and loses no member.
 * - **Turns**: each start and each chunk runs in a turn of the org (org-turns.ts), as runs, releases
 *   and erasures do, and gives it back between chunks: no one waits on a throttled send. Orgs tick side by
 *   side, each its flows in a row.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Context } from '../../../core/context.js';
import { PeriodicTask } from '../../../core/periodic-task.js';
import type { OrgStorage } from '../../../db/org-storage.js';
import { SandboxBusy, SandboxPaused } from '../../../db/untrusted.js';
import { StorageUnavailable } from '../../../core/unavailable.js';
import { yieldNow, YIELD_EVERY } from '../../../db/yield-now.js';
import type { Row } from '../../../db/sql.js';
import type { ProfileIndex } from '../../../events/profiles/profile-index.js';
import type { OnceSchedule } from '../../../generated/flow.js';
import type { QuietHours } from '../../../core/quiet-hours.js';
import { QueryFailed, runSandboxed, windowOf, withSandbox } from '../../triggers/sandbox.js';
import type { TriggerStore } from '../../triggers/trigger-store.js';
import { decide } from '../rules/decide.js';
import type { Decision, RunState } from '../rules/decision.js';
import { GRACE_MS, membersOf } from '../rules/occurrence-members.js';
import { type Occurrence, occurrencesBetween, zoneOf } from '../rules/schedule-time.js';
import { type SegmentFlow as SegmentFlowOf, segmentFlow } from '../rules/segment-flow.js';
import { type Bucket, refill } from '../rules/rate-bucket.js';
import type { FlowRecord, FlowStore } from '../store/flow-store.js';
import type { OccurrenceState, OccurrenceStore } from '../store/occurrence-store.js';
import type { SendStore } from '../store/send-store.js';
import { FoldBehind } from './contact-fold.js';
import type { ContactState } from './contact-state.js';
import { type DecisionPipeline, ofFlow } from './decision-pipeline.js';
import { OrgJobs } from './org-jobs.js';
import type { OrgTurns } from './org-turns.js';

type SegmentFlow = SegmentFlowOf<FlowRecord>;
/** Due occurrences are looked at this often: a send starts within a second of its time. */
const TICK_MS = 1000;
/** Members decided per transaction: bounded memory and commit size (at 1,000 a chunk commits in tens of ms); the turn is given back between. */
export const CHUNK = 1000;
/** A start that could not read its segment (no valid version, no capacity, a failed query) is tried again after this. */
const RETRY_MS = 10_000;
/** Occurrences started this long ago are still looked up at a start: a recurring occurrence is open at most ~2 days. */
const RECENT_MS = 3 * 24 * 60 * 60 * 1000;

export class ScheduledSends {
  /** Per org, its occurrences known here (`org \0 flow \0 occurrence`); an org is loaded once. */
  private readonly known = new Map<string, OccurrenceState>();
  private readonly loaded = new Set<string>();
  /** Per org or flow, when a failed load or start is tried again. */
  private readonly retryAt = new Map<string, number>();
  /** Per flow, the token bucket of its rate: up to one second of sends, refilled with the clock. */
  private readonly buckets = new Map<string, Bucket>();
  /** Per org, a tick of its flows: orgs do not wait for each other's starts and chunks (each takes a turn of its org). */
  private readonly jobs = new OrgJobs(
    (org) => this.tickOrg(org),
    (err, org) => this.deps.logger.error({ err, org }, 'scheduled sends failed'),
  );
  private readonly ticker = new PeriodicTask(
    () => {
      this.offerAll();
      return Promise.resolve();
    },
    (err) => this.deps.logger.error({ err }, 'scheduled sends failed'),
  );

  constructor(
    private readonly deps: {
      orgs: OrgStorage;
      flows: Pick<FlowStore, 'live' | 'get' | 'runFailed' | 'ranEmpty' | 'reload'>;
      triggers: Pick<TriggerStore, 'live'>;
      occurrences: OccurrenceStore;
      sends: Pick<SendStore, 'usedKeysAmong' | 'record'>;
      profiles: Pick<ProfileIndex, 'find'>;
      /** The org's time zone now (its settings, kept in memory). */
      quietHoursOf(org: string): { quietHours?: QuietHours | undefined; timeZone: string };
      /** The orgs' turns: each start and each chunk takes one (org-turns.ts). */
      turns: Pick<OrgTurns, 'run'>;
      /** The decision pipeline every source feeds (decision-pipeline.ts). */
      pipeline: Pick<DecisionPipeline, 'folded' | 'decide' | 'commit'>;
      ctx: Context;
      logger: FastifyBaseLogger;
      /** TRIGGER_TIMEOUT_MS: the segment query. */
      timeoutMs: number;
      /** The most members a segment may return (as for segment filters: SEGMENT_ROWS_PER_TRIGGER_ROW × TRIGGER_MAX_ROWS). */
      maxMembers: number;
    },
  ) {}

  start(): void {
    this.ticker.start(TICK_MS);
  }

  async close(): Promise<void> {
    await this.ticker.stop();
    await this.jobs.close();
  }

  /** The org was deleted (its flows forgotten, its runs waited for): nothing of it is kept. */
  forgetOrg(org: string): void {
    const prefix = `${org}\u0000`;
    for (const map of [this.known, this.retryAt, this.buckets]) for (const k of map.keys()) if (k.startsWith(prefix) || k === org) map.delete(k);
    this.loaded.delete(org);
  }

  /**
   * Starts what has come and sends what is due, the orgs side by side: one tick now, for tests with their
   * clock (its timer stopped by close()); the timer's ticks go through one job per org instead.
   */
  async sendDue(): Promise<void> {
    await Promise.all(this.orgs().map((org) => this.tickOrg(org)));
  }

  private offerAll(): void {
    for (const org of this.orgs()) void this.jobs.offer(org);
  }

  /** Orgs with a live scheduled or recurring flow. */
  private orgs(): string[] {
    return [...new Set(this.deps.flows.live().flatMap((record) => (segmentFlow(record) ? [record.org] : [])))];
  }

  /** The org's scheduled and recurring flows, one after another. */
  private async tickOrg(org: string): Promise<void> {
    for (const record of this.deps.flows.live()) {
      const flow = record.org === org ? segmentFlow(record) : undefined;
      if (!flow) continue;
      await this.tick(flow).catch((err: unknown) => {
        // Its members stay due and the next tick decides them (counted in audience_flow_fold_behind_total).
        if (!(err instanceof FoldBehind)) this.deps.logger.error({ err, org, flow: record.definition.id }, 'scheduled send failed');
      });
    }
  }

  /** One flow's tick: its occurrences that have come start, a scheduled one long passed is recorded skipped, due members are sent. */
  private async tick(flow: SegmentFlow): Promise<void> {
    const { org } = flow.record;
    const id = flow.record.definition.id;
    const now = this.deps.ctx.clock.now();
    if ((this.retryAt.get(org) ?? 0) > now || !(await this.load(org, now))) return;
    const zone = this.deps.quietHoursOf(org).timeZone;
    // A start that failed is tried again later; the flow's started occurrences go on meanwhile.
    const startsWait = (this.retryAt.get(flowKey(org, id)) ?? 0) > now;
    for (const occurrence of occurrencesBetween(flow.schedule, zone, now - GRACE_MS, now)) {
      if (!startsWait && !this.known.has(occurrenceKey(org, id, occurrence.id))) await this.begin(flow, occurrence, now);
    }
    if ('at' in flow.schedule) await this.skipPassed(flow, flow.schedule, zone, now);
    await this.sendChunks(flow, now);
  }

  /** The org's stored occurrences, once; false when its database cannot be read now (tried again later). */
  private async load(org: string, now: number): Promise<boolean> {
    if (this.loaded.has(org)) return true;
    try {
      for (const state of await this.deps.occurrences.recent(org, now - RECENT_MS)) this.known.set(occurrenceKey(org, state.flowId, state.occurrence), state);
      this.loaded.add(org);
      return true;
    } catch (err) {
      this.deps.logger.warn({ err, org }, 'reading scheduled occurrences failed; tried again shortly');
      this.retryAt.set(org, now + RETRY_MS);
      return false;
    }
  }

  /** A scheduled flow's one occurrence whose time passed (more than the grace) with nothing stored: recorded skipped, with why. */
  private async skipPassed(flow: SegmentFlow, schedule: OnceSchedule, zone: string, now: number): Promise<void> {
    const { org, definition } = flow.record;
    const [occurrence] = occurrencesBetween(schedule, zone, -Infinity, now);
    if (!occurrence || occurrence.closesAt >= now - GRACE_MS || this.known.has(occurrenceKey(org, definition.id, occurrence.id))) return;
    const reason =
      `not sent: its time (${schedule.at}, ${schedule.timeZone === 'org' ? zone : "each contact's zone"}) had passed by more than ${GRACE_MS / 60_000} minutes ` +
      `when the flow could send it (live since ${new Date(flow.record.liveSince ?? now).toISOString()}${flow.record.lastError ? `; last error: ${flow.record.lastError}` : ''})`;
    if (await this.deps.occurrences.skip(org, definition.id, { id: occurrence.id, dueAt: occurrence.opensAt }, reason, now)) {
      await this.deps.flows.runFailed(org, definition.id, now, `occurrence ${occurrence.id} ${reason}`);
    }
    this.known.set(occurrenceKey(org, definition.id, occurrence.id), { flowId: definition.id, occurrence: occurrence.id, status: 'skipped', segmentHash: null, nextDueAt: null });
  }

  /** Starts an occurrence: the segment's members now, each with its due time, stored with it. */
  private async begin(flow: SegmentFlow, occurrence: Occurrence, now: number): Promise<void> {
    const { org } = flow.record;
    const id = flow.record.definition.id;
    await this.deps.turns.run(org, async () => {
      const segment = this.deps.triggers.live(org, 'segment', flow.segment);
      if (!segment) return this.failStart(flow, occurrence, now, `segment ${flow.segment} has no valid version`);
      let rows: Row[];
      try {
        const page = await withSandbox(this.deps.orgs.org(org), this.deps.timeoutMs, (c) => runSandboxed(c, segment.checked, windowOf(0n, BigInt(now) * 1000n), this.deps.maxMembers));
        if (page.truncated) return this.failStart(flow, occurrence, now, `the segment returns more than ${this.deps.maxMembers} rows (10 × TRIGGER_MAX_ROWS)`);
        rows = page.rows;
      } catch (error) {
        if (error instanceof QueryFailed) return this.failStart(flow, occurrence, now, error.reason);
        if (error instanceof SandboxBusy || error instanceof SandboxPaused || error instanceof StorageUnavailable) return this.failStart(flow, occurrence, now, `the segment was not read: ${error.message}`);
        throw error;
      }
      const orgZone = this.deps.quietHoursOf(org).timeZone;
      const contactZone = (email: string) => zoneOf(this.deps.profiles.find(org, 'email', email)?.timezone, orgZone);
      const { members, missed } = membersOf(flow.schedule, occurrence, rows, contactZone, now);
      if (!(await this.deps.occurrences.start(org, id, { id: occurrence.id, dueAt: occurrence.opensAt }, segment.hash, members, missed, now))) {
        // Stored already (older than what a start loads): what is stored wins, read at the next tick.
        this.loaded.delete(org);
        return;
      }
      const nextDueAt = members.reduce<number | null>((next, m) => (next === null || m.dueAt < next ? m.dueAt : next), null);
      this.known.set(occurrenceKey(org, id, occurrence.id), { flowId: id, occurrence: occurrence.id, status: nextDueAt === null ? 'done' : 'sending', segmentHash: segment.hash, nextDueAt });
      this.retryAt.delete(flowKey(org, id));
      await this.deps.flows.ranEmpty(org, id, now);
      await this.deps.flows.reload(org, id);
    });
  }

  private async failStart(flow: SegmentFlow, occurrence: Occurrence, now: number, reason: string): Promise<void> {
    const { org } = flow.record;
    const id = flow.record.definition.id;
    this.deps.logger.warn({ org, flow: id, occurrence: occurrence.id, reason }, 'scheduled occurrence did not start; tried again shortly');
    this.retryAt.set(flowKey(org, id), now + RETRY_MS);
    await this.deps.flows.runFailed(org, id, now, `occurrence ${occurrence.id} did not start: ${reason} (tried again every ${RETRY_MS / 1000} s for up to ${GRACE_MS / 60_000} minutes after its time)`);
  }

  /** The flow's due members, oldest occurrence first, as many as its rate has tokens for. */
  private async sendChunks(flow: SegmentFlow, now: number): Promise<void> {
    const { org } = flow.record;
    const id = flow.record.definition.id;
    const bucket = refill(this.buckets, flowKey(org, id), flow.rate, now);
    const prefix = `${flowKey(org, id)}\u0000`;
    const sending = [...this.known]
      .filter(([key, s]) => key.startsWith(prefix) && s.status === 'sending')
      .map(([, s]) => s)
      .sort((a, b) => a.occurrence.localeCompare(b.occurrence));
    for (const state of sending) {
      while (state.status === 'sending' && state.nextDueAt !== null && state.nextDueAt <= now && bucket.tokens >= 1) {
        const decided = await this.chunk(flow.record, state, now, Math.min(CHUNK, Math.floor(bucket.tokens)));
        if (decided === 0) return;
        bucket.tokens -= decided;
      }
    }
  }

  /** Decides up to `limit` due members of the occurrence and records them; returns how many. */
  private chunk(record: FlowRecord, state: OccurrenceState, now: number, limit: number): Promise<number> {
    const { org } = record;
    const flowId = record.definition.id;
    return this.deps.turns.run(org, async () => {
        const current = this.deps.flows.get(org, flowId);
      if (current.status !== 'live' || !segmentFlow(current)) return 0;
      const flow = current.definition;
      const emails = await this.deps.occurrences.dueMembers(org, flowId, state.occurrence, now, limit);
      // Contacts as of every event acknowledged before their decision (contact-fold.ts).
      const folded = emails.length === 0 ? undefined : await this.deps.pipeline.folded('scheduled', org);
      if (!folded) {
        // Its due members were erased meanwhile: the next one's time, or done.
        state.nextDueAt = await this.deps.occurrences.settle(org, flowId, state.occurrence, now);
        if (state.nextDueAt === null) state.status = 'done';
        return 0;
      }
      const eventId = `occurrence:${state.occurrence}`;
      const keys = () => this.deps.sends.usedKeysAmong(org, flowId, eventId, emails);
      // No event: nothing is history, so too_old and backfill do not apply.
      const rules = (contacts: ContactState, used: Set<string>) => decideEach(emails, eventId, { org, flow, now: folded.at, keys: used, eventTimes: new Map(), ...contacts });
      const decisions = await this.deps.pipeline.decide(org, flow, emails, folded, keys, rules);
      const outcomes: Record<string, number> = {};
      for (const d of decisions) outcomes[d.outcome] = (outcomes[d.outcome] ?? 0) + 1;
      const write = () =>
        this.deps.orgs.org(org).transaction(async (c) => {
          await this.deps.sends.record(c, org, { id: flowId, transactional: flow.transactional ?? false }, state.segmentHash ?? '', decisions, now);
          return { next: await this.deps.occurrences.decided(c, org, flowId, state.occurrence, emails, outcomes, now) };
        });
      const { next: nextDueAt } = (await this.deps.pipeline.commit(org, write, () => ({ decisions: ofFlow(flowId, decisions) })))!;
      state.nextDueAt = nextDueAt;
      if (nextDueAt === null) state.status = 'done';
      return emails.length;
    });
  }
}

/** A trigger row per member, decided as a run decides one (yielding now and then: collect and lookups share this thread). */
async function decideEach(emails: readonly string[], eventId: string, state: RunState): Promise<Decision[]> {
  const decisions: Decision[] = [];
  for (const email of emails) {
    decisions.push(decide({ identity: email, identity_type: 'email', event_id: eventId }, state));
    if (decisions.length % YIELD_EVERY === 0) await yieldNow();
  }
  return decisions;
}

const flowKey = (org: string, flowId: string) => `${org}\u0000${flowId}`;
const occurrenceKey = (org: string, flowId: string, occurrence: string) => `${org}\u0000${flowId}\u0000${occurrence}`;
