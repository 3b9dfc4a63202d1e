/**
 * A flow's activity over a range (GET …/flows/{id}/activity, the console's flow charts): its sends per
 * status over time, and its funnel — trigger rows entered, those decided to message, messages sent, messages
 * delivered — with the rows not messaged counted by reason. From SendStore.activity's counts.
 * docs/data-engineers.md, "A flow's activity", says what each number counts.
 */
import { type TimeRange, rangeAnswer, seriesBy } from '../../../db/time-buckets.js';
import type { FlowActivityRows } from './send-reports.js';

/** Decisions that go on to a message: sent now, at the end of quiet hours, or through the flow's steps. */
const MESSAGED = new Set(['sent', 'deferred_quiet_hours', 'entered']);
/** Outbox statuses of a message handed to its channel. */
const SENT = new Set(['pending', 'delivered', 'failed', 'dead']);
/** The order statuses are listed in; one not here (none today) comes after, by name. */
const STATUS_ORDER = ['delivered', 'pending', 'deferred', 'failed', 'dead', 'cancelled', 'holdout'];

export function flowActivity(flowId: string, range: TimeRange, rows: FlowActivityRows) {
  const rank = (status: string) => (STATUS_ORDER.includes(status) ? STATUS_ORDER.indexOf(status) : STATUS_ORDER.length);
  const sends = [...seriesBy(range, rows.sends, (row) => row.status)]
    .map(([status, counted]) => ({ status, ...counted }))
    .sort((a, b) => rank(a.status) - rank(b.status) || a.status.localeCompare(b.status));
  const total = (status: (s: string) => boolean) => sends.filter((s) => status(s.status)).reduce((a, s) => a + s.total, 0);

  const entries = rows.decisions.filter((d) => !d.atStep);
  const skipped = new Map<string, { reason: string; atStep: boolean; count: number }>();
  for (const d of rows.decisions) {
    if (MESSAGED.has(d.outcome) && !d.atStep) continue;
    // A step's own message (sent) is counted among sends; its skips and exits are listed with the step mark.
    if (d.atStep && d.outcome === 'sent') continue;
    const key = `${d.atStep}\u0000${d.outcome}`;
    const found = skipped.get(key) ?? { reason: d.outcome, atStep: d.atStep, count: 0 };
    found.count += d.n;
    skipped.set(key, found);
  }
  return {
    flowId,
    ...rangeAnswer(range),
    sends,
    funnel: {
      entered: entries.reduce((a, d) => a + d.n, 0),
      decided: entries.filter((d) => MESSAGED.has(d.outcome)).reduce((a, d) => a + d.n, 0),
      sent: total((s) => SENT.has(s)),
      delivered: total((s) => s === 'delivered'),
      skipped: [...skipped.values()].sort((a, b) => b.count - a.count || Number(a.atStep) - Number(b.atStep) || a.reason.localeCompare(b.reason)),
    },
  };
}
