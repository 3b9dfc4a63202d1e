/**
 * Moves the entries of flows with steps along (issue 26): `wait` (until a time), `waitUntil` (until the
 * contact's event arrives, or a timeout), message steps, and the flow's `exit` event. Entries are rows
 * of flow_waits (wait-store.ts), written by the run that decided them; a pass per org, in the org's turn
 * (no run decides meanwhile), reads what is due by due_at and what arrived events move on (a join with
 * events), moves each entry until it waits again or ends, and writes in ONE transaction: the entries'
 * new state, the message sends (outbox rows) and the decisions. So a kill -9 before the commit repeats
 * the pass (nothing was written), and after it the outbox rules apply: no message twice, none lost.
 *
 * A message step is decided when it is reached, as DeferredSends decides at the end of quiet hours: a
 * contact suppressed or unsubscribed meanwhile leaves the flow; one over a frequency cap skips the message
 * and goes on; inside quiet hours the step waits for their end. Its send key is (entry, step).
 *
 * Nothing is held per entry in memory: per org, when its next entry is due, and the event mark seen.
 */
import type { FastifyBaseLogger } from 'fastify';
import { assertNever, groupBy } from '../../core/domain.js';
import type { Context } from '../../core/context.js';
import type { OrgStorage } from '../../db/org-storage.js';
import type { QuietHours } from '../../core/quiet-hours.js';
import { PeriodicTask } from '../../core/periodic-task.js';
import { newestVisibleAt } from '../../events/compaction/visible-at.js';
import type { ProfileIndex } from '../../events/profiles/profile-index.js';
import type { FlowDefinition, MessageStep, Step } from '../../generated/flow.js';
import type { FrequencyCaps } from '../../generated/org.js';
import type { Metrics } from '../../ops/metrics.js';
import type { ConsentStore } from '../consent/consent-store.js';
import type { UnsubscribeLinks } from '../consent/unsubscribe-link.js';
import { runSandboxed, windowOf, withSandbox } from '../triggers/sandbox.js';
import type { TriggerStore } from '../triggers/trigger-store.js';
import { resolveEmail, textOf, type RenderedDecision, type ToRender } from './decide.js';
import { matches } from './condition.js';
import { contactState } from './contact-state.js';
import type { FlowRecord, FlowStore } from './flow-store.js';
import type { TemplateData } from './render.js';
import type { PendingSend, SendDispatcher } from './send-dispatcher.js';
import { sendIdFor } from './send-id.js';
import type { SendStore, StepDecision } from './send-store.js';
import { renderDecisions, type TemplateRenderer } from './template-renderer.js';
import type { Arrival, MatchTarget, WaitRow, WaitStore } from './wait-store.js';

/** How often orgs are looked at: an entry moves on within about this of its due time or its event. */
export const STEPS_TICK_MS = 1000;
/** Entries one pass moves at most (a pass holds the org's turn; the next tick goes on). */
const PASS_ENTRIES = 5_000;

/** Names a stored event (events.event_name) rather than a trigger: predefined names and custom_*. */
const STORED_EVENT = /^(page_view|product_view|add_to_cart|remove_from_cart|update_cart|cart|complete_transaction|registration|authentication|favorite|waitlist|search|identify|alias|custom_[\s\S]{1,38})$/;

export function isStoredEventName(name: string): boolean {
  return STORED_EVENT.test(name);
}

/** What a pass did, for the caller and the tests. */
export interface PassSummary {
  moved: number;
  sent: number;
  exited: number;
  /** The pass took as many entries as one may: more may be due. */
  more: boolean;
}

export class FlowSteps {
  /** Per org, when its next entry is due (orgs with none absent). */
  private readonly due = new Map<string, number>();
  /** Per org, the newest visible_at its last pass looked at events through. */
  private readonly seen = new Map<string, bigint>();
  private passing: Promise<void> | undefined;
  private readonly ticker = new PeriodicTask(
    () => this.tick(),
    (err) => this.deps.logger.error({ err }, 'moving flow entries along their steps failed'),
  );

  constructor(
    private readonly deps: {
      orgs: OrgStorage;
      waits: WaitStore;
      sends: SendStore;
      flows: Pick<FlowStore, 'live'>;
      triggers: Pick<TriggerStore, 'live'>;
      profiles: Pick<ProfileIndex, 'find'>;
      consent: Pick<ConsentStore, 'unsubscribed'>;
      links: Pick<UnsubscribeLinks, 'forFlow'>;
      renderer: Pick<TemplateRenderer, 'render'>;
      capsOf(org: string): FrequencyCaps;
      quietHoursOf(org: string): { quietHours?: QuietHours | undefined; timeZone: string };
      /** Runs `work` in the org's turn (FlowRunner.exclusive). */
      exclusive<T>(org: string, work: () => Promise<T>): Promise<T>;
      dispatcher: Pick<SendDispatcher, 'enqueue'>;
      ctx: Context;
      metrics: Pick<Metrics, 'flowDecisions'>;
      logger: FastifyBaseLogger;
      /** TRIGGER_TIMEOUT_MS and TRIGGER_MAX_ROWS, for waits on a trigger's rows. */
      timeoutMs: number;
      maxRows: number;
    },
  ) {}

  /** Entries of the org are due at `at` (a run entered them, or a start found them). */
  noteDue(org: string, at: number): void {
    const known = this.due.get(org);
    if (known === undefined || at < known) this.due.set(org, at);
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
    await this.ticker.stop();
    await this.passing;
  }

  forgetOrg(org: string): void {
    this.due.delete(org);
    this.seen.delete(org);
  }

  /** Every org with an entry due, or with events stored since its last pass that an entry may wait for. */
  tick(): Promise<void> {
    this.passing ??= (async () => {
      const now = this.deps.ctx.clock.now();
      const orgs = new Set(steppedFlows(this.deps.flows.live()).map((f) => f.org));
      for (const org of orgs) {
        const due = (this.due.get(org) ?? Infinity) <= now;
        const arrived = due ? false : await this.eventsArrived(org).catch((err: unknown) => {
          this.deps.logger.error({ err, org }, 'looking for events that flow entries wait for failed');
          return false;
        });
        if (!due && !arrived) continue;
        // A full pass goes on at once (other work of the org takes its turn between passes).
        for (let more = true; more; ) {
          more = await this.pass(org).then(
            (summary) => summary.more,
            (err: unknown) => {
              this.noteDue(org, now + STEPS_TICK_MS * 10);
              this.deps.logger.error({ err, org }, 'moving flow entries along their steps failed; tried again shortly');
              return false;
            },
          );
        }
      }
    })().finally(() => (this.passing = undefined));
    return this.passing;
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
    return this.deps.exclusive(org, async () => {
      const summary: PassSummary = { moved: 0, sent: 0, exited: 0, more: false };
      const flows = new Map(steppedFlows(this.deps.flows.live(), org).map((f) => [f.definition.id, f.definition]));
      if (flows.size === 0) return summary;
      const now = this.deps.ctx.clock.now();
      const end = await this.newest(org);
      const seen = this.seen.get(org);
      const arrivals = await this.arrivals(org, end, [...flows.values()], seen ?? null);
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
        await this.decideMessages(org, atMessage, now);
      }

      const removed = [...moves.values()].filter((m) => m.ended !== null);
      const kept = [...moves.values()].filter((m) => m.ended === null && m.changed).map((m) => m.row);
      const decisions = [...moves.values()].flatMap((m) => m.decisions);
      await this.deps.orgs.org(org).transaction(async (c) => {
        await this.deps.waits.replace(c, org, removed.map((m) => m.row.entryId), kept);
        // Each entry keeps the trigger version that entered it.
        for (const group of groupBy(decisions, (d) => `${d.flowId}\u0000${d.triggerHash}`).values()) {
          const { flowId, triggerHash } = group[0]!;
          const flow = flows.get(flowId)!;
          await this.deps.sends.record(c, org, { id: flowId, transactional: flow.transactional ?? false }, triggerHash, group.flatMap((d) => (d.sent ? [d.sent] : [])), now);
          await this.deps.sends.recordStepDecisions(c, org, group.flatMap((d) => (d.sent ? [] : [d])), now);
        }
      });
      // Arrivals past the limit are read again next pass: the mark moves only when all were taken.
      const allArrivals = arrivals.size < PASS_ENTRIES;
      if (allArrivals) this.seen.set(org, end);

      const sends: PendingSend[] = [];
      for (const d of decisions) {
        this.deps.metrics.flowDecisions.inc({ outcome: d.outcome });
        if (d.sent?.outcome === 'sent') sends.push({ sendId: d.sent.sendId, org, flowId: d.flowId, email: d.email, eventId: d.sent.eventId, variant: d.sent.variant, message: d.sent.message });
      }
      this.deps.dispatcher.enqueue(sends);
      const next = await this.deps.waits.nextDue(org, [...flows.keys()]);
      this.due.delete(org);
      if (next !== null) this.noteDue(org, next);
      summary.more = rows.length >= PASS_ENTRIES || !allArrivals;
      summary.moved = [...moves.values()].filter((m) => m.changed || m.ended !== null).length;
      summary.sent = sends.length;
      summary.exited = decisions.filter((d) => d.outcome === 'exited').length;
      return summary;
    });
  }

  /** The newest visible_at of the org's events (µs), 0 when it has none. */
  private newest(org: string): Promise<bigint> {
    return this.deps.orgs.org(org).exclusive(newestVisibleAt);
  }

  /** Entries an event stored up to `end` (after `seen`, when known) moves on: by event name in SQL, by a trigger's rows here. */
  private async arrivals(org: string, end: bigint, flows: readonly FlowDefinition[], seen: bigint | null): Promise<Map<string, Arrival>> {
    const found = new Map<string, Arrival>();
    const exits = flows.flatMap((f) => (f.exit ? [{ kind: 'exit' as const, flowId: f.id, event: f.exit.event }] : []));
    const note = (a: Arrival) => {
      if (!found.has(a.entryId) || a.kind === 'exit') found.set(a.entryId, a);
    };
    for (const a of await this.deps.waits.arrivals(org, end, exits.filter((x) => isStoredEventName(x.event)), seen, PASS_ENTRIES)) note(a);
    const untils = [...new Set(flows.flatMap((f) => (f.steps ?? []).flatMap((s) => ('waitUntil' in s ? [s.waitUntil.event] : []))))];
    const targets: MatchTarget[] = [...exits, ...untils.map((event) => ({ kind: 'until' as const, event }))].filter((x) => !isStoredEventName(x.event));
    for (const target of targets) for (const a of await this.triggerArrivals(org, end, target)) note(a);
    return found;
  }

  /**
   * Waits on a trigger's rows (a waitUntil or exit event naming a trigger): the trigger runs over the
   * window since the oldest such wait began (sandboxed, as a flow run runs it), and a row of the
   * contact with ts after an entry's mark moves that entry on.
   */
  private async triggerArrivals(org: string, end: bigint, target: MatchTarget): Promise<Arrival[]> {
    const trigger = this.deps.triggers.live(org, 'trigger', target.event);
    const from = await this.deps.waits.oldestMark(org, target);
    if (!trigger || from === null || from >= end) return [];
    const page = await withSandbox(this.deps.orgs.org(org), this.deps.timeoutMs, (c) => runSandboxed(c, trigger.checked, windowOf(from, end), this.deps.maxRows));
    const profile = (type: Parameters<ProfileIndex['find']>[1], value: string) => this.deps.profiles.find(org, type, value);
    const rows: Array<{ email: string; ts: number }> = [];
    for (const r of page.rows) {
      const email = resolveEmail(textOf(r.identity), textOf(r.identity_type), { profile });
      if (email && r.ts instanceof Date) rows.push({ email, ts: r.ts.getTime() });
    }
    return this.deps.waits.matchRows(org, target, rows);
  }

  /** The message step each of `moves` is at, decided for its contact now (the rules `decide` reads: contact-state.ts) and rendered. */
  private async decideMessages(org: string, moves: Move[], now: number): Promise<void> {
    const toRender: Array<{ move: Move; job: ToRender }> = [];
    for (const group of groupBy(moves, (m) => m.flow.id).values()) {
      const flow = group[0]!.flow;
      const state = await contactState(this.deps, org, flow, [...new Set(group.map((m) => m.row.email))], now);
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
        const [topic] = state.unsubscribed.get(email) ?? [];
        const capped = state.sendCounts.capped(email, message.channel, now);
        const quiet = state.quietUntil(email);
        if (state.suppressed.has(email)) move.exit('suppressed', 'the contact was erased with suppress: never messaged, whatever the flow');
        else if (topic) move.exit('unsubscribed', `the contact is unsubscribed from topic ${topic.topic} (${topic.source}): the entry ends`);
        else if (capped) move.skip('frequency_capped', `${capped}: this message is skipped, the entry goes on`);
        else if (quiet) move.holdUntil(quiet.at);
        else {
          state.sendCounts.add(email, message.channel, now);
          toRender.push({ move, job: move.toRender(org, { message, data }) });
        }
      }
    }
    const rendered = await renderDecisions(this.deps.renderer, toRender.map((t) => t.job));
    rendered.forEach((d, i) => toRender[i]!.move.sentOrFailed(d));
  }
}

/** A decision of a step: a message sent (`sent`, recorded in the outbox) or why not, or the entry's exit. */
interface StepRecord extends StepDecision {
  sent?: RenderedDecision;
}

/** One entry moving along its steps in a pass (in memory until the pass commits). */
class Move {
  row: WaitRow;
  changed = false;
  ended: string | null = null;
  readonly decisions: StepRecord[] = [];
  private arrival: Arrival | null = null;

  constructor(
    row: WaitRow,
    readonly flow: FlowDefinition,
  ) {
    this.row = { ...row };
  }

  get step(): Step | undefined {
    return this.flow.steps?.[this.row.step];
  }

  arrived(arrival: Arrival): void {
    this.arrival = arrival;
  }

  /** At a message step due now (one held by quiet hours is due at their end). */
  atMessage(now: number): boolean {
    const step = this.step;
    return this.ended === null && !this.row.waiting && step !== undefined && 'message' in step && this.row.dueAt <= now;
  }

  /** Moves on through waits that ended and into new waits, stopping at a message step, a wait, or the end. */
  advance(now: number, end: bigint): void {
    if (this.ended !== null) return;
    if (this.arrival?.kind === 'exit') return this.exit('exited', `the flow's exit event ${this.arrival.event} arrived`);
    for (;;) {
      const step = this.step;
      if (step === undefined) return this.end();
      if (this.row.waiting) {
        if ('waitUntil' in step && this.arrival?.kind === 'until') {
          this.arrival = null;
          if (step.then === 'exit') return this.exit('exited', `${step.waitUntil.event} arrived while waiting (then: exit)`);
          this.set({ step: this.row.step + 1, waiting: false, untilEvent: null, lastWait: 'event', dueAt: now });
        } else if (this.row.dueAt <= now) {
          this.set({ step: this.row.step + 1, waiting: false, untilEvent: null, dueAt: now, ...('waitUntil' in step ? { lastWait: 'timeout' as const } : {}) });
        } else return;
      } else if ('wait' in step) {
        this.set({ waiting: true, dueAt: now + step.wait.seconds * 1000 });
      } else if ('waitUntil' in step) {
        // A first step waits from the entry (an event stored since the run that entered it counts).
        const since = this.row.step === 0 ? this.row.enteredSince : end;
        this.set({ waiting: true, untilEvent: step.waitUntil.event, since, dueAt: now + step.waitUntil.timeoutSeconds * 1000 });
      } else if ('message' in step) return; // decided by the pass (FlowSteps.decideMessages)
      else assertNever(step);
    }
  }

  toRender(org: string, template: ToRender['template']): ToRender {
    const eventId = `${this.row.eventId}#${this.row.step}`;
    const { email } = this.row;
    return { identity: email, identityType: 'email', eventId, email, sendId: sendIdFor(org, this.flow.id, email, eventId), outcome: 'sent', variant: this.row.variant, reason: null, template };
  }

  sentOrFailed(decision: RenderedDecision): void {
    const { outcome } = decision;
    this.record(outcome, decision.reason, decision);
    this.set({ step: this.row.step + 1, waiting: false, dueAt: this.row.dueAt });
  }

  skip(outcome: 'frequency_capped', reason: string): void {
    this.record(outcome, reason);
    this.set({ step: this.row.step + 1, waiting: false });
  }

  /** Inside quiet hours: the message step waits for their end. */
  holdUntil(at: number): void {
    this.set({ dueAt: at });
  }

  exit(outcome: 'exited' | 'suppressed' | 'unsubscribed', reason: string): void {
    this.record(outcome, reason);
    this.ended = outcome;
  }

  private end(): void {
    this.ended = 'done';
  }

  private record(outcome: string, reason: string | null, sent?: RenderedDecision): void {
    const eventId = `${this.row.eventId}#${this.row.step}`;
    this.decisions.push({ flowId: this.flow.id, triggerHash: this.row.triggerHash, email: this.row.email, eventId, outcome, reason, variant: this.row.variant, sendId: sent?.sendId ?? null, ...(sent ? { sent } : {}) });
  }

  private set(change: Partial<WaitRow>): void {
    this.row = { ...this.row, ...change };
    this.changed = true;
  }
}

/** What a just-entered entry may already have seen arrive: its flow's exit event, and a first waitUntil's event (stored names only). */
function candidatesOf(row: WaitRow, flow: FlowDefinition): Array<Arrival & { email: string; mark: bigint; eventTime: number }> {
  const base = { entryId: row.entryId, email: row.email, mark: row.enteredSince, eventTime: row.enteredEventTime };
  const first = flow.steps?.[0];
  return [
    ...(flow.exit && isStoredEventName(flow.exit.event) ? [{ ...base, kind: 'exit' as const, event: flow.exit.event }] : []),
    ...(first && 'waitUntil' in first && isStoredEventName(first.waitUntil.event) ? [{ ...base, kind: 'until' as const, event: first.waitUntil.event }] : []),
  ];
}

/** The live flows with steps (of one org). */
function steppedFlows(flows: readonly FlowRecord[], org?: string): FlowRecord[] {
  return flows.filter((f) => f.definition.steps && (org === undefined || f.org === org));
}
