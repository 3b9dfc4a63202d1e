/**
 * What the benchmark phases share (bench/run.ts for collect, bench/audience.ts for the Audience API):
 * the service as a child process, admin calls, /metrics, the warm-up-then-measure routine, the report's
 * load summary and the printed table.
 */
import { join } from 'node:path';
import { BodyTemplate } from './bodies.js';
import { type LoadResult, type RequestSpec, runLoad } from './load.js';
import { Child, freePort, waitHttpOk, waitQuiet } from './procs.js';
import { diff, metricsText, scrape, type ServerMetricsDelta } from './server-metrics.js';
import { SERVICE_NODE_FLAGS } from '../src/core/node-flags.js';

export const ADMIN_KEY = 'bench-admin-key-0123456789abcdef0123';
export const ORG = 'bench';

/** One run's settings and places, from bench/run.ts's options. */
export interface Bench {
  root: string;
  /** Temp dir of the run (data dirs, logs, profiles). */
  workDir: string;
  /** Distinguishes this run's messageIds and profile files. */
  runTag: string;
  /** Seconds of warm-up before each measurement. */
  warmup: number;
  /** Seconds each measurement should last (sized by count from the warm-up's rate). */
  duration: number;
  /** Milliseconds to wait, before each measurement, for the (shared) machine to be idle. */
  quietWaitMs: number;
  /** bench/ablate.ts parts switched off (experiments), '' for none. */
  ablate: string;
}

export function say(message: string): void {
  const t = (performance.now() / 1000).toFixed(1).padStart(6);
  console.log(`[${t}s] ${message}`);
}

export function table(rows: Array<Record<string, string | number>>): string {
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const width = columns.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(width[i]!) : c.padStart(width[i]!))).join('  ');
  return [line(columns), line(width.map((w) => '-'.repeat(w))), ...rows.map((r) => line(columns.map((c) => String(r[c] ?? ''))))].join('\n');
}

// ---------------------------------------------------------------------------------------------------
// The service

export interface Service {
  child: Child;
  url: string;
  dataDir: string;
}

export async function startService(
  bench: Bench,
  name: string,
  dataDir: string,
  options: {
    roles?: string;
    profileDir?: string;
    nodeArgs?: string[];
    onSpawn?: (child: Child) => void;
    /** Extra environment (e.g. QUERIES_DIR, WEBHOOK_ALLOW_PRIVATE for bench/flows.ts). */
    env?: NodeJS.ProcessEnv;
  } = {},
): Promise<Service> {
  const port = await freePort();
  // As `npm start` starts it (package.json).
  const nodeArgs = [...SERVICE_NODE_FLAGS, ...profileArgs(bench, name, options.profileDir), ...(options.nodeArgs ?? [])];
  const entry = bench.ablate ? 'dist/bench/ablate.js' : 'dist/src/server.js';
  const child = Child.start(name, join(bench.root, entry), {
    cwd: bench.root,
    logFile: join(bench.workDir, `${name}.log`),
    nodeArgs,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      ADMIN_KEY,
      LOG_LEVEL: 'warn',
      NATS_URL: '',
      ROLES: options.roles ?? '',
      BENCH_ABLATE: bench.ablate,
      ...options.env,
    },
  });
  options.onSpawn?.(child);
  const url = `http://127.0.0.1:${port}`;
  await waitHttpOk(`${url}/readyz`, child);
  return { child, url, dataDir };
}

/** node --cpu-prof flags for a child named `name`, when profiling. */
export function profileArgs(bench: Bench, name: string, profileDir: string | undefined): string[] {
  return profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}-${bench.runTag}.cpuprofile`] : [];
}

/** An admin API call: a JSON body, or a string sent with `contentType`. */
export async function admin<T>(
  service: Service,
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<{ status: number; json: T }> {
  const res = await fetch(`${service.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(body === undefined ? {} : { 'content-type': contentType }) },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as T };
}

export async function metric(service: Service, name: string): Promise<number> {
  const text = await metricsText(service.url, ADMIN_KEY);
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : NaN;
}

// ---------------------------------------------------------------------------------------------------
// Load

export interface Measured {
  warmup: LoadResult;
  measure: LoadResult;
  /** The service's /metrics over the measurement (not for the bare server). */
  server?: ServerMetricsDelta;
}

export interface Target {
  url: string;
  path: string;
  serverCpu: () => number;
  child: Child;
  hasMetrics?: boolean;
}

/** One load run against a target (fails fast if the server dies). */
export function runOn(target: Target, spec: RequestSpec, connections: number, amount: number, keepLatencies = false): Promise<LoadResult> {
  return target.child.guard(runLoad({ ...target, ...spec, connections, amount: Math.max(connections * 2, amount), keepLatencies }));
}

/**
 * Warm-up in chunks of ~1 s (each sized from the previous one's rate) for ~`seconds`. Returns the
 * chunks summed (everything sent before the measurement counts for the consistency check) and the last
 * chunk's rate, from which the measurement is sized.
 */
export async function warmUp(target: Target, spec: RequestSpec, connections: number, seconds: number): Promise<{ warmup: LoadResult; rate: number }> {
  const chunks: LoadResult[] = [];
  let warmupSeconds = 0;
  let amount = connections * ((spec.bodies?.events ?? 1) === 1 ? 20 : 4);
  while (warmupSeconds < seconds || chunks.length < 2) {
    const chunk = await runOn(target, spec, connections, amount);
    chunks.push(chunk);
    warmupSeconds += chunk.seconds;
    amount = Math.round(chunk.reqPerSec * Math.min(1, Math.max(0.3, seconds - warmupSeconds)));
  }
  const last = chunks[chunks.length - 1]!;
  const warmup: LoadResult = {
    ...last,
    requests: chunks.reduce((n, c) => n + c.requests, 0),
    ok: chunks.reduce((n, c) => n + c.ok, 0),
    okEvents: chunks.reduce((n, c) => n + c.okEvents, 0),
    non2xx: chunks.reduce((n, c) => n + c.non2xx, 0),
    errors: chunks.reduce((n, c) => n + c.errors, 0),
    seconds: Math.round(warmupSeconds * 100) / 100,
  };
  return { warmup, rate: last.reqPerSec };
}

/**
 * Counts, not durations (see load.ts): warm-up (see warmUp) for ~warmup s, then one measurement sized
 * from the last warm-up chunk's rate to last ~duration s.
 */
export async function measure(
  bench: Bench,
  label: string,
  target: Target,
  spec: RequestSpec,
  connections: number,
  timing: { warmup: number; duration: number } = bench,
): Promise<Measured> {
  const { warmup, rate } = await warmUp(target, spec, connections, timing.warmup);
  const amount = Math.round(rate * timing.duration);
  say(`${label}: warm-up ${warmup.requests} requests in ${warmup.seconds} s, last ${rate} req/s; measuring ${amount} requests`);
  const quiet = await waitQuiet(0.3, bench.quietWaitMs, target.serverCpu);
  if (quiet.waitedMs > 1500) say(`${label}: waited ${quiet.waitedMs} ms for the machine to go quiet (${quiet.busyCores} cores busy)`);
  const metricsBefore = target.hasMetrics ? await scrape(target.url, ADMIN_KEY) : undefined;
  const result = { ...(await runOn(target, spec, connections, amount)), quiet };
  const server = metricsBefore ? diff(metricsBefore, await scrape(target.url, ADMIN_KEY)) : undefined;
  sayMeasured(label, result, server);
  return { warmup, measure: result, ...(server ? { server } : {}) };
}

/**
 * The baseline: a bare Fastify POST (bench/bare-server.ts) in its own process, with the same bodies as
 * /http/v1/collect (credentials included, ignored), so the generator does the same work per request.
 */
export async function measureBare(
  bench: Bench,
  connections: number,
  timing: { warmup: number; duration: number } = bench,
  label = 'bare',
): Promise<Measured> {
  const port = await freePort();
  const child = Child.start(label, join(bench.root, 'dist/bench/bare-server.js'), {
    cwd: bench.root,
    logFile: join(bench.workDir, `${label}.log`),
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1' },
  });
  try {
    await waitHttpOk(`http://127.0.0.1:${port}/healthz`, child);
    const bodies = BodyTemplate.single({ partnerId: 'pk_bench_unused', partnerSecret: 'sk_bench_unused_0123456789' }, `${label}-${bench.runTag}`);
    const target = { url: `http://127.0.0.1:${port}`, path: '/bare', serverCpu: () => child.cpuSeconds(), child };
    return await measure(bench, label, target, { bodies }, connections, timing);
  } finally {
    await child.stop();
  }
}

export function sayMeasured(label: string, result: LoadResult, server: ServerMetricsDelta | undefined): void {
  say(
    `${label}: ${result.reqPerSec} req/s, ${result.eventsPerSec} events/s, p50 ${result.latency.p50} ms, ` +
      `p99 ${result.latency.p99} ms, cpu server ${result.cpu.server} loadgen ${result.cpu.loadGenerator}` +
      (result.non2xx || result.errors ? `, non-2xx ${result.non2xx}, errors ${result.errors} ${JSON.stringify(result.statusCodes)}` : ''),
  );
  if (server) {
    say(
      `${label}: ${server.logWrites.count} log writes, ${server.logWrites.eventsPerWrite} events each, mean ${server.logWrites.meanMs} ms; ` +
        `${server.compactionTransactions.count} compaction tx, mean ${server.compactionTransactions.meanMs} ms; event-loop delay p99 ${server.eventLoopDelayMs.p99} ms`,
    );
  }
}

export function loadSummary(m: Measured) {
  const r = m.measure;
  return {
    reqPerSec: r.reqPerSec,
    eventsPerSec: r.eventsPerSec,
    p50: r.latency.p50,
    p99: r.latency.p99,
    latency: r.latency,
    cpu: r.cpu,
    requests: r.requests,
    seconds: r.seconds,
    connections: r.connections,
    non2xx: r.non2xx,
    errors: r.errors,
    statusCodes: r.statusCodes,
    bodyBytes: r.bodyBytes,
    otherCpuBefore: r.quiet ?? null,
    serverMetrics: m.server ?? null,
    warmup: { requests: m.warmup.requests, reqPerSec: m.warmup.reqPerSec, non2xx: m.warmup.non2xx, errors: m.warmup.errors, okEventsBefore: m.warmup.okEvents },
  };
}

export type LoadSummary = ReturnType<typeof loadSummary>;

/** The latency, CPU and error columns of a printed result row (after the phase's throughput columns). */
export function latencyAndCpuColumns(s: LoadSummary): Record<string, string | number> {
  return {
    'p50 ms': s.p50,
    'p99 ms': s.p99,
    'p99.9 ms': s.latency.p999,
    'cpu server': s.cpu.server,
    'cpu loadgen': s.cpu.loadGenerator,
    'cpu machine': `${s.cpu.machine}/${s.cpu.machineCores}`,
    'cpu other': s.cpu.other,
    'non-2xx': s.non2xx + s.errors,
  };
}
