/** A scheduled or recurring flow as a send to a segment (run/scheduled-sends.ts sends it). Pure. */
import type { FlowDefinition, OnceSchedule, RecurringSchedule } from '../../../generated/flow.js';
import { wallClockMs } from './schedule-time.js';

/** sendRatePerSecond when the flow does not say. */
export const DEFAULT_SEND_RATE = 100;
/** A scheduled or recurring flow, narrowed (its definition is checked by validate-flow.ts). */
export interface SegmentFlow<R extends { definition: FlowDefinition }> {
  record: R;
  segment: string;
  schedule: OnceSchedule | RecurringSchedule;
  rate: number;
}

/** The flow as a send to a segment, or undefined when it is triggered (or its schedule does not fit its category). */
export function segmentFlow<R extends { definition: FlowDefinition }>(record: R): SegmentFlow<R> | undefined {
  const { category, audience, schedule, sendRatePerSecond } = record.definition;
  if (category === 'triggered' || !audience || !schedule) return undefined;
  if (('at' in schedule) !== (category === 'scheduled')) return undefined;
  if ('at' in schedule && wallClockMs(schedule.at) === null) return undefined;
  return { record, segment: audience.segment, schedule, rate: sendRatePerSecond ?? DEFAULT_SEND_RATE };
}
