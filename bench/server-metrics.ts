/**
 * What the service's own /metrics say about a measurement: durable log writes (group commits),
 * compaction transactions and event-loop delay, as the difference of a scrape before and after.
 */

type Samples = Map<string, number>;

/** The service's /metrics on PORT, where it asks for the admin key. */
export async function metricsText(url: string, adminKey: string, init: { signal?: AbortSignal } = {}): Promise<string> {
  const res = await fetch(`${url}/metrics`, { ...init, headers: { authorization: `Bearer ${adminKey}` } });
  if (!res.ok) throw new Error(`${url}/metrics: ${res.status}`);
  return res.text();
}

export async function scrape(url: string, adminKey: string): Promise<Samples> {
  const text = await metricsText(url, adminKey);
  const samples: Samples = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    samples.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return samples;
}

interface HistogramDelta {
  count: number;
  meanMs: number;
  /** Upper bound of the bucket holding the percentile, in ms (Infinity past the last bucket). */
  p50Ms: number;
  p99Ms: number;
}

function histogram(before: Samples, after: Samples, name: string): HistogramDelta {
  const d = (key: string) => (after.get(key) ?? 0) - (before.get(key) ?? 0);
  const count = d(`${name}_count`);
  const sum = d(`${name}_sum`);
  const buckets: Array<{ le: number; n: number }> = [];
  for (const key of after.keys()) {
    const m = key.match(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\}$`));
    if (m) buckets.push({ le: m[1] === '+Inf' ? Infinity : Number(m[1]), n: d(key) });
  }
  buckets.sort((a, b) => a.le - b.le);
  const at = (q: number) => {
    const want = q * count;
    const hit = buckets.find((b) => b.n >= want);
    return hit ? hit.le * 1000 : NaN;
  };
  return {
    count,
    meanMs: count ? Math.round((sum / count) * 1e6) / 1000 : 0,
    p50Ms: count ? at(0.5) : 0,
    p99Ms: count ? at(0.99) : 0,
  };
}

export interface ServerMetricsDelta {
  eventsAccepted: number;
  /** Durable log writes (one per group commit) and how many events each carried on average. */
  logWrites: HistogramDelta & { eventsPerWrite: number };
  compactionTransactions: HistogramDelta;
  /** prom-client's event-loop delay, over the window since the previous scrape (it resets on scrape). */
  eventLoopDelayMs: { p50: number; p99: number; max: number };
}

export function diff(before: Samples, after: Samples): ServerMetricsDelta {
  const accepted = (s: Samples) =>
    [...s.entries()].filter(([k]) => k.startsWith('audience_events_accepted_total')).reduce((n, [, v]) => n + v, 0);
  const eventsAccepted = accepted(after) - accepted(before);
  const logWrites = histogram(before, after, 'audience_log_append_seconds');
  const ms = (key: string) => Math.round((after.get(key) ?? NaN) * 1e6) / 1000;
  return {
    eventsAccepted,
    logWrites: { ...logWrites, eventsPerWrite: logWrites.count ? Math.round((eventsAccepted / logWrites.count) * 10) / 10 : 0 },
    compactionTransactions: histogram(before, after, 'audience_compaction_batch_seconds'),
    eventLoopDelayMs: {
      p50: ms('nodejs_eventloop_lag_p50_seconds'),
      p99: ms('nodejs_eventloop_lag_p99_seconds'),
      max: ms('nodejs_eventloop_lag_max_seconds'),
    },
  };
}
