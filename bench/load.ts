/**
 * One load measurement with autocannon (in this process, no workers, no pipelining), with exact latency
 * percentiles of the 2xx answers (autocannon's own histogram rounds to whole milliseconds) and the CPU
 * used by the server process, by this process (the load generator) and by the whole machine.
 */
import autocannon from 'autocannon';
import type { BodyTemplate } from './bodies.js';
import { machineCpuSeconds, selfCpuSeconds } from './procs.js';

export interface LoadOptions {
  url: string;
  path: string;
  connections: number;
  /**
   * Requests to send. A fixed count, not a duration: autocannon abandons the requests in flight when a
   * duration ends, and the server may still store those events without us having seen the 200, which
   * would blur the 200s = log = DuckDB check. With a count every request is answered.
   */
  amount: number;
  bodies: BodyTemplate;
  /** CPU seconds used so far by the server under test. */
  serverCpu: () => number;
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
}

function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}

const round = (x: number, digits = 3) => Math.round(x * 10 ** digits) / 10 ** digits;

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
  const instance = autocannon({
    url: options.url,
    connections: options.connections,
    pipelining: 1,
    amount: options.amount,
    timeout: 30,
    requests: [
      {
        method: 'POST',
        path: options.path,
        headers: { 'content-type': 'application/json' },
        setupRequest: (request) => {
          request.body = bodies.next();
          return request;
        },
      },
    ],
  });
  let answered = 0;
  let last: typeof before | undefined;
  instance.on('response', (_client, statusCode, _bytes, ms) => {
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
  const result = await instance;
  const after = last ?? sample();

  const seconds = (after.t - before.t) / 1000;
  const sorted = latencies.subarray(0, n).sort();
  let sum = 0;
  for (let i = 0; i < n; i++) sum += sorted[i]!;
  const statusCodes: Record<string, number> = {};
  for (const [code, { count }] of Object.entries(result.statusCodeStats)) statusCodes[code] = count;
  const ok = result['2xx'];
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
    requests: result.requests.total,
    ok,
    okEvents: ok * bodies.events,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes,
    reqPerSec: Math.round(ok / seconds),
    eventsPerSec: Math.round((ok * bodies.events) / seconds),
    latency: {
      p50: round(percentile(sorted, 0.5)),
      p90: round(percentile(sorted, 0.9)),
      p99: round(percentile(sorted, 0.99)),
      p999: round(percentile(sorted, 0.999)),
      max: round(n ? sorted[n - 1]! : 0),
      mean: round(n ? sum / n : 0),
    },
    cpu: {
      server: round(cpu.server, 2),
      loadGenerator: round(cpu.loadGenerator, 2),
      machine: round(cpu.machine, 2),
      other: round(Math.max(0, cpu.machine - cpu.server - cpu.loadGenerator), 2),
      machineCores: Math.round(cores),
    },
    bodyBytes: bodies.bytes,
    window: { startUs: before.monoUs, endUs: after.monoUs },
  };
}
