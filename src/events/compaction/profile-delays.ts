/**
 * The event → profile delay (audience_profile_delay_seconds): each event's receipt (`receivedAt`, taken
 * just before its durable append and its 200) to the moment lookups see it, once the commit holding it
 * is done and the profiles it touched are refreshed. Receipts are counted per millisecond, so a batch of
 * thousands of events crosses from the storage process as a few hundred pairs in its commit report.
 */
import type { Observations } from '../../ops/metrics.js';
import type { SeqEntry } from './plan-batch.js';

/** `[receivedAt, count]` of the events among `entries` (not the rejected ones bound for quarantine). */
export function receiptTimes(entries: readonly SeqEntry[]): Observations {
  const counts = new Map<number, number>();
  for (const { entry } of entries) {
    if (entry.kind === 'event') counts.set(entry.receivedAt, (counts.get(entry.receivedAt) ?? 0) + 1);
  }
  return [...counts];
}

/** `[seconds from receipt to now, count]`. */
export function delaysAt(receipts: Observations, now: number): Observations {
  return receipts.map(([receivedAt, count]) => [Math.max(0, now - receivedAt) / 1000, count] as const);
}
