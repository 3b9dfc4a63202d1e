/**
 * Runs live flows on their schedule (SPEC 8). One run:
 *   window (cursor, newest visible_at] → trigger rows (untrusted, on a connection of their own) →
 *   decisions → rendered messages (off this thread) → one transaction (FlowStore.advance): the decisions and
 *   outbox rows (SendStore.record) + the cursor advance.
 * Why every visible event falls in exactly one window: visible_at is assigned inside the (serialized)
 * compaction transaction and grows with each commit, so once the window end is read every event with
 * visible_at ≤ end is committed (a commit in flight gets a later visible_at) and the trigger query sees it,
 * while the placeholders keep every later event for a later window. A narrowed window ends on a commit.
 * Why a send key is never decided twice: runs of one org never overlap in this process, and the final
 * transaction writes nothing unless the cursor is still where the run started.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Row } from '../../db/sql.js';
import type { Context } from '../../core/context.js';
import { assertNever } from '../../core/domain.js';
import { microsParam } from '../../db/database.js';
import type { OrgStorage } from '../../db/org-storage.js';
import { normalizeEmail } from '../../core/domain.js';
import type { Metrics } from '../../ops/metrics.js';
import { PeriodicTask } from '../../core/periodic-task.js';
import type { ContactKey } from '../../events/profiles/profile-materializer.js';
import type { ProfileIndex } from '../../events/profiles/profile-index.js';
import type { QuietHours } from '../../core/quiet-hours.js';
import { eventTimes } from '../../events/compaction/event-times.js';
import { QueryFailed, runSandboxed, windowOf, withSandbox } from '../triggers/sandbox.js';
import { SandboxBusy, SandboxPaused } from '../../db/untrusted.js';
import type { LiveQuery, TriggerStore } from '../triggers/trigger-store.js';
import { type Decision, decide, type EnteredSteps, type RenderedDecision, resolveEmail, type RunState, textOf, type ToDefer, type ToRender } from './decide.js';
import { matches } from './condition.js';
import type { FlowRecord, FlowStore } from './flow-store.js';
import type { SendDispatcher } from './send-dispatcher.js';
import type { PendingSend, SendStore } from './send-store.js';
import type { WaitStore } from './wait-store.js';
import { renderDecisions, type TemplateRenderer } from './template-renderer.js';
import { contactState } from './contact-state.js';
import type { FlowDefinition } from '../../generated/flow.js';
import type { FrequencyCaps } from '../../generated/org.js';
import type { ConsentStore } from '../consent/consent-store.js';
import type { UnsubscribeLinks } from '../consent/unsubscribe-link.js';
import { YIELD_EVERY, yieldNow } from '../../db/yield-now.js';

export interface RunSummary {
  /** Why nothing ran, when nothing did. */
  skipped?: string;
  rows: number;
  decisions: RenderedDecision[];
  /** The window was narrowed to TRIGGER_MAX_ROWS rows: the next run goes on from where this one ended. */
  more?: boolean;
}

/** What a simulation found: the contact's trigger rows and what a run would decide for each, rendered. */
export interface Simulation {
  rows: Row[];
  decisions: RenderedDecision[];
  /** Per decision, the index of the flow's branch it takes, or null. */
  branches: Array<number | null>;
  /** The window's end as read (earlier than asked when the window held more than TRIGGER_MAX_ROWS rows). */
  end: bigint;
}

interface WindowRead {
  rows: Row[];
  /** Where the window read ends (the whole window, or a commit inside it). */
  end: bigint;
  /** Emails of the flow's segment. */
  segment?: Set<string>;
}

const TICK_MS = 100;
/** A segment may return this many rows per trigger row a run may take (it lists contacts, not events). */
export const SEGMENT_ROWS_PER_TRIGGER_ROW = 10;


export class FlowRunner {
  private readonly nextRunAt = new Map<string, number>();
  /** Orgs that stored new events since the last look: their real-time flows run in the next pass. */
  private readonly committed = new Set<string>();
  /** The run in progress (or queued) per org. */
  private readonly running = new Map<string, Promise<void>>();
  private readonly ticker = new PeriodicTask(
    () => this.runDue(),
    (err) => this.deps.logger.error({ err }, 'running due flows failed'),
  );

  constructor(
    private readonly deps: {
      orgs: OrgStorage;
      ctx: Context;
      flows: FlowStore;
      sends: SendStore;
      triggers: TriggerStore;
      profiles: ProfileIndex;
      dispatcher: SendDispatcher;
      renderer: Pick<TemplateRenderer, 'render'>;
      metrics: Metrics;
      logger: FastifyBaseLogger;
      timeoutMs: number;
      /** TRIGGER_MAX_ROWS. */
      maxRows: number;
      refreshProfiles(keys: ContactKey[]): void;
      /** The org's quiet hours and time zone now (the org's settings, kept in memory). */
      quietHoursOf(org: string): { quietHours?: QuietHours | undefined; timeZone: string };
      /** Sends of the org were deferred until `at` (deferred-sends.ts releases them then). */
      deferredDue(org: string, at: number): void;
      /** Entries of flows with steps: written with the run's decisions (flow-steps.ts moves them on). */
      waits: Pick<WaitStore, 'enter'>;
      /** Entries of the org entered steps at `at`. */
      stepsDue(org: string, at: number): void;
      /** The org's frequencyCaps now (the org's settings, kept in memory). */
      capsOf(org: string): FrequencyCaps;
      consent: Pick<ConsentStore, 'unsubscribed'>;
      links: Pick<UnsubscribeLinks, 'forFlow'>;
    },
  ) {}

  start(): void {
    this.ticker.start(TICK_MS);
  }

  close(): Promise<void> {
    return this.ticker.stop();
  }

  /** The org was deleted (its flows forgotten already): waits for its runs in progress, forgets its schedule. */
  async forgetOrg(org: string): Promise<void> {
    const prefix = `${org}/`;
    for (const key of this.nextRunAt.keys()) if (key.startsWith(prefix)) this.nextRunAt.delete(key);
    await this.running.get(org);
  }

  /**
   * The compactor stored new events of these orgs: their real-time flows (`realTime`, the default) run
   * now rather than at their schedule. Runs stay one at a time per org, each from its flow's cursor, so
   * a burst of commits makes one run per flow, not one per commit.
   */
  noteCommitted(orgs: readonly string[]): void {
    let any = false;
    for (const org of orgs) {
      if (this.committed.has(org) || !this.deps.flows.live().some((f) => f.org === org && runsOnCommit(f.definition))) continue;
      this.committed.add(org);
      any = true;
    }
    if (any) this.ticker.kick();
  }

  /**
   * Runs every live flow whose schedule is due, or that runs in real time and whose org stored new
   * events (one at a time: they share the org's database). Every due flow of every org has its run
   * before any flow runs twice, so one busy org cannot hold the others' back.
   */
  async runDue(): Promise<void> {
    const committed = new Set(this.committed);
    this.committed.clear();
    for (const flow of this.deps.flows.live()) {
      // Scheduled and recurring flows send at their schedule (scheduled-sends.ts), not by runs.
      if (flow.definition.category !== 'triggered') continue;
      const key = `${flow.org}/${flow.definition.id}`;
      const now = Date.now();
      const interval = (flow.definition.scheduleSeconds ?? 60) * 1000;
      const due = this.nextRunAt.get(key);
      const fresh = committed.has(flow.org) && runsOnCommit(flow.definition);
      // A flow seen for the first time (just started, or at process start) runs one interval later.
      if (due === undefined) this.nextRunAt.set(key, now + interval);
      if (!fresh && (due === undefined || due > now)) continue;
      this.nextRunAt.set(key, now + interval);
      const summary = await this.run(flow.org, flow.definition.id).catch((err: unknown) => {
        this.deps.logger.error({ err, org: flow.org, flow: flow.definition.id }, 'flow run failed');
        return undefined;
      });
      // The window was cut at TRIGGER_MAX_ROWS: the rest runs next, not an interval later.
      if (summary?.more && runsOnCommit(flow.definition)) this.noteCommitted([flow.org]);
    }
  }

  /**
   * One run of one flow now, whatever its schedule. Runs of one org never overlap (the tick and
   * `POST …/run` may race): a flow's window is decided once, and the org's frequency caps count every
   * send decided before.
   */
  run(org: string, id: string): Promise<RunSummary> {
    return this.exclusive(org, () => this.runNow(org, id));
  }

  /** Runs `work` when no run of the org is in progress, and no run starts before it ends (an erasure's deletions). */
  exclusive<T>(org: string, work: () => Promise<T>): Promise<T> {
    const previous = this.running.get(org) ?? Promise.resolve();
    const result = previous.then(work);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.running.set(org, tail);
    void tail.then(() => {
      if (this.running.get(org) === tail) this.running.delete(org);
    });
    return result;
  }

  private async runNow(org: string, id: string): Promise<RunSummary> {
    const flow = this.deps.flows.get(org, id);
    if (flow.status !== 'live') return { skipped: `flow is ${flow.status}`, rows: 0, decisions: [] };
    const triggerName = flow.definition.trigger;
    if (triggerName === undefined) return { skipped: `a ${flow.definition.category} flow sends at its schedule, not by runs`, rows: 0, decisions: [] };
    const trigger = this.deps.triggers.live(org, 'trigger', triggerName);
    if (!trigger) return this.fail(flow, `trigger ${triggerName} has no valid version`);
    const segmentName = flow.definition.segmentFilter?.segment;
    const segment = segmentName === undefined ? undefined : this.deps.triggers.live(org, 'segment', segmentName);
    if (segmentName !== undefined && !segment) return this.fail(flow, `segment ${segmentName} has no valid version`);

    const stopTimer = this.deps.metrics.triggerRunSeconds.startTimer();
    try {
      const window = await this.nextWindow(flow);
      if (!window) return { rows: 0, decisions: [] };
      const read = await this.readWindow(org, trigger, segment, window.start, window.end);
      const now = this.deps.ctx.clock.now();
      const state = await this.runState(org, flow.definition, read, window.start, now);
      // Templates render on the renderer's thread, within its limits; a template over them fails its row.
      const decisions = await renderDecisions(this.deps.renderer, await decideAll(read.rows, state));
      // Runs of one flow are serialized here; the cursor check in advance() keeps a second process or a
      // restarted runner from writing a window twice.
      const committed = await this.deps.flows.advance(org, id, { from: window.start, to: read.end }, now, async (c) => {
        await this.deps.sends.record(c, org, { id, transactional: flow.definition.transactional ?? false }, trigger.hash, decisions, now);
        await this.deps.waits.enter(c, org, id, trigger.hash, decisions.filter((d): d is EnteredSteps => d.outcome === 'entered'), read.end, now);
      });
      if (!committed) return { skipped: 'the flow moved on while this run read its window', rows: 0, decisions: [] };
      this.afterCommit(org, id, decisions);
      return { rows: read.rows.length, decisions, ...(read.end < window.end ? { more: true } : {}) };
    } catch (error) {
      if (error instanceof QueryFailed) return this.fail(flow, error.reason);
      // Nothing ran (no capacity, the org paused after a runaway query): the cursor stays, the next run tries again.
      if (error instanceof SandboxBusy || error instanceof SandboxPaused) return this.fail(flow, `the window was not read: ${error.message}`);
      throw error;
    } finally {
      stopTimer();
    }
  }

  /**
   * What the flow would do now for one contact (POST …/flows/{id}/simulate): the trigger rows of
   * (start, end] that resolve to `email`, each decided and rendered as a run would decide it now, against
   * what is stored (its sends, consent, caps, suppression) — and nothing sent or recorded. `flow` may be a
   * draft; `trigger` the version to run (default: the live one).
   */
  async simulate(org: string, flow: FlowDefinition, email: string, window: { start: bigint; end: bigint }, trigger?: LiveQuery): Promise<Simulation> {
    const query = trigger ?? (flow.trigger === undefined ? undefined : this.deps.triggers.live(org, 'trigger', flow.trigger));
    if (!query) throw new QueryFailed(flow.trigger === undefined ? `a ${flow.category} flow has no trigger` : `trigger ${flow.trigger} has no valid version`);
    const segmentName = flow.segmentFilter?.segment;
    const segment = segmentName === undefined ? undefined : this.deps.triggers.live(org, 'segment', segmentName);
    if (segmentName !== undefined && !segment) throw new QueryFailed(`segment ${segmentName} has no valid version`);
    const read = await this.readWindow(org, query, segment, window.start, window.end);
    const now = this.deps.ctx.clock.now();
    const profile: RunState['profile'] = (type, value) => this.deps.profiles.find(org, type, value);
    const rows = read.rows.filter((r) => resolveEmail(textOf(r.identity), textOf(r.identity_type), { profile }) === email);
    const state = await this.runState(org, flow, { ...read, rows }, window.start, now);
    const decided = await decideAll(rows, state);
    // The branch whose message each send would be (none: a variant's own message, or the flow's).
    const branches = decided.map((d) => (d.outcome === 'sent' || d.outcome === 'deferred_quiet_hours' ? branchOf(flow, d) : null));
    return { rows, decisions: await renderDecisions(this.deps.renderer, decided), branches, end: read.end };
  }

  /** What `decide` needs to know about the rows of a window, read from the org's database at `now`. */
  private async runState(org: string, flow: FlowDefinition, read: WindowRead, start: bigint, now: number): Promise<RunState> {
    const profile: RunState['profile'] = (type, value) => this.deps.profiles.find(org, type, value);
    const emails = [...new Set(read.rows.map((r) => resolveEmail(textOf(r.identity), textOf(r.identity_type), { profile })).filter((e): e is string => e !== null))];
    const eventIds = [...new Set(read.rows.map((r) => textOf(r.event_id)).filter((e): e is string => e !== null))];
    // Asked together, as in contactState.
    const [keys, times, contacts] = await Promise.all([
      this.deps.sends.usedKeys(org, flow.id, eventIds),
      eventTimes(this.deps.orgs.org(org), org, eventIds, { start, end: read.end }),
      contactState(this.deps, org, flow, emails, now),
    ]);
    return { org, flow, now, ...(read.segment ? { segment: read.segment } : {}), keys, eventTimes: times, ...contacts };
  }

  /** The run's window (cursor, newest visible_at], or undefined when nothing new is visible. */
  private async nextWindow(flow: FlowRecord): Promise<{ start: bigint; end: bigint } | undefined> {
    const window = await this.deps.flows.window(flow.org, flow.definition.id);
    if (!window || window.end > window.start) return window;
    await this.deps.flows.ranEmpty(flow.org, flow.definition.id, this.deps.ctx.clock.now());
    return undefined;
  }

  /**
   * The trigger rows of (start, end], at most TRIGGER_MAX_ROWS of them. A window with more is narrowed to
   * a compaction commit inside it (halving the time span each try) and the rest is left to the next
   * runs: every window still ends on a commit, so every event still falls in exactly one window.
   */
  private async readWindow(org: string, trigger: LiveQuery, segment: LiveQuery | undefined, start: bigint, end: bigint): Promise<WindowRead> {
    const { timeoutMs, maxRows } = this.deps;
    const db = this.deps.orgs.org(org);
    const stopQueryTimer = this.deps.metrics.triggerQuerySeconds.startTimer();
    let upTo = end;
    let page = await withSandbox(db, timeoutMs, (c) => runSandboxed(c, trigger.checked, windowOf(start, upTo), maxRows));
    while (page.truncated) {
      const split = await this.commitInside(org, start, upTo);
      if (split === undefined) {
        throw new QueryFailed(
          `one compaction commit alone gives more than ${maxRows} trigger rows (TRIGGER_MAX_ROWS), so the window cannot be ` +
            'narrowed further: make the trigger return fewer rows per event (and read only its window), or raise TRIGGER_MAX_ROWS',
        );
      }
      upTo = split;
      page = await withSandbox(db, timeoutMs, (c) => runSandboxed(c, trigger.checked, windowOf(start, upTo), maxRows));
    }
    stopQueryTimer();
    if (!segment) return { rows: page.rows, end: upTo };
    const segmentLimit = maxRows * SEGMENT_ROWS_PER_TRIGGER_ROW;
    const members = await withSandbox(db, timeoutMs, (c) => runSandboxed(c, segment.checked, windowOf(start, upTo), segmentLimit));
    if (members.truncated) throw new QueryFailed(`the segment returns more than ${segmentLimit} rows (${SEGMENT_ROWS_PER_TRIGGER_ROW} × TRIGGER_MAX_ROWS)`);
    return { rows: page.rows, end: upTo, segment: new Set(members.rows.map((r) => normalizeEmail(String(r.email ?? '')))) };
  }

  /** A commit (visible_at) of the org strictly inside (start, end): the latest in the first half, else the first one. */
  private async commitInside(org: string, start: bigint, end: bigint): Promise<bigint | undefined> {
    const [row] = await this.deps.orgs.org(org).all<{ below: bigint | null; first: bigint | null }>(
      `SELECT epoch_us(max(visible_at) FILTER (WHERE visible_at <= $4)) AS below, epoch_us(min(visible_at)) AS first
         FROM events WHERE org = $1 AND visible_at > $2 AND visible_at < $3`,
      [org, microsParam(start), microsParam(end), microsParam(start + (end - start) / 2n)],
    );
    return row?.below ?? row?.first ?? undefined;
  }

  /** What follows a commit of decisions (a run's, or a scheduled chunk's): sends queued, holdouts' profiles, deferred and step releases. */
  afterCommit(org: string, flowId: string, decisions: RenderedDecision[]): void {
    const sends: PendingSend[] = [];
    const holdouts: ContactKey[] = [];
    let deferredUntil = Infinity;
    let stepsDue = false;
    for (const d of decisions) {
      this.deps.metrics.flowDecisions.inc({ outcome: d.outcome });
      switch (d.outcome) {
        case 'sent':
          sends.push({ sendId: d.sendId, org, flowId, email: d.email, eventId: d.eventId, variant: d.variant, message: d.message });
          break;
        case 'holdout':
          holdouts.push({ org, email: d.email });
          break;
        case 'deferred_quiet_hours':
          deferredUntil = Math.min(deferredUntil, d.dueAt);
          break;
        case 'entered':
          stepsDue = true;
          break;
        case 'no_identity':
        case 'failed':
        case 'duplicate':
        case 'suppressed':
        case 'backfill':
        case 'too_old':
        case 'unsubscribed':
        case 'excluded_by_segment':
        case 'reentry_blocked':
        case 'frequency_capped':
          break;
        default:
          assertNever(d);
      }
    }
    this.deps.dispatcher.enqueue(sends);
    if (holdouts.length > 0) this.deps.refreshProfiles(holdouts);
    if (deferredUntil < Infinity) this.deps.deferredDue(org, deferredUntil);
    if (stepsDue) this.deps.stepsDue(org, this.deps.ctx.clock.now());
  }

  private async fail(flow: FlowRecord, reason: string): Promise<RunSummary> {
    this.deps.logger.warn({ org: flow.org, flow: flow.definition.id, reason }, 'flow run did not run its window');
    await this.deps.flows.runFailed(flow.org, flow.definition.id, this.deps.ctx.clock.now(), reason);
    return { skipped: reason, rows: 0, decisions: [] };
  }
}

/** `decide` for every row, yielding now and then: a run may hold 100,000 rows, and collect and lookups share this thread. */
async function decideAll(rows: readonly Row[], state: RunState): Promise<Decision[]> {
  const decisions: Decision[] = [];
  for (const row of rows) {
    decisions.push(decide(row, state));
    if (decisions.length % YIELD_EVERY === 0) await yieldNow();
  }
  return decisions;
}

/** The index of the branch a decided message comes from (messageFor's choice), or null. */
function branchOf(flow: FlowDefinition, d: ToRender | ToDefer): number | null {
  const variant = flow.experiment?.variants.find((v) => v.label === d.variant);
  if (variant?.message || !flow.branches) return null;
  const index = flow.branches.findIndex((b) => matches(b.when, d.template.data));
  return index === -1 ? null : index;
}

/** A triggered flow runs when its org stores new events unless it asks for its schedule only. */
function runsOnCommit(flow: FlowDefinition): boolean {
  return flow.category === 'triggered' && flow.realTime !== false;
}
