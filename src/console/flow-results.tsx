/**
 * A flow's results on its page (GET …/flows/{id}/results): the conversion rate of each variant and of the
 * holdout with its 95 % interval, and conversions per day, as charts (Observable Plot, SVG, bundled), with
 * the same numbers in a table for screen readers and for copying.
 */
import * as Plot from '@observablehq/plot';
import { type ReactNode, useEffect, useRef, useState } from 'react';
import type { Goal } from '../generated/flow';
import { api, seg } from './api';
import { Status, useRequest } from './ui';

interface Interval {
  low: number;
  high: number;
}

/** The answer of GET …/flows/{id}/results (its schema: src/routes/admin/orgs/flows/schema.ts). */
export interface FlowResults {
  goal: Goal | null;
  range: { from: string | null; to: string };
  method: { confidence: number; rateInterval: string; liftInterval: string; test: string };
  control: string | null;
  variants: Array<{
    variant: string | null;
    holdout: boolean;
    control: boolean;
    entered: number;
    sent: number;
    converted: number | null;
    rate: number | null;
    rateInterval: Interval | null;
    lift: number | null;
    liftInterval: Interval | null;
    pValue: number | null;
  }>;
  daily: Array<{ day: string; variant: string | null; entered: number; sent: number; converted: number | null }>;
}

const labelOf = (variant: string | null) => variant ?? 'everyone';
const percent = (value: number | null, digits = 1) => (value === null ? '—' : `${(value * 100).toFixed(digits)} %`);
const range = (interval: Interval | null) => (interval ? `${percent(interval.low)} to ${percent(interval.high)}` : '—');
const seconds = (s: number) => (s % 86400 === 0 ? `${s / 86400} d` : s % 3600 === 0 ? `${s / 3600} h` : `${s} s`);

export function FlowResultsSection({ org, id, round }: { org: string; id: string; round: number }): ReactNode {
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const params = new URLSearchParams({ ...(from ? { from: `${from}T00:00:00Z` } : {}), ...(to ? { to: `${to}T00:00:00Z` } : {}) });
  const results = useRequest(() => api<FlowResults>('GET', `/admin/v1/orgs/${seg(org)}/flows/${seg(id)}/results${params.size > 0 ? `?${params}` : ''}`), [org, id, round, from, to]);
  const data = results.data;
  return (
    <section aria-labelledby="results-title">
      <div className="row">
        <h3 id="results-title">Results</h3>
        <label className="inline">
          Entered from <input type="date" value={from} onChange={(e) => setFrom(e.target.value)} />
        </label>
        <label className="inline">
          until (not included) <input type="date" value={to} onChange={(e) => setTo(e.target.value)} />
        </label>
        <button type="button" className="small" onClick={results.reload}>
          Refresh
        </button>
      </div>
      <Status request={results} what="the results" />
      {data ? (
        <>
          <p className="muted">
            {data.goal ? (
              <>
                Goal <code>{data.goal.event}</code> within {seconds(data.goal.withinSeconds)} of entering; compared with <strong>{labelOf(data.control)}</strong>. Rates with 95 % Wilson intervals;
                lift with a 95 % interval of the log rate ratio; p-values of a two-sided two-proportion z-test.
              </>
            ) : (
              'No goal: edit the flow and set a conversion goal to compare its variants.'
            )}{' '}
            Entries {data.range.from ? `from ${data.range.from.slice(0, 10)}` : '(none yet)'} until {data.range.to.slice(0, 16).replace('T', ' ')} UTC.
            Each contact counts once per variant (the activity above counts trigger rows).
          </p>
          {data.goal ? <Charts results={data} /> : null}
          <table data-results>
            <thead>
              <tr>
                <th scope="col">Variant</th>
                <th scope="col">Entered</th>
                <th scope="col">Sent</th>
                <th scope="col">Converted</th>
                <th scope="col">Rate (95 % interval)</th>
                <th scope="col">Lift (95 % interval)</th>
                <th scope="col">p-value</th>
              </tr>
            </thead>
            <tbody>
              {data.variants.map((v) => (
                <tr key={labelOf(v.variant)} data-variant={labelOf(v.variant)}>
                  <th scope="row">
                    {labelOf(v.variant)}
                    {v.holdout ? ' (holdout)' : ''}
                    {v.control ? ' · control' : ''}
                  </th>
                  <td className="number">{v.entered}</td>
                  <td className="number">{v.sent}</td>
                  <td className="number">{v.converted ?? '—'}</td>
                  <td className="number" data-rate={v.rate ?? ''}>
                    {percent(v.rate)} <span className="muted">({range(v.rateInterval)})</span>
                  </td>
                  <td className="number">
                    {v.lift === null ? '—' : `${v.lift >= 0 ? '+' : ''}${percent(v.lift)}`} <span className="muted">({range(v.liftInterval)})</span>
                  </td>
                  <td className="number">{v.pValue === null ? '—' : v.pValue < 0.0001 ? '< 0.0001' : v.pValue.toFixed(4)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
    </section>
  );
}

/** Two SVG charts drawn by Plot into elements React leaves alone. */
function Charts({ results }: { results: FlowResults }): ReactNode {
  const ratesRef = useRef<HTMLDivElement>(null);
  const dailyRef = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const rows = results.variants
      .filter((v) => v.rate !== null && v.rateInterval !== null)
      .map((v) => ({ variant: labelOf(v.variant), rate: v.rate!, low: v.rateInterval!.low, high: v.rateInterval!.high }));
    const rates = Plot.plot({
      ariaLabel: 'Conversion rate per variant with its 95 % interval',
      ariaDescription: rows.map((r) => `${r.variant}: ${percent(r.rate)} (${percent(r.low)} to ${percent(r.high)})`).join('; '),
      marginLeft: 90,
      height: 40 + 36 * Math.max(1, rows.length),
      x: { label: 'conversion rate', tickFormat: '.0%', domain: [0, Math.max(0.01, ...rows.map((r) => r.high))], grid: true },
      y: { label: null, domain: rows.map((r) => r.variant) },
      marks: [
        Plot.ruleY(rows, { y: 'variant', x1: 'low', x2: 'high', strokeWidth: 2, stroke: 'currentColor' }),
        Plot.tickX(rows, { y: 'variant', x: 'low' }),
        Plot.tickX(rows, { y: 'variant', x: 'high' }),
        Plot.dot(rows, { y: 'variant', x: 'rate', r: 5, fill: 'variant', title: (r: (typeof rows)[number]) => `${r.variant}: ${percent(r.rate)}` }),
      ],
    });
    const daily = results.daily.filter((d) => d.converted).map((d) => ({ day: d.day, variant: labelOf(d.variant), converted: d.converted ?? 0 }));
    // Every day from the first entry on, so days without a conversion are gaps; a label every week past two.
    const lastDay = [results.range.to.slice(0, 10), ...daily.map((d) => d.day)].sort().at(-1)!;
    const days = daysBetween(results.range.from?.slice(0, 10) ?? lastDay, lastDay);
    const most = Math.max(1, ...days.map((day) => daily.filter((d) => d.day === day).reduce((sum, d) => sum + d.converted, 0)));
    const perDay = Plot.plot({
      ariaLabel: 'Conversions per day and variant',
      ariaDescription: daily.map((d) => `${d.day} ${d.variant}: ${d.converted}`).join('; '),
      height: 220,
      width: Math.min(640, 160 + 48 * days.length),
      color: { legend: true, domain: results.variants.map((v) => labelOf(v.variant)) },
      x: { label: 'day (UTC)', domain: days, ticks: days.filter((_, i) => days.length <= 14 || i % 7 === 0), tickFormat: (day: string) => day.slice(5) },
      y: { label: 'contacts converted', grid: true, ticks: Math.min(5, most), tickFormat: 'd' },
      marks: [Plot.barY(daily, { x: 'day', y: 'converted', fill: 'variant', title: (d: (typeof daily)[number]) => `${d.day} ${d.variant}: ${d.converted}` }), Plot.ruleY([0])],
    });
    ratesRef.current?.replaceChildren(rates);
    dailyRef.current?.replaceChildren(perDay);
  }, [results]);
  return (
    <div className="charts">
      <figure data-chart="rates">
        <figcaption>Conversion rate with its 95 % interval</figcaption>
        <div ref={ratesRef} />
      </figure>
      <figure data-chart="daily">
        <figcaption>Conversions per day (first conversion of each contact)</figcaption>
        <div ref={dailyRef} />
      </figure>
    </div>
  );
}

/** The UTC days from `first` to `last` (YYYY-MM-DD), both included; at most 400. */
function daysBetween(first: string, last: string): string[] {
  const days: string[] = [];
  for (let t = Date.parse(`${first}T00:00:00Z`); t <= Date.parse(`${last}T00:00:00Z`) && days.length < 400; t += 86_400_000) days.push(new Date(t).toISOString().slice(0, 10));
  return days;
}
