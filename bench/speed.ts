/**
 * The hot paths of issue 27, each beside a bare Fastify endpoint in the same run: wrk (C, one thread,
 * 50 connections, its own process) as the load generator, the service's CPU read from /proc before and
 * after each measurement (the service process and its storage process; the main process alone beside it).
 *   bare POST   bench/bare-server.ts: Fastify parses the body and answers {ok:true}
 *   collect     POST /http/v1/collect, one custom event per request, a unique messageId each
 *   bare GET    bench/bare-server.ts: a constant contact of the Audience API's shape
 *   lookup      GET /audience/v2/contacts over 100,000 imported contacts (contacts.ts's identity mix)
 *   batch       POST /http/v1/batch, 100 events per request
 * in `turns` rounds of that order. After each collect and batch measurement the service's compaction is
 * waited for, and its CPU until then is counted too ("with compaction"), so a measurement never pays
 * for the previous one's backlog. Writes bench/results/speed.json (default settings) or a .tmp file.
 */
import { join } from 'node:path';
import { importContacts, setUp, waitCaughtUp } from './audience.js';
import type { Credentials } from './bodies.js';
import { IdentityPaths, syntheticContacts } from './contacts.js';
import { type Bench, say, type Service, startService, table } from './harness.js';
import { round } from './load.js';
import { Child, freePort, processCpuSeconds, waitHttpOk, waitQuiet } from './procs.js';
import type { SpreadRequests, SpreadResult } from './spread-load.js';
import { wrkGenerator } from './wrk.js';

export interface SpeedOptions {
  wrk: string;
  wrkVersion: string;
  connections: number;
  seconds: number;
  warmup: number;
  turns: number;
  batchSize: number;
  /** Only these paths (a profile of one path, e.g. `--speed-paths lookup --profile`); default all. */
  paths?: readonly string[];
  profileDir?: string;
}

export const SPEED_PATHS = ['bare POST', 'collect', 'bare GET', 'lookup', 'batch'] as const;
type Path = (typeof SPEED_PATHS)[number];

export interface SpeedRun {
  path: Path;
  turn: number;
  /** Requests answered 2xx per second. */
  reqPerSec: number;
  eventsPerSec: number;
  non2xx: number;
  errors: number;
  latencyMs: SpreadResult['latency'];
  /** µs of CPU per request: the server's processes (service: main + storage), its main process alone, wrk. */
  cpuUsPerRequest: { server: number; main: number; wrk: number };
  /** µs of the service's CPU per event including the compaction that followed (collect and batch). */
  cpuUsPerEventWithCompaction?: number;
  /** ms from the end of the load until the service's compaction lag was 0. */
  catchUpMs?: number;
}

export interface SpeedOutcome {
  loadGenerator: string;
  connections: number;
  seconds: number;
  runs: SpeedRun[];
  /** Medians over the turns. */
  summary: Record<string, number>;
}

const CONTACTS = 100_000;
const PATHS = 4_096;

export async function benchSpeed(bench: Bench, options: SpeedOptions): Promise<SpeedOutcome> {
  const generator = wrkGenerator({ wrk: options.wrk, workDir: bench.workDir, threads: 1, cpus: undefined, version: options.wrkVersion });
  const bare = await startBare(bench);
  let service: Service | undefined;
  try {
    service = await startService(bench, 'speed', join(bench.workDir, 'speed'), options.profileDir ? { profileDir: options.profileDir } : {});
    const svc = service;
    const guard = <T>(p: Promise<T>) => svc.child.guard(p);
    const { credentials, token } = await guard(setUp(svc));
    const contacts = syntheticContacts(CONTACTS);
    const imported = await guard(importContacts(svc, contacts));
    say(`speed: ${imported.imported} contacts imported in ${imported.seconds} s`);
    await guard(waitCaughtUp(svc));

    const lookupPaths = new IdentityPaths(contacts, '/audience/v2/contacts', 2);
    const barePaths = new IdentityPaths(contacts, '/bare-contact', 2);
    const list = (p: IdentityPaths) => Array.from({ length: PATHS }, () => p.next());
    const headers = (t: string) => ({ Authorization: `Bearer ${t}`, Accept: 'application/json' });
    const all: Array<{ path: Path; server: Child; url: string; requests: SpreadRequests; events: number }> = [
      { path: 'bare POST', server: bare.child, url: bare.url, requests: post('/bare', credentials), events: 1 },
      { path: 'collect', server: svc.child, url: svc.url, requests: post('/http/v1/collect', credentials), events: 1 },
      // Bare gets a token of the real length: the same request bytes; nothing checks it.
      { path: 'bare GET', server: bare.child, url: bare.url, requests: { method: 'GET', paths: list(barePaths), headers: headers(`aud_${'x'.repeat(36)}`) }, events: 0 },
      { path: 'lookup', server: svc.child, url: svc.url, requests: { method: 'GET', paths: list(lookupPaths), headers: headers(token) }, events: 0 },
      {
        path: 'batch',
        server: svc.child,
        url: svc.url,
        requests: post('/http/v1/batch', credentials, options.batchSize),
        events: options.batchSize,
      },
    ];
    const plan = all.filter((step) => !options.paths || options.paths.includes(step.path));

    const runs: SpeedRun[] = [];
    let n = 0;
    for (let turn = 1; turn <= options.turns; turn++) {
      for (const step of plan) {
        // Our servers idle first (the profile refresh after a collect turn runs on the service's main thread),
        // then the rest of the machine.
        const ours = () => svc.child.cpuSeconds() + bare.child.cpuSeconds();
        await waitQuiet(0.05, 60_000, undefined, ours);
        const quiet = await waitQuiet(0.3, bench.quietWaitMs, ours);
        const load = (seconds: number) =>
          generator.run({ targets: [step.url], requests: step.requests, connections: options.connections, seconds, tag: `${bench.runTag}-${turn}-${++n}` });
        if (options.warmup > 0) await guard(load(options.warmup));
        if (step.events > 0) await guard(waitCaughtUp(svc));
        const cpu0 = step.server.cpuSeconds();
        const main0 = processCpuSeconds(step.server.pid);
        const result = await guard(load(options.seconds));
        const cpu1 = step.server.cpuSeconds();
        const main1 = processCpuSeconds(step.server.pid);
        const perRequest = (s: number) => round((s * 1e6) / Math.max(1, result.ok), 1);
        const run: SpeedRun = {
          path: step.path,
          turn,
          reqPerSec: result.reqPerSec,
          eventsPerSec: Math.round(result.reqPerSec * step.events),
          non2xx: result.non2xx,
          errors: result.errors,
          latencyMs: result.latency,
          cpuUsPerRequest: { server: perRequest(cpu1 - cpu0), main: perRequest(main1 - main0), wrk: perRequest(result.loadGeneratorCpuSeconds) },
        };
        if (step.events > 0 && step.server === svc.child) {
          const started = performance.now();
          await guard(waitCaughtUp(svc, 300_000));
          run.catchUpMs = Math.round(performance.now() - started);
          run.cpuUsPerEventWithCompaction = round(((svc.child.cpuSeconds() - cpu0) * 1e6) / Math.max(1, result.ok * step.events), 1);
        }
        runs.push(run);
        say(
          `speed: turn ${turn} ${step.path}: ${run.reqPerSec} req/s, p50/p99/max ${run.latencyMs.p50}/${run.latencyMs.p99}/${run.latencyMs.max} ms, ` +
            `CPU ${run.cpuUsPerRequest.server} µs/req (main ${run.cpuUsPerRequest.main})` +
            (run.cpuUsPerEventWithCompaction !== undefined ? `, ${run.cpuUsPerEventWithCompaction} µs/event with compaction (caught up ${run.catchUpMs} ms later)` : '') +
            `, non-2xx ${run.non2xx}, errors ${run.errors}, machine busy before ${quiet.busyCores}`,
        );
      }
    }
    const outcome: SpeedOutcome = {
      loadGenerator: generator.description,
      connections: options.connections,
      seconds: options.seconds,
      runs,
      summary: summarize(runs),
    };
    console.log(table(Object.entries(outcome.summary).map(([measure, value]) => ({ measure, value }))));
    return outcome;
  } finally {
    await bare.child.stop();
    await service?.child.stop();
  }
}

function post(path: string, credentials: Credentials, batchSize?: number): SpreadRequests {
  return { method: 'POST', path, credentials, ...(batchSize ? { batchSize } : {}) };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** The rows: each ratio is taken per turn (same minute), then the median over turns. */
function summarize(runs: SpeedRun[]): Record<string, number> {
  const of = (path: Path) => runs.filter((r) => r.path === path);
  const perTurn = (a: Path, b: Path, f: (x: SpeedRun, y: SpeedRun) => number) =>
    round(median(of(a).flatMap((x) => of(b).filter((y) => y.turn === x.turn).map((y) => f(x, y)))), 3);
  return {
    'collect / bare POST (req/s)': perTurn('collect', 'bare POST', (x, y) => x.reqPerSec / y.reqPerSec),
    'collect CPU per event / bare POST CPU per request': perTurn('collect', 'bare POST', (x, y) => x.cpuUsPerRequest.server / y.cpuUsPerRequest.server),
    'collect CPU µs per event': median(of('collect').map((r) => r.cpuUsPerRequest.server)),
    'collect CPU µs per event with compaction': median(of('collect').map((r) => r.cpuUsPerEventWithCompaction ?? NaN)),
    'collect p99 ms': median(of('collect').map((r) => r.latencyMs.p99)),
    'collect max ms': Math.max(...of('collect').map((r) => r.latencyMs.max)),
    'lookup / bare GET (req/s)': perTurn('lookup', 'bare GET', (x, y) => x.reqPerSec / y.reqPerSec),
    'lookup CPU per request / bare GET': perTurn('lookup', 'bare GET', (x, y) => x.cpuUsPerRequest.server / y.cpuUsPerRequest.server),
    'lookup p99 ms': median(of('lookup').map((r) => r.latencyMs.p99)),
    'batch events/s': median(of('batch').map((r) => r.eventsPerSec)),
    'batch CPU µs per event with compaction': median(of('batch').map((r) => r.cpuUsPerEventWithCompaction ?? NaN)),
    'bare POST req/s': median(of('bare POST').map((r) => r.reqPerSec)),
    'bare GET req/s': median(of('bare GET').map((r) => r.reqPerSec)),
  };
}

async function startBare(bench: Bench): Promise<{ child: Child; url: string }> {
  const port = await freePort();
  const child = Child.start('bare-speed', join(bench.root, 'dist/bench/bare-server.js'), {
    cwd: bench.root,
    logFile: join(bench.workDir, 'bare-speed.log'),
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1' },
  });
  const url = `http://127.0.0.1:${port}`;
  await waitHttpOk(`${url}/healthz`, child);
  return { child, url };
}
