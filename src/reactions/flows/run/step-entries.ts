/**
 * The source of step entries (issue 26): moves the entries of flows with steps along: `wait` (until a time), `waitUntil` (until the
 * contact's event arrives, or a timeout), message steps, and the flow's `exit` event. Entries are rows
 * of flow_waits (wait-store.ts), written by the run that decided them; a pass per org, in the org's turn
 * (no run decides meanwhile), reads what is due by due_at and what arrived events move on (a join with
 * events), moves each entry until it waits again or ends, and writes in ONE transaction: the entries'
 * new state, the message sends (outbox rows) and the decisions. So a kill -9 before the commit repeats
 * the pass (nothing was written), and after it the outbox rules apply: no message twice, none lost.
 *
 * A message step is decided when it is reached, by the decision pipeline (decision-pipeline.ts) with the
 * rule of rules/step-message.ts: a contact suppressed or unsubscribed meanwhile leaves the flow; one over a
 * frequency cap skips the message and goes on; inside quiet hours the step waits for their end. Its send
 * key is (entry, step). The entries' moves are step-move.ts.
 *
 * Nothing is held per entry in memory: per org, when its next entry is due, and the event mark seen.
 */
import type { FastifyBaseLogger } from 'fastify';
import { groupBy } from '../../../core/domain.js';
import type { Context } from '../../../core/context.js';
import type { OrgStorage } from '../../../db/org-storage.js';
import { PeriodicTask } from '../../../core/periodic-task.js';
import { newestVisibleAt } from '../../../events/compaction/visible-at.js';
import type { ProfileIndex } from '../../../events/profiles/profile-index.js';
import type { MessageStep } from '../../../generated/flow.js';
import type { TriggerStore } from '../../triggers/trigger-store.js';
import type { Decision, TemplateData, ToRender } from '../rules/decision.js';
import { matches } from '../rules/condition.js';
import { stepMessage } from '../rules/step-message.js';
import type { FlowRecord, FlowStore } from '../store/flow-store.js';
import type { SendStore } from '../store/send-store.js';
import type { WaitStore } from '../store/wait-store.js';
import type { ContactState } from './contact-state.js';
import { FoldBehind, type Folded } from './contact-fold.js';
import type { DecisionPipeline } from './decision-pipeline.js';
import type { DueAt } from './due-at.js';
import { OrgJobs } from './org-jobs.js';
import type { OrgTurns } from './org-turns.js';
import { candidatesOf, Move } from './step-move.js';
import { arrivalsOf } from './step-arrivals.js';

/** How often orgs are looked at: an entry moves on within about this of its due time or its event. */
export const STEPS_TICK_MS = 1000;
/** Entries one pass moves at most (a pass holds the org's turn; the next tick goes on). */
const PASS_ENTRIES = 5_000;


/** What a pass did, for the caller and the tests. */
export interface PassSummary {
  moved: number;
  sent: number;
  exited: number;
  /** The pass took as many entries as one may: more may be due. */
  more: boolean;
}

export class StepEntries {
  /** Per org, the newest visible_at its last pass looked at events through. */
  private readonly seen = new Map<string, bigint>();
  private readonly jobs = new OrgJobs(
    (org) => this.step(org),
    (err, org) => this.deps.logger.error({ err, org }, 'moving flow entries along their steps failed'),
  );
  private closing = false;
  private readonly ticker = new PeriodicTask(
    () => {
      this.offerAll();
      return Promise.resolve();
    },
    (err) => this.deps.logger.error({ err }, 'moving flow entries along their steps failed'),
  );

  constructor(
    private readonly deps: {
      orgs: OrgStorage;
      waits: WaitStore;
      sends: Pick<SendStore, 'record' | 'recordStepDecisions'>;
      flows: Pick<FlowStore, 'live'>;
      triggers: Pick<TriggerStore, 'live'>;
      profiles: Pick<ProfileIndex, 'find'>;
      /** The orgs' turns: a pass takes one (org-turns.ts). */
      turns: Pick<OrgTurns, 'run'>;
      /** The decision pipeline every source feeds (decision-pipeline.ts). */
      pipeline: Pick<DecisionPipeline, 'folded' | 'decide' | 'commit'>;
      /** Per org, when its next entry is due (a run that entered some notes it through the pipeline). */
      due: DueAt;
      ctx: Context;
      logger: FastifyBaseLogger;
      /** TRIGGER_TIMEOUT_MS and TRIGGER_MAX_ROWS, for waits on a trigger's rows. */
      timeoutMs: number;
      maxRows: number;
    },
  ) {}

  /** Entries of the org are due at `at` (a run entered them, or a start found them). */
  noteDue(org: string, at: number): void {
    this.deps.due.note(org, at);
  }

  /** What earlier processes left in these orgs' steps. */
  async load(orgs: readonly string[]): Promise<void> {
    for (const org of orgs) {
      const next = await this.deps.waits.nextDue(org, steppedFlows(this.deps.flows.live(), org).map((f) => f.definition.id)).catch((err: unknown) => {
        this.deps.logger.warn({ err, org }, 'reading flow entries in their steps failed');
        return null;
      });
      if (next !== null) this.noteDue(org, next);
    }
  }

  start(): void {
    this.ticker.start(STEPS_TICK_MS);
  }

  /** The org stored new events: an entry waiting for one moves on now, not at the next tick. */
  noteCommitted(orgs: readonly string[]): void {
    const stepped = new Set(steppedFlows(this.deps.flows.live()).map((f) => f.org));
    if (orgs.some((org) => stepped.has(org))) this.ticker.kick();
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.ticker.stop();
    await this.jobs.close();
  }

  forgetOrg(org: string): void {
    this.deps.due.forget(org);
    this.seen.delete(org);
  }

  /**
   * Every org with flows with steps looks whether an entry is due, or events were stored since its last
   * pass that an entry may wait for, and passes if so (a job per org: orgs do not wait for each other's
   * passes, and each pass takes a turn of its org). Resolves when those passes are done (tests); the
   * ticker does not wait for them.
   */
  async tick(): Promise<void> {
    await Promise.all(this.offerAll());
  }

  private offerAll(): Array<Promise<void>> {
    const orgs = new Set(steppedFlows(this.deps.flows.live()).map((f) => f.org));
    return [...orgs].map((org) => this.jobs.offer(org));
  }

  /** One org's look, and its passes while a pass takes as many entries as one may. */
  private async step(org: string): Promise<void> {
    const now = this.deps.ctx.clock.now();
    const due = (this.deps.due.get(org) ?? Infinity) <= now;
    const arrived = due ? false : await this.eventsArrived(org).catch((err: unknown) => {
      this.deps.logger.error({ err, org }, 'looking for events that flow entries wait for failed');
      return false;
    });
    if (!due && !arrived) return;
    // Each pass takes a turn of the org: other work of the org, and other orgs, take theirs between passes.
    for (let more = true; more && !this.closing; ) {
      more = await this.pass(org).then(
        (summary) => summary.more,
        (err: unknown) => {
          this.noteDue(org, now + STEPS_TICK_MS * 10);
          // The fold behind: counted in audience_flow_fold_behind_total, not an error of this org.
          if (!(err instanceof FoldBehind)) this.deps.logger.error({ err, org }, 'moving flow entries along their steps failed; tried again shortly');
          return false;
        },
      );
    }
  }

  /** Events were stored since the last pass and some entry of the org waits for one. */
  private async eventsArrived(org: string): Promise<boolean> {
    const end = await this.newest(org);
    if (end <= (this.seen.get(org) ?? -1n)) return false;
    const flows = steppedFlows(this.deps.flows.live(), org);
    const exits = flows.filter((f) => f.definition.exit).map((f) => f.definition.id);
    if (await this.deps.waits.anyWaitingOnEvents(org, exits)) return true;
    this.seen.set(org, end);
    return false;
  }

  /** One pass over the org's live flows with steps (the tick's, or a test's); returns what it did. */
  pass(org: string): Promise<PassSummary> {
    return this.deps.turns.run(org, async () => {
      const summary: PassSummary = { moved: 0, sent: 0, exited: 0, more: false };
      const flows = new Map(steppedFlows(this.deps.flows.live(), org).map((f) => [f.definition.id, f.definition]));
      if (flows.size === 0) return summary;
      // What is due, and what arrived, as of `now` once every event acknowledged before it is stored and
      // folded: an order acknowledged before a waitUntil's timeout ends the wait, whatever compaction's lag.
      const folded = await this.deps.pipeline.folded('step', org);
      const now = folded.at;
      const end = await this.newest(org);
      const seen = this.seen.get(org);
      const arrivals = await arrivalsOf(this.deps, org, end, [...flows.values()], seen ?? null, PASS_ENTRIES);
      const rows = await this.deps.waits.due(org, [...flows.keys()], now, [...arrivals.keys()], PASS_ENTRIES);
      const moves = new Map(rows.map((r) => [r.entryId, new Move(r, flows.get(r.flowId)!)]));
      // Entries a run wrote since the last pass: arrivals() above takes waiting entries only, so the events
      // since each one's run are read here (a first pass after its run may come after its event was stored).
      const fresh = rows.filter((r) => r.step === 0 && !r.waiting);
      for (const a of await this.deps.waits.arrivalsOf(org, end, fresh.flatMap((r) => candidatesOf(r, flows.get(r.flowId)!)))) arrivals.set(a.entryId, a);

      for (const [id, arrival] of arrivals) moves.get(id)?.arrived(arrival);
      // Moves every entry to its next message step (decided together below), then on, until each waits or ends.
      for (let round = 0; round <= 50; round++) {
        for (const move of moves.values()) move.advance(now, end);
        const atMessage = [...moves.values()].filter((m) => m.atMessage(now));
        if (atMessage.length === 0) break;
        await this.decideMessages(org, atMessage, folded);
      }

      const removed = [...moves.values()].filter((m) => m.ended !== null);
      const kept = [...moves.values()].filter((m) => m.ended === null && m.changed).map((m) => m.row);
      const decisions = [...moves.values()].flatMap((m) => m.decisions);
      const write = () =>
        this.deps.orgs.org(org).transaction(async (c) => {
          await this.deps.waits.replace(c, org, removed.map((m) => m.row.entryId), kept);
          // Each entry keeps the trigger version that entered it.
          for (const group of groupBy(decisions, (d) => `${d.flowId}\u0000${d.triggerHash}`).values()) {
            const { flowId, triggerHash } = group[0]!;
            const flow = flows.get(flowId)!;
            await this.deps.sends.record(c, org, { id: flowId, transactional: flow.transactional ?? false }, triggerHash, group.flatMap((d) => (d.sent ? [d.sent] : [])), now);
            await this.deps.sends.recordStepDecisions(c, org, group.flatMap((d) => (d.sent ? [] : [d])), now);
          }
          return true;
        });
      await this.deps.pipeline.commit(org, write, () => ({
        decisions: decisions.flatMap((d) => (d.sent ? [{ flowId: d.flowId, decision: d.sent }] : [])),
        outcomes: decisions.flatMap((d) => (d.sent ? [] : [d.outcome])),
      }));
      // Arrivals past the limit are read again next pass: the mark moves only when all were taken.
      const allArrivals = arrivals.size < PASS_ENTRIES;
      if (allArrivals) this.seen.set(org, end);

      const sent = decisions.filter((d) => d.sent?.outcome === 'sent').length;
      const next = await this.deps.waits.nextDue(org, [...flows.keys()]);
      this.deps.due.forget(org);
      if (next !== null) this.noteDue(org, next);
      summary.more = rows.length >= PASS_ENTRIES || !allArrivals;
      summary.moved = [...moves.values()].filter((m) => m.changed || m.ended !== null).length;
      summary.sent = sent;
      summary.exited = decisions.filter((d) => d.outcome === 'exited').length;
      return summary;
    });
  }

  /** The newest visible_at of the org's events (µs), 0 when it has none. */
  private newest(org: string): Promise<bigint> {
    return newestVisibleAt(this.deps.orgs.org(org));
  }

  /** The message step each of `moves` is at, decided for its contact now by the pipeline (rules/step-message.ts) and rendered. */
  private async decideMessages(org: string, moves: Move[], folded: Folded): Promise<void> {
    const now = folded.at;
    for (const group of groupBy(moves, (m) => m.flow.id).values()) {
      const flow = group[0]!.flow;
      const sending: Move[] = [];
      const rules = (state: ContactState): Promise<Decision[]> => {
        const jobs: ToRender[] = [];
        for (const move of group) {
          const { email } = move.row;
          const step = move.step as MessageStep;
          const data: TemplateData = {
            ...move.row.data,
            contact: { ...(state.profile('email', email) ?? { email_address: email }) },
            unsubscribe_url: state.unsubscribeUrl(email),
            wait: { outcome: move.row.lastWait },
          };
          const message = step.branches?.find((b) => matches(b.when, data))?.message ?? step.message;
          const rule = stepMessage(email, message.channel, now, state);
          if (rule.kind === 'exit') move.exit(rule.outcome, rule.reason);
          else if (rule.kind === 'skip') move.skip(rule.outcome, rule.reason);
          else if (rule.kind === 'hold') move.holdUntil(rule.until);
          else {
            sending.push(move);
            jobs.push(move.toRender(org, { message, data }));
          }
        }
        return Promise.resolve(jobs);
      };
      const noFacts = () => Promise.resolve(undefined);
      const rendered = await this.deps.pipeline.decide(org, flow, [...new Set(group.map((m) => m.row.email))], folded, noFacts, rules);
      rendered.forEach((d, i) => sending[i]!.sentOrFailed(d));
    }
  }
}

/** The live flows with steps (of one org). */
function steppedFlows(flows: readonly FlowRecord[], org?: string): FlowRecord[] {
  return flows.filter((f) => f.definition.steps && (org === undefined || f.org === org));
}
