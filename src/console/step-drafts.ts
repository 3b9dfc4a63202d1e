/**
 * A flow's steps as the step editor edits them (step-editor.tsx): each step a draft whose fields are what
 * the inputs hold (a duration as an amount and a unit, a message's template as text), and back to the
 * `steps` and `exit` the service takes. A draft turns into a step only when saved or shown as JSON, so a
 * template half typed is never rewritten under the cursor.
 */
import type { FlowDefinition, Step } from '../generated/flow';
import type { Branch } from '../generated/message';
import { type BranchDraft, branchDraftsOf, branchesOf } from './flow-branches';
import { draftOf, type MessageDraft, messageOf } from './message-fields';

/** Seconds per unit, largest first. */
export const UNITS = [
  { seconds: 86_400, name: 'days' },
  { seconds: 3600, name: 'hours' },
  { seconds: 60, name: 'minutes' },
  { seconds: 1, name: 'seconds' },
] as const;

export interface Duration {
  amount: number;
  unit: number;
}

export type StepDraft =
  | { kind: 'wait'; duration: Duration }
  | { kind: 'waitUntil'; event: string; duration: Duration; then: 'continue' | 'exit' }
  | { kind: 'message'; message: MessageDraft; branches: BranchDraft[] };

export interface StepsDraft {
  steps: StepDraft[];
  /** The flow's exit event; empty: none. */
  exit: string;
}

/** The largest unit that divides the seconds exactly. */
export function durationOf(seconds: number): Duration {
  const unit = UNITS.find((u) => seconds % u.seconds === 0 && seconds >= u.seconds) ?? UNITS[3];
  return { amount: seconds / unit.seconds, unit: unit.seconds };
}

const secondsOf = (d: Duration) => Math.round(d.amount * d.unit);

/** What a new step of each kind starts as. */
export function newStep(kind: StepDraft['kind']): StepDraft {
  if (kind === 'wait') return { kind, duration: { amount: 1, unit: 86_400 } };
  if (kind === 'waitUntil') return { kind, event: 'custom_order_completed', duration: { amount: 1, unit: 3600 }, then: 'exit' };
  return { kind, message: draftOf(undefined, { subject: 'A message for you', template: '{"text": "Hello {{ contact.email_address }}"}' }), branches: [] };
}

export function stepDraftOf(step: Step): StepDraft {
  if ('wait' in step) return { kind: 'wait', duration: durationOf(step.wait.seconds) };
  if ('waitUntil' in step) return { kind: 'waitUntil', event: step.waitUntil.event, duration: durationOf(step.waitUntil.timeoutSeconds), then: step.then };
  return { kind: 'message', message: draftOf(step.message, { subject: '', template: '' }), branches: branchDraftsOf(step.branches) };
}

export function stepOf(draft: StepDraft): Step {
  if (draft.kind === 'wait') return { wait: { seconds: secondsOf(draft.duration) } };
  if (draft.kind === 'waitUntil') return { waitUntil: { event: draft.event.trim(), timeoutSeconds: secondsOf(draft.duration) }, then: draft.then };
  const branches: Branch[] = branchesOf(draft.branches, draft.message);
  return { message: messageOf(draft.message), ...(branches.length > 0 ? { branches } : {}) };
}

export function stepsDraftOf(definition: Pick<FlowDefinition, 'steps' | 'exit'>): StepsDraft {
  return { steps: (definition.steps ?? []).map(stepDraftOf), exit: definition.exit?.event ?? '' };
}

/** The `steps` and `exit` members of the definition. */
export function stepsOf(draft: StepsDraft): Pick<FlowDefinition, 'steps' | 'exit'> {
  const exit = draft.exit.trim();
  return { steps: draft.steps.map(stepOf), ...(exit ? { exit: { event: exit } } : {}) };
}

/** JSON with the members of every object in one order: two values that mean the same read the same. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v));
}

export const NOT_IN_FORMS =
  'The forms cannot show these steps exactly (a branch whose message is on another channel, URL or subject than its step’s, or a member the forms do not have): edit them as JSON.';

/** The forms' drafts of `steps` and `exit`, or undefined when saving them from the forms would change anything. */
export function draftInForms(members: Pick<FlowDefinition, 'steps' | 'exit'>): StepsDraft | undefined {
  const draft = stepsDraftOf(members);
  const same = canonical(stepsOf(draft)) === canonical({ steps: members.steps ?? [], ...(members.exit ? { exit: members.exit } : {}) });
  return same ? draft : undefined;
}

/** The advanced view's text parsed, or why it does not parse. */
export function readStepsJson(json: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(json) };
  } catch (e) {
    return { ok: false, error: `The steps are not JSON: ${(e as Error).message}` };
  }
}

/** JSON the advanced view shows, read back: the steps and exit, or why it cannot be read. */
export function parseStepsJson(json: string): { ok: true; draft: StepsDraft } | { ok: false; error: string } {
  const read = readStepsJson(json);
  if (!read.ok) return read;
  const parsed = read.value;
  if (!parsed || typeof parsed !== 'object' || !Array.isArray((parsed as { steps?: unknown }).steps)) return { ok: false, error: 'The JSON must be an object with a steps array (and, if any, exit: {"event": …}).' };
  const { steps, exit } = parsed as { steps: unknown[]; exit?: { event?: unknown } };
  const known = steps.every((s) => s !== null && typeof s === 'object' && ('wait' in s || 'waitUntil' in s || 'message' in s));
  if (!known) return { ok: false, error: 'Each step must be a wait, a waitUntil or a message.' };
  try {
    const draft = draftInForms({ steps: steps as Step[], ...(exit ? { exit: exit as { event: string } } : {}) });
    return draft ? { ok: true, draft } : { ok: false, error: NOT_IN_FORMS };
  } catch (e) {
    return { ok: false, error: `A step is not complete: ${(e as Error).message}. Fix it here, or save it to see what the service says.` };
  }
}
