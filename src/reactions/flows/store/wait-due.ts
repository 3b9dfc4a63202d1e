/**
 * When an entry moves next. A run writes an entry at its first step, due at once (wait-store.ts `enter`);
 * a first step that is a wait starts from the entry, not from the pass that first reads it (up to a tick
 * later), so the time is known when the entry is written and the waits listing can tell it.
 */
import type { Step } from '../../../generated/flow.js';
import type { WaitRow } from './wait-store.js';

export function movesAt(row: Pick<WaitRow, 'step' | 'waiting' | 'dueAt' | 'enteredAt'>, step: Step | undefined): number {
  if (row.waiting || row.step !== 0 || step === undefined) return row.dueAt;
  if ('wait' in step) return row.enteredAt + step.wait.seconds * 1000;
  if ('waitUntil' in step) return row.enteredAt + step.waitUntil.timeoutSeconds * 1000;
  return row.dueAt;
}
