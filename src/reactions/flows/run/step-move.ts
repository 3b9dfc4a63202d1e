/**
 * One entry moving along its steps in a pass of step-entries.ts (in memory until the pass commits): through
 * waits that ended and into new waits, stopping at a message step (decided by the pass, through the
 * decision pipeline), a wait, or the end.
 */
import { assertNever } from '../../../core/domain.js';
import type { FlowDefinition, Step } from '../../../generated/flow.js';
import type { RenderedDecision, ToRender } from '../rules/decision.js';
import { sendIdFor } from '../rules/send-id.js';
import { isStoredEventName } from '../rules/stored-event.js';
import type { StepDecision } from '../store/send-store.js';
import { movesAt } from '../store/wait-due.js';
import type { Arrival, WaitRow } from '../store/wait-store.js';

/** A decision of a step: a message sent (`sent`, recorded in the outbox) or why not, or the entry's exit. */
export interface StepRecord extends StepDecision {
  sent?: RenderedDecision;
}

/** One entry moving along its steps in a pass (in memory until the pass commits). */
export class Move {
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
        this.set({ waiting: true, dueAt: this.row.step === 0 ? movesAt(this.row, step) : now + step.wait.seconds * 1000 });
      } else if ('waitUntil' in step) {
        // A first step waits from the entry (an event stored since the run that entered it counts).
        const since = this.row.step === 0 ? this.row.enteredSince : end;
        this.set({ waiting: true, untilEvent: step.waitUntil.event, since, dueAt: this.row.step === 0 ? movesAt(this.row, step) : now + step.waitUntil.timeoutSeconds * 1000 });
      } else if ('message' in step) return; // decided by the pass (StepEntries.decideMessages)
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
export function candidatesOf(row: WaitRow, flow: FlowDefinition): Array<Arrival & { email: string; mark: bigint; eventTime: number }> {
  const base = { entryId: row.entryId, email: row.email, mark: row.enteredSince, eventTime: row.enteredEventTime };
  const first = flow.steps?.[0];
  return [
    ...(flow.exit && isStoredEventName(flow.exit.event) ? [{ ...base, kind: 'exit' as const, event: flow.exit.event }] : []),
    ...(first && 'waitUntil' in first && isStoredEventName(first.waitUntil.event) ? [{ ...base, kind: 'until' as const, event: first.waitUntil.event }] : []),
  ];
}
