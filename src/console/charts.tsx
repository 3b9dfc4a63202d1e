/**
 * Counts over time as charts (Observable Plot, SVG, bundled: no CDN), for the answers of GET …/events/activity
 * and GET …/flows/{id}/activity: a range to choose, a chart of series per bucket (stacked bars),
 * and a flow's funnel. Each chart has a text description for screen readers; it is redrawn when its data
 * or the width it has changes, so it fits a phone as it fits a desktop.
 */
import * as Plot from '@observablehq/plot';
import { type ReactNode, useEffect, useRef, useState } from 'react';
import { type Request, Status } from './ui';

/**
 * The ranges a page offers: the span before now, the bucket it is counted in, and how often a page that
 * follows it reads it again (a month of a busy org is a scan of its events: 0.2 s for a million here).
 */
export const RANGES = {
  hour: { label: 'last hour', spanMs: 3_600_000, bucket: 'minute', refreshMs: 5_000 },
  day: { label: 'last 24 hours', spanMs: 86_400_000, bucket: 'hour', refreshMs: 5_000 },
  week: { label: 'last 7 days', spanMs: 7 * 86_400_000, bucket: 'hour', refreshMs: 60_000 },
  month: { label: 'last 30 days', spanMs: 30 * 86_400_000, bucket: 'day', refreshMs: 60_000 },
} as const;
export type RangeName = keyof typeof RANGES;

/** The query of a range ending now (the browser's clock), for an activity endpoint. */
export function rangeQuery(name: RangeName): string {
  const range = RANGES[name];
  return new URLSearchParams({ from: new Date(Date.now() - range.spanMs).toISOString(), bucket: range.bucket }).toString();
}

function RangeSelect({ value, onChange }: { value: RangeName; onChange(name: RangeName): void }): ReactNode {
  return (
    <label className="inline">
      Range{' '}
      <select value={value} onChange={(e) => onChange(e.target.value as RangeName)}>
        {Object.entries(RANGES).map(([name, range]) => (
          <option key={name} value={name}>
            {range.label}
          </option>
        ))}
      </select>
    </label>
  );
}

/** An Activity section: its heading with the range to choose, the request's state, then `children`. */
export function ActivitySection({
  range,
  onRange,
  request,
  children,
}: {
  range: RangeName;
  onRange(name: RangeName): void;
  request: Pick<Request<unknown>, 'data' | 'loading' | 'error'>;
  children: ReactNode;
}): ReactNode {
  return (
    <section aria-labelledby="activity-title">
      <div className="row">
        <h3 id="activity-title">Activity</h3>
        <RangeSelect value={range} onChange={onRange} />
      </div>
      <Status request={{ loading: request.loading && !request.data, error: request.error }} what="the activity" />
      {children}
    </section>
  );
}

export interface Series {
  name: string;
  counts: number[];
}

/** Draws `draw(width)` into a figure React leaves alone, at the width it has; again when that changes. */
function PlotFigure({ chart, caption, draw, deps }: { chart: string; caption: string; draw: (width: number) => Element; deps: unknown[] }): ReactNode {
  const ref = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(0);
  useEffect(() => {
    const element = ref.current;
    if (!element) return;
    const observer = new ResizeObserver(() => setWidth(element.clientWidth));
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  useEffect(() => {
    const element = ref.current;
    element?.replaceChildren(draw(Math.max(280, Math.floor(element.clientWidth || 640))));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [width, ...deps]);
  return (
    <figure data-chart={chart}>
      <figcaption>{caption}</figcaption>
      <div ref={ref} className="chart" />
    </figure>
  );
}

const BUCKET_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;

/**
 * Series per bucket as stacked bars: parts of one whole (events per type, events stored and quarantined,
 * sends per status). `colors` fixes a series' color (a failed send is red wherever it is).
 */
export function TimeChart({
  chart,
  caption,
  times,
  bucket,
  series,
  yLabel,
  colors,
}: {
  chart: string;
  caption: string;
  times: string[];
  bucket: keyof typeof BUCKET_MS;
  series: Series[];
  yLabel: string;
  colors?: Record<string, string>;
}): ReactNode {
  const draw = (width: number) => {
    const step = BUCKET_MS[bucket];
    const rows = series.flatMap((s) => s.counts.map((count, i) => ({ series: s.name, start: new Date(times[i]!), end: new Date(Date.parse(times[i]!) + step), count })));
    const names = series.map((s) => s.name);
    const color = {
      legend: true,
      domain: names,
      ...(colors ? { range: names.map((name, i) => colors[name] ?? FALLBACK[i % FALLBACK.length]!) } : {}),
    };
    const totals = series.map((s) => `${s.name}: ${s.counts.reduce((a, b) => a + b, 0)}`).join('; ');
    // Whole numbers on the axis: no more ticks than the tallest bar has units.
    const tallest = Math.max(1, ...times.map((_, i) => series.reduce((sum, s) => sum + (s.counts[i] ?? 0), 0)));
    return Plot.plot({
      ariaLabel: caption,
      ariaDescription: `${times.length} ${bucket}s from ${times[0] ?? ''}; totals ${totals}`,
      width,
      height: 220,
      marginLeft: 48,
      color,
      y: { label: yLabel, grid: true, ticks: Math.min(5, tallest), tickFormat: 'd' },
      marks: [
        Plot.rectY(
          rows.filter((r) => r.count > 0),
          Plot.stackY({ x1: 'start', x2: 'end', y: 'count', fill: 'series', order: names, title: (r: (typeof rows)[number]) => `${r.start.toISOString()} ${r.series}: ${r.count}` }),
        ),
        Plot.ruleY([0]),
      ],
      x: { type: 'utc', label: null, domain: [new Date(times[0]!), new Date(Date.parse(times.at(-1)!) + step)] },
    });
  };
  return <PlotFigure chart={chart} caption={caption} draw={draw} deps={[times, series, bucket]} />;
}

/** Plot's own palette (tableau10), for series without a fixed color. */
const FALLBACK = ['#4e79a7', '#f28e2c', '#e15759', '#76b7b2', '#59a14f', '#edc949', '#af7aa1', '#ff9da7', '#9c755f', '#bab0ab'];

export interface Funnel {
  entered: number;
  decided: number;
  sent: number;
  delivered: number;
  skipped: Array<{ reason: string; atStep: boolean; count: number }>;
}

const STAGES: Array<[keyof Omit<Funnel, 'skipped'>, string]> = [
  ['entered', 'entered (trigger rows)'],
  ['decided', 'decided to message'],
  ['sent', 'messages sent'],
  ['delivered', 'delivered'],
];

/** The funnel as horizontal bars, and the rows not messaged by reason beside it. */
export function FunnelChart({ funnel }: { funnel: Funnel }): ReactNode {
  const draw = (width: number) => {
    const rows = STAGES.map(([key, label]) => ({ stage: label, count: funnel[key] }));
    return Plot.plot({
      ariaLabel: "The flow's funnel",
      ariaDescription: rows.map((r) => `${r.stage}: ${r.count}`).join('; '),
      width: Math.min(width, 720),
      height: 40 + 34 * rows.length,
      marginLeft: 150,
      // From 0, at least to 1: a funnel of zeros is empty bars, not bars across a domain of nothing.
      x: { label: 'count', grid: true, domain: [0, Math.max(1, ...rows.map((r) => r.count))], nice: true, ticks: Math.min(5, Math.max(1, funnel.entered, funnel.sent)), tickFormat: 'd' },
      y: { label: null, domain: rows.map((r) => r.stage) },
      marks: [
        Plot.barX(rows, { y: 'stage', x: 'count', fill: '#4e79a7', title: (r: (typeof rows)[number]) => `${r.stage}: ${r.count}` }),
        Plot.text(rows, { y: 'stage', x: 'count', text: (r: (typeof rows)[number]) => String(r.count), dx: 4, textAnchor: 'start' }),
        Plot.ruleX([0]),
      ],
    });
  };
  return (
    <div className="funnel">
      <PlotFigure chart="funnel" caption="Funnel: trigger rows entered → decided to message → sent → delivered" draw={draw} deps={[funnel]} />
      <div>
        <h4>Not messaged, by reason</h4>
        {funnel.skipped.length === 0 ? (
          <p className="muted">None.</p>
        ) : (
          <ul className="plain" data-skipped>
            {funnel.skipped.map((s) => (
              <li key={`${s.atStep}-${s.reason}`}>
                <code>{s.reason}</code>
                {s.atStep ? <span className="muted"> (at a step)</span> : null} <strong>{s.count}</strong>
              </li>
            ))}
          </ul>
        )}
      </div>
    </div>
  );
}
