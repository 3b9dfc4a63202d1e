/**
 * Issue 39's measure: each hot path beside a bare Fastify route that does the same minimal work
 * (bench/fair-bare.ts), in the same run, back to back:
 *   bare collect / collect   POST /http/v1/collect, one custom event per request, a unique messageId each
 *   bare lookup / lookup     GET /audience/v2/contacts over 100,000 imported contacts (contacts.ts's identity mix)
 *   bare contact batch / contact batch   POST /audience/v2/contacts/batch, 100 identities (issue 41: its CPU ≤ 3× one lookup's)
 *   bare batch / batch       POST /http/v1/batch, 100 events per request
 * wrk (C, one thread, its own process) at 50 connections (saturation) and, for collect and lookup, at 4
 * (light load, where queueing does not dominate), `turns` rounds (default 3); each ratio is taken within a
 * round and the median over rounds is reported. CPU is read from /proc for each server's whole process tree
 * (the service's storage and checker processes with it). After each collect and batch measurement the
 * service's compaction is waited for and its CPU until then counted too ("with compaction"): the ratio of
 * CPU per event uses that figure, so work deferred past the window is not left out.
 * Writes bench/results/speed.json (default settings) or a .tmp file.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { importContacts, setUp, waitCaughtUp } from './audience.js';
import type { Credentials } from './bodies.js';
import { BatchBodies, IdentityPaths, syntheticContacts } from './contacts.js';
import { admin, type Bench, profileArgs, say, type Service, startService, table } from './harness.js';
import { type GcWindow, gcSince, logEnd } from './gc-trace.js';
import { round } from './load.js';
import { Child, freePort, processCpuSeconds, waitHttpOk, waitQuiet } from './procs.js';
import type { SpreadRequests, SpreadResult } from './spread-load.js';
import { wrkGenerator } from './wrk.js';

export interface SpeedOptions {
  wrk: string;
  wrkVersion: string;
  /** Saturation (the issue: 50). */
  connections: number;
  /** Light load (the issue: 4). */
  lightConnections: number;
  seconds: number;
  warmup: number;
  turns: number;
  batchSize: number;
  /** Only these paths (a profile of one path, e.g. `--speed-paths lookup --profile`); default all. */
  paths?: readonly string[];
  profileDir?: string;
  /** The service under `--trace-gc`: each of its runs reports its window's collections (gc-trace.ts). */
  gcTrace?: boolean;
}

export const SPEED_PATHS = ['bare collect', 'collect', 'plain collect', 'plan collect', 'bare lookup', 'lookup', 'bare contact batch', 'contact batch', 'bare batch', 'batch'] as const;
type Path = (typeof SPEED_PATHS)[number];
type Load = 'saturation' | 'light';

export interface SpeedRun {
  path: Path;
  load: Load;
  connections: number;
  turn: number;
  /** Requests answered 2xx per second. */
  reqPerSec: number;
  eventsPerSec: number;
  non2xx: number;
  errors: number;
  latencyMs: SpreadResult['latency'];
  /** µs of CPU per request: the server's whole process tree, its main process alone, wrk. */
  cpuUsPerRequest: { server: number; main: number; wrk: number };
  /** µs of the whole tree's CPU per event including the compaction that followed (collect and batch). */
  cpuUsPerEventWithCompaction?: number;
  /** ms from the end of the load until the service's compaction lag was 0. */
  catchUpMs?: number;
  /** The measured seconds (CLOCK_MONOTONIC µs, as V8's profiles): a profile is summarized over them. */
  window: { startUs: number; endUs: number };
  /** The service's collections in the measured seconds (`--speed-gc`), and their pause per request. */
  gc?: GcWindow & { pauseUsPerRequest: number };
}

export interface SpeedOutcome {
  loadGenerator: string;
  connections: number;
  lightConnections: number;
  seconds: number;
  runs: SpeedRun[];
  /** Each row of the table: the median over rounds, its goal and whether it is met. */
  summary: SummaryRow[];
}

/** A row of the table has a goal and whether it is met; the figures beside them have neither. */
export interface SummaryRow {
  measure: string;
  value: number;
  goal?: string;
  met?: boolean;
}

const CONTACTS = 100_000;

const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);
const PATHS = 4_096;
/** Identities per batch lookup (issue 41: ≤ 3× the CPU of one lookup). */
const LOOKUP_BATCH = 100;

export async function benchSpeed(bench: Bench, options: SpeedOptions): Promise<SpeedOutcome> {
  const generator = wrkGenerator({ wrk: options.wrk, workDir: bench.workDir, threads: 1, cpus: undefined, version: options.wrkVersion });
  let service: Service | undefined;
  let bare: { child: Child; url: string } | undefined;
  try {
    service = await startService(bench, 'speed', join(bench.workDir, 'speed'), {
      ...(options.profileDir ? { profileDir: options.profileDir } : {}),
      ...(options.gcTrace ? { nodeArgs: ['--trace-gc'] } : {}),
    });
    const svc = service;
    const guard = <T>(p: Promise<T>) => svc.child.guard(p);
    const { credentials, token } = await guard(setUp(svc));
    const contacts = syntheticContacts(CONTACTS);
    const imported = await guard(importContacts(svc, contacts));
    say(`speed: ${imported.imported} contacts imported in ${imported.seconds} s`);
    await guard(waitCaughtUp(svc));
    const plain = await guard(planOrg(svc, 'bench_plain', false));
    const planned = await guard(planOrg(svc, 'bench_plan', true));
    const bareServer = await startBare(bench, credentials, token, options.profileDir);
    bare = bareServer;

    const list = (p: IdentityPaths) => Array.from({ length: PATHS }, () => p.next());
    // The same identities in the same order for both.
    const lookups = (prefix: string): SpreadRequests => ({ method: 'GET', paths: list(new IdentityPaths(contacts, prefix, 2)), headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' } });
    // Issue 41's batch lookup: the same bodies of 100 identities (no identity twice in a body) for both.
    const bodies = new BatchBodies(contacts, LOOKUP_BATCH, 5, 64).pool.map(String);
    const batchLookups = (path: string): SpreadRequests => ({
      method: 'POST',
      path,
      fixed: true,
      bodies,
      headers: { Authorization: `Bearer ${token}`, Accept: 'application/json', 'Content-Type': 'application/json' },
    });
    const all: Array<{ path: Path; server: Child; url: string; requests: SpreadRequests; events: number; light: boolean }> = [
      { path: 'bare collect', server: bareServer.child, url: bareServer.url, requests: post('/bare/collect', credentials), events: 1, light: true },
      { path: 'collect', server: svc.child, url: svc.url, requests: post('/http/v1/collect', credentials), events: 1, light: true },
      // The same events from two orgs made alike, one whose plan for them has 20 members (issue 42): what checking costs.
      { path: 'plain collect', server: svc.child, url: svc.url, requests: post('/http/v1/collect', plain), events: 1, light: false },
      { path: 'plan collect', server: svc.child, url: svc.url, requests: post('/http/v1/collect', planned), events: 1, light: false },
      { path: 'bare lookup', server: bareServer.child, url: bareServer.url, requests: lookups('/bare/contacts'), events: 0, light: true },
      { path: 'lookup', server: svc.child, url: svc.url, requests: lookups('/audience/v2/contacts'), events: 0, light: true },
      { path: 'bare contact batch', server: bareServer.child, url: bareServer.url, requests: batchLookups('/bare/contacts/batch'), events: 0, light: false },
      { path: 'contact batch', server: svc.child, url: svc.url, requests: batchLookups('/audience/v2/contacts/batch'), events: 0, light: false },
      { path: 'bare batch', server: bareServer.child, url: bareServer.url, requests: post('/bare/batch', credentials, options.batchSize), events: options.batchSize, light: false },
      { path: 'batch', server: svc.child, url: svc.url, requests: post('/http/v1/batch', credentials, options.batchSize), events: options.batchSize, light: false },
    ];
    const plan = all.filter((step) => !options.paths || options.paths.includes(step.path));

    const runs: SpeedRun[] = [];
    let n = 0;
    for (let turn = 1; turn <= options.turns; turn++) {
      for (const load of ['saturation', 'light'] as const) {
        for (const step of plan.filter((s) => load === 'saturation' || s.light)) {
          const connections = load === 'saturation' ? options.connections : options.lightConnections;
          // Our servers idle first (the profile refresh after a collect turn runs on the service's main thread),
          // then the rest of the machine.
          const ours = () => svc.child.cpuSeconds() + bareServer.child.cpuSeconds();
          await waitQuiet(0.05, 60_000, undefined, ours);
          const quiet = await waitQuiet(0.3, bench.quietWaitMs, ours);
          const run = (seconds: number) =>
            generator.run({ targets: [step.url], requests: step.requests, connections, seconds, tag: `${bench.runTag}-${turn}-${++n}` });
          if (options.warmup > 0) await guard(run(options.warmup));
          if (step.events > 0 && step.server === svc.child) await guard(waitCaughtUp(svc));
          const cpu0 = step.server.cpuSeconds();
          const main0 = processCpuSeconds(step.server.pid);
          const gcFrom = options.gcTrace && step.server === svc.child ? logEnd(svc.child.logFile) : undefined;
          const startUs = monotonicUs();
          const result = await guard(run(options.seconds));
          const window = { startUs, endUs: monotonicUs() };
          const cpu1 = step.server.cpuSeconds();
          const main1 = processCpuSeconds(step.server.pid);
          const perRequest = (s: number) => round((s * 1e6) / Math.max(1, result.ok), 1);
          const measured: SpeedRun = {
            path: step.path,
            load,
            connections,
            turn,
            reqPerSec: result.reqPerSec,
            eventsPerSec: Math.round(result.reqPerSec * step.events),
            non2xx: result.non2xx,
            errors: result.errors,
            latencyMs: result.latency,
            cpuUsPerRequest: { server: perRequest(cpu1 - cpu0), main: perRequest(main1 - main0), wrk: perRequest(result.loadGeneratorCpuSeconds) },
            window,
          };
          if (gcFrom !== undefined) {
            const gc = gcSince(svc.child.logFile, gcFrom);
            measured.gc = { ...gc, pauseUsPerRequest: perRequest((gc.scavengePauseMs + gc.markCompactPauseMs) / 1000) };
          }
          if (step.events > 0) {
            const started = performance.now();
            if (step.server === svc.child) await guard(waitCaughtUp(svc, 300_000));
            measured.catchUpMs = Math.round(performance.now() - started);
            measured.cpuUsPerEventWithCompaction = round(((step.server.cpuSeconds() - cpu0) * 1e6) / Math.max(1, result.ok * step.events), 1);
          }
          if (measured.non2xx > 0 || measured.errors > 0) throw new Error(`speed: ${step.path} answered ${measured.non2xx} non-2xx and ${measured.errors} errors: the comparison would not be fair`);
          runs.push(measured);
          say(
            `speed: turn ${turn} ${step.path} (${connections} conn): ${measured.reqPerSec} req/s, p50/p99/max ${measured.latencyMs.p50}/${measured.latencyMs.p99}/${measured.latencyMs.max} ms, ` +
              `CPU ${measured.cpuUsPerRequest.server} µs/req (main ${measured.cpuUsPerRequest.main})` +
              (measured.cpuUsPerEventWithCompaction !== undefined ? `, ${measured.cpuUsPerEventWithCompaction} µs/event with what followed (caught up ${measured.catchUpMs} ms later)` : '') +
              (measured.gc ? `, GC ${gcLine(measured.gc)}` : '') +
              `, machine busy before ${quiet.busyCores}`,
          );
        }
      }
    }
    const summary = summarize(runs);
    console.log(table(summary.map((r) => ({ measure: r.measure, value: r.value, goal: r.goal ?? '', met: r.met === undefined ? '' : r.met ? 'yes' : 'NO' }))));
    return { loadGenerator: generator.description, connections: options.connections, lightConnections: options.lightConnections, seconds: options.seconds, runs, summary };
  } finally {
    await bare?.child.stop();
    await service?.child.stop();
  }
}

function gcLine(gc: NonNullable<SpeedRun['gc']>): string {
  const heap = gc.heapAfterMb ? `, heap after GC ${gc.heapAfterMb[0]} → ${gc.heapAfterMb[1]} MB` : '';
  return `${gc.scavenges} scavenges ${gc.scavengePauseMs} ms, ${gc.markCompacts} mark-compacts ${gc.markCompactPauseMs} ms, max ${gc.maxPauseMs} ms, ${gc.pauseUsPerRequest} µs/req${heap}`;
}

/**
 * An org made like the other's (`withPlan`: its enforced plan for the bench's event, custom_booking_completed in
 * bodies.ts, has 20 members: the four its events carry, typed and bounded, and 16 optional ones of every kind).
 */
async function planOrg(service: Service, slug: string, withPlan: boolean): Promise<Credentials> {
  const org = await admin<{ credentials: { production: Credentials } }>(service, 'POST', '/admin/v1/orgs', { slug, name: slug });
  if (org.status !== 201) throw new Error(`create org: ${org.status} ${JSON.stringify(org.json)}`);
  if (!withPlan) return org.json.credentials.production;
  const optional = Object.fromEntries(
    Array.from({ length: 16 }, (_, i) => [`extra_${i}`, [{ type: 'string', maxLength: 64 }, { type: 'integer', minimum: 0 }, { type: 'boolean' }, { type: 'array', items: { type: 'string' }, maxItems: 10 }][i % 4]]),
  );
  const schema = {
    type: 'object',
    required: ['city', 'nights', 'value', 'currency'],
    properties: {
      city: { type: 'string', minLength: 1, maxLength: 100, pattern: '^[A-Za-z .-]+$' },
      nights: { type: 'integer', minimum: 1, maximum: 365 },
      value: { type: 'number', minimum: 0 },
      currency: { enum: ['EUR', 'USD', 'GBP', 'CHF', 'JPY', 'BRL', 'CAD', 'AUD', 'SEK', 'NOK'] },
      ...optional,
    },
  };
  const plan = await admin(service, 'PUT', `/admin/v1/orgs/${slug}/events/plans/custom_booking_completed`, { schema, mode: 'enforce', environments: ['production'] });
  if (plan.status !== 200) throw new Error(`put plan: ${plan.status} ${JSON.stringify(plan.json)}`);
  return org.json.credentials.production;
}

function post(path: string, credentials: Credentials, batchSize?: number): SpreadRequests {
  return { method: 'POST', path, credentials, ...(batchSize ? { batchSize } : {}) };
}

const median = (xs: number[]) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** The rows: each ratio is taken per round (same minutes), then the median over rounds. */
export function summarize(runs: SpeedRun[]): SummaryRow[] {
  const of = (path: Path, load: Load = 'saturation') => runs.filter((r) => r.path === path && r.load === load);
  const ratio = (a: Path, b: Path, f: (x: SpeedRun, y: SpeedRun) => number, load: Load = 'saturation') =>
    round(median(of(a, load).flatMap((x) => of(b, load).filter((y) => y.turn === x.turn).map((y) => f(x, y)))), 3);
  const p99 = (path: Path, load: Load) => round(median(of(path, load).map((r) => r.latencyMs.p99)), 2);
  const cpu = (r: SpeedRun) => r.cpuUsPerEventWithCompaction ?? r.cpuUsPerRequest.server;
  const rows: Array<[string, number, string, (v: number) => boolean]> = [
    ['collect ÷ bare collect, req/s', ratio('collect', 'bare collect', (x, y) => x.reqPerSec / y.reqPerSec), '≥ 0.7', (v) => v >= 0.7],
    ['collect ÷ bare collect, CPU per event (whole tree, with compaction)', ratio('collect', 'bare collect', (x, y) => cpu(x) / cpu(y)), '≤ 2', (v) => v <= 2],
    ['collect ÷ bare collect, p99 at 50 connections', ratio('collect', 'bare collect', (x, y) => x.latencyMs.p99 / y.latencyMs.p99), '≤ 2', (v) => v <= 2],
    ['collect p99 ms at light load', p99('collect', 'light'), '≤ 10', (v) => v <= 10],
    ['lookup ÷ bare lookup, req/s', ratio('lookup', 'bare lookup', (x, y) => x.reqPerSec / y.reqPerSec), '≥ 0.9', (v) => v >= 0.9],
    ['lookup ÷ bare lookup, CPU per request (whole tree)', ratio('lookup', 'bare lookup', (x, y) => x.cpuUsPerRequest.server / y.cpuUsPerRequest.server), '≤ 1.25', (v) => v <= 1.25],
    ['lookup ÷ bare lookup, p99 at 50 connections', ratio('lookup', 'bare lookup', (x, y) => x.latencyMs.p99 / y.latencyMs.p99), '≤ 1.5', (v) => v <= 1.5],
    ['lookup p99 ms at light load', p99('lookup', 'light'), '≤ 3', (v) => v <= 3],
    ['contact batch of 100 ÷ one lookup, CPU per request (issue 41)', ratio('contact batch', 'lookup', (x, y) => x.cpuUsPerRequest.server / y.cpuUsPerRequest.server), '≤ 3', (v) => v <= 3],
    ['collect with a 20-member plan ÷ collect without, req/s (two orgs made alike)', ratio('plan collect', 'plain collect', (x, y) => x.reqPerSec / y.reqPerSec), '≥ 0.9', (v) => v >= 0.9],
    ['batch ÷ bare batch, events/s', ratio('batch', 'bare batch', (x, y) => x.eventsPerSec / y.eventsPerSec), '≥ 0.6', (v) => v >= 0.6],
    ['batch events/s accepted (durable)', median(of('batch').map((r) => r.eventsPerSec)), '≥ 100000', (v) => v >= 100_000],
  ];
  const info: Array<[string, number]> = [
    ['collect req/s', median(of('collect').map((r) => r.reqPerSec))],
    ['bare collect req/s', median(of('bare collect').map((r) => r.reqPerSec))],
    ['collect CPU µs per event with compaction', median(of('collect').map(cpu))],
    ['bare collect CPU µs per request', median(of('bare collect').map(cpu))],
    ['bare collect p99 ms at light load', p99('bare collect', 'light')],
    ['lookup req/s', median(of('lookup').map((r) => r.reqPerSec))],
    ['bare lookup req/s', median(of('bare lookup').map((r) => r.reqPerSec))],
    ['lookup CPU µs per request', median(of('lookup').map((r) => r.cpuUsPerRequest.server))],
    ['bare lookup CPU µs per request', median(of('bare lookup').map((r) => r.cpuUsPerRequest.server))],
    ['bare lookup p99 ms at light load', p99('bare lookup', 'light')],
    ['bare contact batch ÷ bare lookup, CPU per request (the same ratio for the bare routes)', ratio('bare contact batch', 'bare lookup', (x, y) => x.cpuUsPerRequest.server / y.cpuUsPerRequest.server)],
    ['contact batch ÷ bare contact batch, CPU per request', ratio('contact batch', 'bare contact batch', (x, y) => x.cpuUsPerRequest.server / y.cpuUsPerRequest.server)],
    ['contact batch req/s', median(of('contact batch').map((r) => r.reqPerSec))],
    ['bare contact batch req/s', median(of('bare contact batch').map((r) => r.reqPerSec))],
    ['contact batch CPU µs per request', median(of('contact batch').map((r) => r.cpuUsPerRequest.server))],
    ['bare contact batch CPU µs per request', median(of('bare contact batch').map((r) => r.cpuUsPerRequest.server))],
    ['bare batch events/s', median(of('bare batch').map((r) => r.eventsPerSec))],
    ['batch CPU µs per event with compaction', median(of('batch').map(cpu))],
    ['bare batch CPU µs per event', median(of('bare batch').map(cpu))],
  ];
  return [
    ...rows.filter(([, value]) => Number.isFinite(value)).map(([measure, value, goal, met]) => ({ measure, value, goal, met: met(value) })),
    ...info.filter(([, value]) => Number.isFinite(value)).map(([measure, value]) => ({ measure, value: round(value, 1) })),
  ];
}

/** The bare server, told the org's credentials (as hashes) and the contacts, after the service has them. */
async function startBare(bench: Bench, credentials: Credentials, token: string, profileDir: string | undefined): Promise<{ child: Child; url: string }> {
  const port = await freePort();
  const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
  const child = Child.start('bare-speed', join(bench.root, 'dist/bench/bare-server.js'), {
    cwd: bench.root,
    nodeArgs: profileArgs(bench, 'bare-speed', profileDir),
    logFile: join(bench.workDir, 'bare-speed.log'),
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      BARE_PARTNER_ID: credentials.partnerId,
      BARE_PARTNER_SECRET_SHA256: sha256(credentials.partnerSecret),
      BARE_TOKEN_SHA256: sha256(token),
      BARE_LOG_FILE: join(bench.workDir, 'bare-events.jsonl'),
      BARE_CONTACTS: String(CONTACTS),
      BARE_SCHEMAS_DIR: join(bench.root, 'schemas'),
    },
  });
  const url = `http://127.0.0.1:${port}`;
  await waitHttpOk(`${url}/healthz`, child);
  return { child, url };
}
