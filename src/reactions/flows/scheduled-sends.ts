/**
 * Scheduled and recurring sends to a segment (issue 26). Each second a tick looks at the live flows of those
 * categories: an occurrence that has come (schedule-time.ts) and is not stored yet starts, and the members
 * of started ones that are due are decided and sent, a chunk at a time, as fast as the flow's
 * sendRatePerSecond allows.
 *
 * - **Start**: the audience segment is read once, its members (valid e-mails, sorted) get their due time
 *   (the occurrence's instant in the org's zone, or in each contact's) and are stored with the occurrence
 *   row in one transaction (occurrence-store.ts). A member due more than GRACE_MS before the start (the
 *   service was down, the flow went live late) is counted missed and not sent; so is a whole occurrence:
 *   a scheduled flow's is recorded skipped with why, a recurring flow's earlier occurrences are not caught
 *   up (the next one is sent).
 * - **Chunks**: at most CHUNK due members, in (due time, e-mail) order, each given a trigger row of its own
 *   (identity = e-mail, event_id = `occurrence:<local date-time>`) and decided by `decide` like a trigger
 *   row: suppression, consent, re-entry, experiment, branches, caps, quiet hours (deferred). No event
 *   happened, so history rules (too_old, backfill) have nothing to judge. The decisions, the outbox rows and
 *   the removal of the chunk's member rows are one transaction; the dispatcher gets the sends after it
 *   commits. So a crash repeats no decision and loses no member, and flow_sends' key (flow, contact,
 *   occurrence) is the last guard: a repeat would be decided duplicate.
 * - **Turns**: each start and each chunk runs in the org's turn (FlowRunner.exclusive), as runs, releases
 *   and erasures do, and gives it back between chunks: no one waits on a throttled send.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Context } from '../../core/context.js';
import { isEmailAddress, normalizeEmail } from '../../core/domain.js';
import { PeriodicTask } from '../../core/periodic-task.js';
import type { OrgStorage } from '../../db/org-storage.js';
import { SandboxBusy, SandboxPaused } from '../../db/untrusted.js';
import { yieldNow, YIELD_EVERY } from '../../db/yield-now.js';
import type { Row } from '../../db/sql.js';
import type { RecurringSchedule, OnceSchedule } from '../../generated/flow.js';
import { QueryFailed, runSandboxed, windowOf, withSandbox } from '../triggers/sandbox.js';
import type { TriggerStore } from '../triggers/trigger-store.js';
import { contactState, type ContactStateDeps } from './contact-state.js';
import { type Decision, decide, type RenderedDecision, type RunState } from './decide.js';
import type { FlowRecord, FlowStore } from './flow-store.js';
import type { Member, OccurrenceState, OccurrenceStore } from './occurrence-store.js';
import { instantIn, type Occurrence, occurrencesBetween, wallClockMs, zoneOf } from './schedule-time.js';
import type { SendStore } from './send-store.js';
import { renderDecisions, type TemplateRenderer } from './template-renderer.js';

/** Due occurrences are looked at this often: a send starts within a second of its time. */
const TICK_MS = 1000;
/**
 * How late an occurrence (or a contact of it) may still be sent: a flow started a few minutes after its
 * time still sends, one started (or a service back) hours later does not send the morning's message at
 * night.
 */
export const GRACE_MS = 60 * 60 * 1000;
/**
 * Members decided per transaction: bounded memory and commit size; at 1,000 a chunk commits in tens of
 * milliseconds, and the org's turn is given back between chunks.
 */
export const CHUNK = 1000;
/** sendRatePerSecond when the flow does not say. */
export const DEFAULT_SEND_RATE = 100;
/** A start that could not read its segment (no valid version, no capacity, a failed query) is tried again after this. */
const RETRY_MS = 10_000;
/** Occurrences started this long ago are still looked up at a start: a recurring occurrence is open at most ~2 days. */
const RECENT_MS = 3 * 24 * 60 * 60 * 1000;

/** A scheduled or recurring flow, narrowed (its definition is checked by validate-flow.ts). */
interface SegmentFlow {
  record: FlowRecord;
  segment: string;
  schedule: OnceSchedule | RecurringSchedule;
  rate: number;
}

export class ScheduledSends {
  /** Per org, its occurrences known here (`org \0 flow \0 occurrence`); an org is loaded once. */
  private readonly known = new Map<string, OccurrenceState>();
  private readonly loaded = new Set<string>();
  /** Per org or flow, when a failed load or start is tried again. */
  private readonly retryAt = new Map<string, number>();
  /** Per flow, the token bucket of its rate: up to one second of sends, refilled with the clock. */
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly ticker = new PeriodicTask(
    () => this.sendDue(),
    (err) => this.deps.logger.error({ err }, 'scheduled sends failed'),
  );

  constructor(
    private readonly deps: ContactStateDeps & {
      orgs: OrgStorage;
      flows: Pick<FlowStore, 'live' | 'get' | 'runFailed' | 'ranEmpty' | 'reload'>;
      triggers: Pick<TriggerStore, 'live'>;
      occurrences: OccurrenceStore;
      sends: Pick<SendStore, 'usedKeysAmong' | 'record' | 'lastEntries' | 'recentSends'>;
      renderer: Pick<TemplateRenderer, 'render'>;
      /** Runs `work` in the org's turn (FlowRunner.exclusive). */
      exclusive<T>(org: string, work: () => Promise<T>): Promise<T>;
      /** After a chunk commits: its sends to the dispatcher, holdouts' profiles, deferred sends (FlowRunner.afterCommit). */
      afterCommit(org: string, flowId: string, decisions: RenderedDecision[]): void;
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

  close(): Promise<void> {
    return this.ticker.stop();
  }

  /** The org was deleted (its flows forgotten, its runs waited for): nothing of it is kept. */
  forgetOrg(org: string): void {
    const prefix = `${org}\u0000`;
    for (const map of [this.known, this.retryAt, this.buckets]) for (const k of map.keys()) if (k.startsWith(prefix) || k === org) map.delete(k);
    this.loaded.delete(org);
  }

  /** Starts what has come and sends what is due, flow by flow (one tick; tests call it with their clock). */
  async sendDue(): Promise<void> {
    for (const record of this.deps.flows.live()) {
      const flow = segmentFlow(record);
      if (!flow) continue;
      await this.tick(flow).catch((err: unknown) => this.deps.logger.error({ err, org: record.org, flow: record.definition.id }, 'scheduled send failed'));
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
    await this.deps.exclusive(org, async () => {
      const segment = this.deps.triggers.live(org, 'segment', flow.segment);
      if (!segment) return this.failStart(flow, occurrence, now, `segment ${flow.segment} has no valid version`);
      let rows: Row[];
      try {
        const page = await withSandbox(this.deps.orgs.org(org), this.deps.timeoutMs, (c) => runSandboxed(c, segment.checked, windowOf(0n, BigInt(now) * 1000n), this.deps.maxMembers));
        if (page.truncated) return this.failStart(flow, occurrence, now, `the segment returns more than ${this.deps.maxMembers} rows (10 × TRIGGER_MAX_ROWS)`);
        rows = page.rows;
      } catch (error) {
        if (error instanceof QueryFailed) return this.failStart(flow, occurrence, now, error.reason);
        if (error instanceof SandboxBusy || error instanceof SandboxPaused) return this.failStart(flow, occurrence, now, `the segment was not read: ${error.message}`);
        throw error;
      }
      const { members, missed } = this.membersOf(org, flow, occurrence, rows, now);
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

  /** The segment's rows as members: valid e-mails once each, sorted, with their due time; those too late are only counted. */
  private membersOf(org: string, flow: SegmentFlow, occurrence: Occurrence, rows: Row[], now: number): { members: Member[]; missed: number } {
    const emails = [...new Set(rows.map((r) => normalizeEmail(String(r.email ?? ''))).filter((e) => isEmailAddress(e)))].sort();
    const orgZone = this.deps.quietHoursOf(org).timeZone;
    const dueIn = new Map<string, number>();
    const dueOf = (email: string): number => {
      if (flow.schedule.timeZone === 'org') return occurrence.opensAt;
      const zone = zoneOf(this.deps.profiles.find(org, 'email', email)?.timezone, orgZone);
      let due = dueIn.get(zone);
      if (due === undefined) dueIn.set(zone, (due = instantIn(occurrence.wallMs, zone)));
      return due;
    };
    const members: Member[] = [];
    let missed = 0;
    for (const email of emails) {
      const dueAt = dueOf(email);
      if (dueAt < now - GRACE_MS) missed++;
      else members.push({ email, dueAt });
    }
    return { members, missed };
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
    const bucket = this.bucket(flowKey(org, id), flow.rate, now);
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

  /** Refilled at `rate` per second of the clock, holding at most one second's worth. */
  private bucket(key: string, rate: number, now: number): { tokens: number; at: number } {
    let bucket = this.buckets.get(key);
    if (!bucket) this.buckets.set(key, (bucket = { tokens: rate, at: now }));
    bucket.tokens = Math.min(rate, bucket.tokens + (Math.max(0, now - bucket.at) * rate) / 1000);
    bucket.at = now;
    return bucket;
  }

  /** Decides up to `limit` due members of the occurrence and records them; returns how many. */
  private chunk(record: FlowRecord, state: OccurrenceState, now: number, limit: number): Promise<number> {
    const { org } = record;
    const flowId = record.definition.id;
    return this.deps.exclusive(org, async () => {
      // The flow may have been paused or replaced while waiting for the turn.
      const current = this.deps.flows.get(org, flowId);
      if (current.status !== 'live' || !segmentFlow(current)) return 0;
      const flow = current.definition;
      const emails = await this.deps.occurrences.dueMembers(org, flowId, state.occurrence, now, limit);
      if (emails.length === 0) {
        // Its due members were erased meanwhile: the next one's time, or done.
        state.nextDueAt = await this.deps.occurrences.settle(org, flowId, state.occurrence, now);
        if (state.nextDueAt === null) state.status = 'done';
        return 0;
      }
      const eventId = `occurrence:${state.occurrence}`;
      const runState: RunState = {
        org,
        flow,
        now,
        keys: await this.deps.sends.usedKeysAmong(org, flowId, eventId, emails),
        // No event: nothing is history, so too_old and backfill do not apply.
        eventTimes: new Map(),
        ...(await contactState(this.deps, org, flow, emails, now)),
      };
      const decisions = await renderDecisions(this.deps.renderer, await decideEach(emails, eventId, runState));
      const outcomes: Record<string, number> = {};
      for (const d of decisions) outcomes[d.outcome] = (outcomes[d.outcome] ?? 0) + 1;
      const nextDueAt = await this.deps.orgs.org(org).transaction(async (c) => {
        await this.deps.sends.record(c, org, { id: flowId, transactional: flow.transactional ?? false }, state.segmentHash ?? '', decisions, now);
        return this.deps.occurrences.decided(c, org, flowId, state.occurrence, emails, outcomes, now);
      });
      state.nextDueAt = nextDueAt;
      if (nextDueAt === null) state.status = 'done';
      this.deps.afterCommit(org, flowId, decisions);
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

/** The flow as a send to a segment, or undefined when it is triggered (or its schedule does not fit its category). */
function segmentFlow(record: FlowRecord): SegmentFlow | undefined {
  const { category, audience, schedule, sendRatePerSecond } = record.definition;
  if (category === 'triggered' || !audience || !schedule) return undefined;
  if (('at' in schedule) !== (category === 'scheduled')) return undefined;
  if ('at' in schedule && wallClockMs(schedule.at) === null) return undefined;
  return { record, segment: audience.segment, schedule, rate: sendRatePerSecond ?? DEFAULT_SEND_RATE };
}

const flowKey = (org: string, flowId: string) => `${org}\u0000${flowId}`;
const occurrenceKey = (org: string, flowId: string, occurrence: string) => `${org}\u0000${flowId}\u0000${occurrence}`;
