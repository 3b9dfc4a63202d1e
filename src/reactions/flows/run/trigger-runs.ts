/**
 * The source of triggered runs (SPEC 8): says which window of a live flow is due and reads its rows; the
 * decision pipeline does the rest (decision-pipeline.ts). One run:
 *   window (cursor, newest visible_at] → trigger rows (trigger-window.ts) → the pipeline: contact state →
 *   decide → rendered messages (off this thread) → one transaction (FlowStore.advance): the decisions and
 *   outbox rows (SendStore.record), the entries of flows with steps + the cursor advance → after the commit.
 * Why every visible event falls in exactly one window: visible_at is assigned inside the (serialized)
 * compaction transaction and grows with each commit, so once the window end is read every event with
 * visible_at ≤ end is committed (a commit in flight gets a later visible_at) and the trigger query sees it,
 * while the placeholders keep every later event for a later window. A narrowed window ends on a commit.
 * Why a send key is never decided twice: runs of one org never overlap in this process (each takes a turn
 * of its org, org-turns.ts), and the final transaction writes nothing unless the cursor is still where the
 * run started.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Context } from '../../../core/context.js';
import type { Metrics } from '../../../ops/metrics.js';
import { PeriodicTask } from '../../../core/periodic-task.js';
import { QueryFailed } from '../../triggers/sandbox.js';
import { SandboxBusy, SandboxPaused } from '../../../db/untrusted.js';
import { StorageUnavailable } from '../../../core/unavailable.js';
import type { LiveQuery, TriggerStore } from '../../triggers/trigger-store.js';
import type { EnteredSteps, RenderedDecision } from '../rules/decision.js';
import type { FlowDefinition } from '../../../generated/flow.js';
import type { FlowRecord, FlowStore } from '../store/flow-store.js';
import type { SendStore } from '../store/send-store.js';
import type { WaitStore } from '../store/wait-store.js';
import { FoldBehind } from './contact-fold.js';
import { type DecisionPipeline, ofFlow } from './decision-pipeline.js';
import { DueRuns } from './due-runs.js';
import type { OrgTurns } from './org-turns.js';
import { runsOnCommit } from './run-schedule.js';
import { simulate, type Simulation } from './simulate.js';
import { eligibility, type Eligibility } from './eligibility.js';
import { decideWindow, readWindow, type WindowDeps } from './trigger-window.js';

export type { Simulation } from './simulate.js';

export interface RunSummary {
  /** Why nothing ran, when nothing did. */
  skipped?: string;
  rows: number;
  decisions: RenderedDecision[];
  /** The window was narrowed to TRIGGER_MAX_ROWS rows: the next run goes on from where this one ended. */
  more?: boolean;
}

const TICK_MS = 100;

export class TriggerRuns {
  /** Orgs that stored new events since the last look: their real-time flows are due in the next look. */
  private readonly committed = new Set<string>();
  private readonly due: DueRuns;
  private readonly ticker = new PeriodicTask(
    () => this.runDue(),
    (err) => this.deps.logger.error({ err }, 'running due flows failed'),
  );

  constructor(
    private readonly deps: WindowDeps & {
      ctx: Context;
      /** The orgs' turns: a run takes one (org-turns.ts). */
      turns: Pick<OrgTurns, 'run' | 'settled'>;
      /** The decision pipeline every source feeds (decision-pipeline.ts). */
      pipeline: Pick<DecisionPipeline, 'folded' | 'decide' | 'commit'>;
      flows: FlowStore;
      sends: Pick<SendStore, 'usedKeys' | 'record'>;
      triggers: Pick<TriggerStore, 'live'>;
      metrics: Pick<Metrics, 'triggerRunSeconds' | 'triggerQuerySeconds'>;
      logger: FastifyBaseLogger;
      /** Entries of flows with steps: written with the run's decisions (step-entries.ts moves them on). */
      waits: Pick<WaitStore, 'enter'>;
    },
  ) {
    this.due = new DueRuns({
      turns: deps.turns,
      clock: deps.ctx.clock,
      flows: deps.flows,
      run: (flow) => this.runNow(flow.org, flow.definition.id),
      onError: (err, org, flow) => deps.logger.error({ err, org, flow }, flow === undefined ? 'running due flows failed' : 'flow run failed'),
    });
  }

  start(): void {
    this.ticker.start(TICK_MS);
  }

  /** No run starts from now; resolves when the runs in progress have ended. */
  async close(): Promise<void> {
    await this.ticker.stop();
    await this.due.close();
  }

  /** The org was deleted (its flows forgotten already): forgets its schedule, waits for its runs in progress. */
  forgetOrg(org: string): Promise<void> {
    return this.due.forget(org);
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
   * Has every live flow whose schedule is due, or that runs in real time and whose org stored new events,
   * run: one per turn of its org, orgs round-robin (due-runs.ts). Does not wait for the runs.
   */
  runDue(): Promise<void> {
    const committed = new Set(this.committed);
    this.committed.clear();
    void this.due.look(committed);
    return Promise.resolve();
  }

  /**
   * One run of one flow now, whatever its schedule, in a turn of its org. Runs of one org never overlap
   * (the tick and `POST …/run` may race): a flow's window is decided once, and the org's frequency caps
   * count every send decided before.
   */
  run(org: string, id: string): Promise<RunSummary> {
    return this.deps.turns.run(org, () => this.runNow(org, id));
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
      const read = await readWindow(this.deps, org, trigger, segment, window.start, window.end);
      // Rows resolve to contacts (a user_id through its profile) and are decided on contact state: both as
      // of every event acknowledged before the run (contact-fold.ts).
      const folded = await this.deps.pipeline.folded('trigger', org);
      const now = folded.at;
      const decisions = await decideWindow(this.deps, this.deps.pipeline, org, flow.definition, read, window.start, folded);
      // Runs of one flow are serialized here; the cursor check in advance() keeps a second process or a
      // restarted runner from writing a window twice.
      const advance = () =>
        this.deps.flows.advance(org, id, { from: window.start, to: read.end }, now, async (c) => {
          await this.deps.sends.record(c, org, { id, transactional: flow.definition.transactional ?? false }, trigger.hash, decisions, now);
          await this.deps.waits.enter(c, org, id, trigger.hash, decisions.filter((d): d is EnteredSteps => d.outcome === 'entered'), read.end, now);
        }).then((done) => done || undefined);
      const committed = await this.deps.pipeline.commit(org, advance, () => ({ decisions: ofFlow(id, decisions) }));
      if (!committed) return { skipped: 'the flow moved on while this run read its window', rows: 0, decisions: [] };
      return { rows: read.rows.length, decisions, ...(read.end < window.end ? { more: true } : {}) };
    } catch (error) {
      if (error instanceof QueryFailed) return this.fail(flow, error.reason);
      // The cursor stays: the run comes again at the next tick (audience_flow_fold_behind_total counts it).
      if (error instanceof FoldBehind) return this.tryAgain(org, error);
      // Nothing ran (no capacity, the org paused after a runaway query, the storage process restarting): the cursor stays, the next run tries again.
      if (error instanceof SandboxBusy || error instanceof SandboxPaused || error instanceof StorageUnavailable) return this.fail(flow, `the window was not read: ${error.message}`);
      throw error;
    } finally {
      stopTimer();
    }
  }

  /** What a run would decide now for one contact if the flow's trigger fired for it (eligibility.ts). */
  eligibility(org: string, flow: FlowDefinition, email: string, window: () => Promise<{ start: bigint; end: bigint }>): Promise<Eligibility> {
    return eligibility(this.deps, org, flow, email, window);
  }

  /** What the flow would do now for one contact (simulate.ts); `flow` may be a draft. */
  simulate(org: string, flow: FlowDefinition, email: string, window: { start: bigint; end: bigint }, trigger?: LiveQuery): Promise<Simulation> {
    return simulate(this.deps, org, flow, email, window, trigger);
  }

  /** The run's window (cursor, newest visible_at], or undefined when nothing new is visible. */
  private async nextWindow(flow: FlowRecord): Promise<{ start: bigint; end: bigint } | undefined> {
    const window = await this.deps.flows.window(flow.org, flow.definition.id);
    if (!window || window.end > window.start) return window;
    await this.deps.flows.ranEmpty(flow.org, flow.definition.id, this.deps.ctx.clock.now());
    return undefined;
  }

  /** Nothing decided now: the org's real-time flows look again at the next tick. */
  private tryAgain(org: string, error: FoldBehind): RunSummary {
    this.committed.add(org);
    return { skipped: error.message, rows: 0, decisions: [] };
  }

  private async fail(flow: FlowRecord, reason: string): Promise<RunSummary> {
    this.deps.logger.warn({ org: flow.org, flow: flow.definition.id, reason }, 'flow run did not run its window');
    await this.deps.flows.runFailed(flow.org, flow.definition.id, this.deps.ctx.clock.now(), reason);
    return { skipped: reason, rows: 0, decisions: [] };
  }
}
