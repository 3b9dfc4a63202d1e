/**
 * The path an entry of a flow with steps would take from now (a simulation's journey preview): each step
 * with the latest time it is reached — every wait before it running to its end, a waitUntil's event not
 * arriving — and, for a message step, the branch whose condition holds on the contact as stored now.
 * Where a waitUntil's event would move the entry on at once (`then: continue`), the branch taken then.
 * A projection, not a promise: the contact, consent and caps are read again when each step is reached.
 */
import type { FlowDefinition, Step } from '../../../generated/flow.js';
import { matches } from './condition.js';
import type { EntryData, TemplateData } from './decision.js';

export interface JourneyStep {
  step: number;
  kind: 'wait' | 'waitUntil' | 'message';
  /** The latest the entry reaches the step (ISO), every wait before it running out. */
  at: string;
  /** A wait: when it ends; a waitUntil: its timeout. */
  until: string | null;
  /** A waitUntil: the event that ends it early. */
  event: string | null;
  /** A message step: the index of its branch that would send (null: the step's own message). */
  branch: number | null;
  /** A message step after a `then: continue` waitUntil: the branch if that event came instead. */
  branchIfEvent: number | null;
}

/** The journey of an entry with `data` (as the run keeps it) for a contact whose profile is `contact`, entered at `now` (epoch ms). */
export function journeyOf(flow: FlowDefinition, data: EntryData, contact: Record<string, unknown>, now: number): JourneyStep[] {
  let at = now;
  let lastWait: 'event' | 'timeout' | null = null;
  let eventMayContinue = false;
  const branchFor = (step: Step, outcome: 'event' | 'timeout' | null): number | null => {
    if (!('message' in step) || !step.branches) return null;
    const template: Pick<TemplateData, 'event' | 'flow' | 'variant' | 'contact' | 'wait'> = { ...data, contact, wait: { outcome } };
    const index = step.branches.findIndex((b) => matches(b.when, template));
    return index === -1 ? null : index;
  };
  return (flow.steps ?? []).map((step, index) => {
    const reached = new Date(at).toISOString();
    if ('message' in step) {
      return { step: index, kind: 'message', at: reached, until: null, event: null, branch: branchFor(step, lastWait), branchIfEvent: eventMayContinue ? branchFor(step, 'event') : null };
    }
    const seconds = 'wait' in step ? step.wait.seconds : step.waitUntil.timeoutSeconds;
    at += seconds * 1000;
    const until = new Date(at).toISOString();
    if ('wait' in step) return { step: index, kind: 'wait', at: reached, until, event: null, branch: null, branchIfEvent: null };
    lastWait = 'timeout';
    eventMayContinue = step.then === 'continue';
    return { step: index, kind: 'waitUntil', at: reached, until, event: step.waitUntil.event, branch: null, branchIfEvent: null };
  });
}
