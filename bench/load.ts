/**
 * One load measurement with autocannon (in this process, no workers, no pipelining), with exact latency
 * percentiles of the 2xx answers (autocannon's own histogram rounds to whole milliseconds) and the CPU
 * used by the server process, by this process (the load generator) and by the whole machine.
 * POSTs of generated bodies (collect) or GETs of generated paths (the Audience API), flat out or paced.
 */
import autocannon from 'autocannon';
import type { BodyTemplate } from './bodies.js';
import { machineCpuSeconds, selfCpuSeconds } from './procs.js';

/** What each request looks like. */
export interface RequestSpec {
  /** Default: POST. */
  method?: 'GET' | 'POST';
  /** Sent with every request (a POST also gets content-type: application/json). */
  headers?: Record<string, string>;
  /** A body per request (POST). */
  bodies?: Pick<BodyTemplate, 'next' | 'events' | 'bytes'>;
  /** A path per request (e.g. varied query strings); default: LoadOptions.path for every request. */
  paths?: { next(): string };
}

export interface LoadOptions extends RequestSpec {
  url: string;
  path: string;
  connections: number;
  /**
   * Requests to send. A fixed count, not a duration: autocannon abandons the requests in flight when a
   * duration ends, and the server may still store those events without us having seen the 200, which
   * would blur the 200s = log = DuckDB check. With a count every request is answered.
   */
  amount: number;
  /** CPU seconds used so far by the server under test. */
  serverCpu: () => number;
  /**
   * Requests per second over all connections (background load). autocannon paces per connection in
   * 1 s windows that all start together, so a paced load arrives as one burst at the top of each
   * second; it is split into `PACED_SLICES` instances started 1/PACED_SLICES s apart to spread it.
   */
  overallRate?: number;
  /** Ends the load early (background load): requests in flight are abandoned. */
  stop?: Promise<unknown>;
  /** Return every 2xx latency (LoadResult.latencySamples), to merge several runs' percentiles. */
  keepLatencies?: boolean;
}

export interface Latency {
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
}

export interface LoadResult {
  seconds: number;
  connections: number;
  requests: number;
  ok: number;
  /** ok × events per body. */
  okEvents: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  reqPerSec: number;
  eventsPerSec: number;
  /** Milliseconds, 2xx answers only. */
  latency: Latency;
  /** CPU seconds per wall second (1.0 = one core busy). */
  cpu: {
    server: number;
    loadGenerator: number;
    /** All processes on the machine. */
    machine: number;
    /** machine − server − loadGenerator: other work on a shared machine (noise when high). */
    other: number;
    machineCores: number;
  };
  bodyBytes: number;
  /** CLOCK_MONOTONIC µs (the clock of V8 CPU profiles) at the start and end of the measurement. */
  window: { startUs: number; endUs: number };
  /** Other processes' CPU just before the measurement (shared machine), see procs.waitQuiet. */
  quiet?: { waitedMs: number; busyCores: number };
  /** Sorted 2xx latencies in ms, with LoadOptions.keepLatencies (not for reports: large). */
  latencySamples?: Float64Array;
}

export function latencyOf(sorted: Float64Array): Latency {
  const n = sorted.length;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += sorted[i]!;
  return {
    p50: round(percentile(sorted, 0.5)),
    p90: round(percentile(sorted, 0.9)),
    p99: round(percentile(sorted, 0.99)),
    p999: round(percentile(sorted, 0.999)),
    max: round(n ? sorted[n - 1]! : 0),
    mean: round(n ? sum / n : 0),
  };
}

function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}

export const round = (x: number, digits = 3) => Math.round(x * 10 ** digits) / 10 ** digits;

/** See LoadOptions.overallRate. */
const PACED_SLICES = 10;

type Result = autocannon.Result;

function startInstances(options: LoadOptions, onResponse: (statusCode: number, ms: number) => void): Array<Promise<Result>> {
  const { bodies, paths } = options;
  const method = options.method ?? 'POST';
  const headers = { ...(method === 'POST' ? { 'content-type': 'application/json' } : {}), ...options.headers };
  const request: autocannon.Request = {
    method,
    path: options.path,
    headers,
    ...(bodies || paths
      ? {
          setupRequest: (r: autocannon.Request) => {
            if (bodies) r.body = bodies.next();
            if (paths) r.path = paths.next();
            return r;
          },
        }
      : {}),
  };
  const slices = options.overallRate ? Math.max(1, Math.min(PACED_SLICES, options.connections, Math.floor(options.overallRate))) : 1;
  const instances: Array<Promise<Result>> = [];
  for (let i = 0; i < slices; i++) {
    const share = (total: number) => Math.floor(total / slices) + (i < total % slices ? 1 : 0);
    const start = (): Promise<Result> => {
      const instance = autocannon({
        url: options.url,
        connections: share(options.connections),
        pipelining: 1,
        amount: Math.max(share(options.connections), share(options.amount)),
        timeout: 30,
        ...(options.overallRate ? { overallRate: Math.max(1, share(options.overallRate)) } : {}),
        requests: [{ ...request }],
      });
      instance.on('response', (_client, statusCode, _bytes, ms) => onResponse(statusCode, ms));
      void options.stop?.then(() => instance.stop());
      return Promise.resolve(instance);
    };
    instances.push(i === 0 ? start() : new Promise((r) => setTimeout(r, (i * 1000) / slices)).then(start));
  }
  return instances;
}

function merge(results: Result[]): { total: number; ok: number; non2xx: number; errors: number; timeouts: number; statusCodes: Record<string, number> } {
  const statusCodes: Record<string, number> = {};
  for (const result of results) {
    for (const [code, { count }] of Object.entries(result.statusCodeStats)) statusCodes[code] = (statusCodes[code] ?? 0) + count;
  }
  const sum = (f: (r: Result) => number) => results.reduce((n, r) => n + f(r), 0);
  return {
    total: sum((r) => r.requests.total),
    ok: sum((r) => r['2xx']),
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    timeouts: sum((r) => r.timeouts),
    statusCodes,
  };
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const { bodies } = options;
  let latencies = new Float64Array(1 << 16);
  let n = 0;

  const sample = () => ({
    server: options.serverCpu(),
    self: selfCpuSeconds(),
    machine: machineCpuSeconds(),
    t: performance.now(),
    monoUs: Number(process.hrtime.bigint() / 1000n),
  });
  const before = sample();
  let answered = 0;
  let last: typeof before | undefined;
  let stopped: typeof before | undefined;
  void options.stop?.then(() => (stopped ??= sample()));
  const instances = startInstances(options, (statusCode, ms) => {
    // autocannon notices the end only at its next 1 s tick: take the time and CPU at the last answer.
    if (++answered === options.amount) last = sample();
    if (statusCode < 200 || statusCode >= 300) return;
    if (n === latencies.length) {
      const grown = new Float64Array(latencies.length * 2);
      grown.set(latencies);
      latencies = grown;
    }
    latencies[n++] = ms;
  });
  const result = merge(await Promise.all(instances));
  const after = last ?? stopped ?? sample();
  const events = bodies?.events ?? 1;

  const seconds = (after.t - before.t) / 1000;
  const sorted = latencies.subarray(0, n).sort();
  const { statusCodes, ok } = result;
  const machineWall = after.machine.total - before.machine.total;
  const cores = machineWall / seconds;

  const cpu = {
    server: (after.server - before.server) / seconds,
    loadGenerator: (after.self - before.self) / seconds,
    machine: (after.machine.busy - before.machine.busy) / seconds,
  };
  return {
    seconds: round(seconds, 2),
    connections: options.connections,
    requests: result.total,
    ok,
    okEvents: ok * events,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes,
    reqPerSec: Math.round(ok / seconds),
    eventsPerSec: Math.round((ok * events) / seconds),
    latency: latencyOf(sorted),
    cpu: {
      server: round(cpu.server, 2),
      loadGenerator: round(cpu.loadGenerator, 2),
      machine: round(cpu.machine, 2),
      other: round(Math.max(0, cpu.machine - cpu.server - cpu.loadGenerator), 2),
      machineCores: Math.round(cores),
    },
    bodyBytes: bodies?.bytes ?? 0,
    window: { startUs: before.monoUs, endUs: after.monoUs },
    ...(options.keepLatencies ? { latencySamples: sorted } : {}),
  };
}
