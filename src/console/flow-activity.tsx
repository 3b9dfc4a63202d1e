/**
 * A flow's activity on its page (GET …/flows/{id}/activity): its sends per status over time, and its funnel
 * (trigger rows entered → decided to message → sent → delivered, the rest by reason), read again whenever
 * the flow runs (`round`), and every few seconds while it is live.
 */
import { type ReactNode, useState } from 'react';
import { api, seg } from './api';
import { ActivitySection, type Funnel, FunnelChart, RANGES, type RangeName, TimeChart, rangeQuery } from './charts';
import { useEvery, useRequest } from './ui';

/** The answer of GET …/flows/{id}/activity (src/reactions/flows/flow-activity.ts). */
interface FlowActivity {
  bucket: 'minute' | 'hour' | 'day';
  times: string[];
  sends: Array<{ status: string; total: number; counts: number[] }>;
  funnel: Funnel;
}

/** One color per status wherever it is drawn: delivered green, failed and dead red, waiting grey. */
const STATUS_COLORS: Record<string, string> = {
  delivered: '#2e7d32',
  pending: '#4e79a7',
  deferred: '#edc949',
  failed: '#e15759',
  dead: '#8b1a1a',
  cancelled: '#9c755f',
  holdout: '#bab0ab',
};

/** `live`: read again every few seconds, as deliveries end after the run that decided them. */
export function FlowActivitySection({ org, id, round, live }: { org: string; id: string; round: number; live: boolean }): ReactNode {
  const [range, setRange] = useState<RangeName>('day');
  const activity = useRequest(() => api<FlowActivity>('GET', `/admin/v1/orgs/${seg(org)}/flows/${seg(id)}/activity?${rangeQuery(range)}`), [org, id, range, round]);
  useEvery(RANGES[range].refreshMs, activity.reload, live);
  const data = activity.data;
  return (
    <ActivitySection range={range} onRange={setRange} request={activity}>
      {data ? (
        <>
          <p className="muted" data-flow-totals>
            {data.funnel.entered} trigger rows entered, {data.funnel.sent} messages sent and {data.funnel.delivered} delivered in the range.
          </p>
          <p className="muted" data-counts-what>
            These count trigger rows as runs decided them: a contact with three bookings is three rows, and a row a segment, cap or consent
            skipped counts under its reason. Results below count contacts instead, each once per variant, and only those the flow entered
            (sent, holdout, or deferred by quiet hours): the two differ on purpose.
          </p>
          <div className="charts">
            {data.sends.length > 0 ? (
              <TimeChart
                chart="sends-per-status"
                caption={`Sends per status, per ${data.bucket} (by when they were decided)`}
                times={data.times}
                bucket={data.bucket}
                series={data.sends.map((s) => ({ name: s.status, counts: s.counts }))}
                colors={STATUS_COLORS}
                yLabel={`sends per ${data.bucket}`}
              />
            ) : (
              <p className="muted">No send in the range.</p>
            )}
            <FunnelChart funnel={data.funnel} />
          </div>
        </>
      ) : null}
    </ActivitySection>
  );
}
