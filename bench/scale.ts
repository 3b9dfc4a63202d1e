/**
 * The scale phase of bench/run.ts (issue 14): the many-process layout (README "Running many processes")
 * on a private nats-server, measured with 1 and 2 processes of a role, each pinned to its own core:
 *   bare POST / bare GET   bench/bare-server.ts, 1 and 2 processes (the yardstick: how far this
 *                          machine lets even a do-nothing endpoint scale)
 *   collect                POST /http/v1/collect through 1 and 2 `collector` processes, one storage
 *                          shard (compactor,flows) compacting everything
 *   api                    GET /audience/v2/contacts through 1 and 2 `api` processes over the imported
 *                          contacts (profiles loaded from the feed)
 * The load is spread evenly over the processes under test (wrk: one thread per process or more);
 * every process's CPU time is read from /proc before and after each measurement, so CPU per event is
 * measured per process, and so are nats-server's and the shard's shares.
 */
import { syntheticContacts, IdentityPaths } from './contacts.js';
import { type Bench, ORG, say } from './harness.js';
import { startNats, type BenchNats } from './nats-server.js';
import { type Child, machineCpuSeconds, waitQuiet } from './procs.js';
import { checkLookups, type Proc, setUpOrg, startBare, startNode, waitCompacted } from './scale-layout.js';
import { countDuckDb } from './verify.js';
import type { LoadGenerator, SpreadRequests, SpreadResult } from './spread-load.js';

export type Role = 'bare POST' | 'bare GET' | 'collect' | 'api';

export interface ScaleOptions {
  /** Process counts to measure, e.g. [1, 2]. */
  procs: number[];
  /** CPU of the i-th process under test (taskset -c). */
  cores: number[];
  /** CPUs for everything else (nats-server, shard, setup, the load generator); undefined = not pinned. */
  restCpus: string | undefined;
  /** Connections per process under test. */
  connections: number;
  contacts: number;
  /** Each process count measured this many times, in turns (1, 2, 2, 1, …). */
  turns: number;
  generator: LoadGenerator;
  natsServer: string;
}

/** One measurement of one process count. */
export interface ScaleRun {
  role: Role;
  processes: number;
  turn: number;
  load: Omit<SpreadResult, 'loadGeneratorCpuSeconds'>;
  /** Wall seconds between the CPU readings (the load plus the generator's start and exit). */
  windowSeconds: number;
  /** CPU seconds per wall second of each process (1.0 = one core busy); `loadGenerator`, `machine` and `other` too. */
  cores: Record<string, number>;
  /** CPU µs per 2xx answer (= per event for collect) of each process. */
  usPerRequest: Record<string, number>;
  /** Other sessions' load just before (procs.waitQuiet). */
  quiet: { waitedMs: number; busyCores: number };
  /** Our own processes' CPU just before, after waiting for them to settle. */
  settled: { waitedMs: number; busyCores: number };
  warmup: { seconds: number; ok: number; non2xx: number; errors: number; reqPerSec: number };
}

export interface ScaleOutcome {
  runs: ScaleRun[];
  contacts: number;
  syncAlways: boolean;
  /** 2xx events of every collect run (warm-ups too) and the rows the shard stored. */
  consistency: { okEvents: number; storedEvents: number; distinctMessageIds: number; quarantine: number; maxInFlight: number; consistent: boolean } | null;
}

/** Other sessions' load (cores) below which a measurement starts, as in the other phases. */
const QUIET_CORES = 0.3;
/** Our processes' CPU (cores) below which they count as idle between runs, and how long to wait for it. */
const SETTLED_CORES = 0.1;
const SETTLE_MS = 30_000;
/**
 * Seconds in a row our processes must stay below SETTLED_CORES: the shard defers profile refreshes up
 * to 5 s while it has a backlog (src/events/compaction), then publishes them, and the api processes apply them.
 */
const SETTLED_SECONDS = 2;
const SETTLED_SECONDS_AFTER_COLLECT = 6;
/** Paths per GET run, a random contact and identity type each (contacts.ts IDENTITY_MIX). */
const PATHS = 10_000;

export async function benchScale(bench: Bench, options: ScaleOptions): Promise<ScaleOutcome> {
  const max = Math.max(...options.procs);
  const cpusOf = (i: number) => String(options.cores[i % options.cores.length]);
  const started: Proc[] = [];
  let nats: BenchNats | undefined;
  const runs: ScaleRun[] = [];
  const all = (): Child[] => [...started.filter((p) => p.child.running).map((p) => p.child), ...(nats ? [nats.child] : [])];
  const measureRole = (role: Role, procs: Proc[], requests: SpreadRequests, others: Proc[], before?: () => Promise<void>) =>
    measureTurns(bench, options, { role, procs, requests, others, nats, all, before }, runs);
  try {
    say(`scale: nats-server and one storage shard${options.restCpus ? ` on CPUs ${options.restCpus}` : ' (not pinned)'}`);
    nats = await startNats(options.natsServer, bench.workDir, options.restCpus);
    const start = async (name: string, env: { ROLES: string; SHARD?: string }, cpus: string | undefined, dir = name) => {
      const proc = await startNode(bench, name, nats!.url, env, cpus, dir);
      started.push(proc);
      return proc;
    };
    // The import needs the org's database, so it goes to the shard started with the api role too; then
    // the shard runs as in the layout. Its profiles are in the feed for the api processes by then.
    const storage = { ROLES: 'compactor,flows', SHARD: '0/1' };
    const setup = await start('shard-0-setup', { ...storage, ROLES: `${storage.ROLES},api` }, options.restCpus, 'shard-0');
    const contacts = syntheticContacts(options.contacts);
    const { credentials, token } = await setup.child.guard(setUpOrg(setup, contacts));
    await setup.child.stop();
    const shard = await start('shard-0', storage, options.restCpus);
    say(`scale: org with ${contacts.length} contacts and a token; nats-server ${nats.syncAlways ? 'fsyncs every ack' : 'without sync_interval (2.9)'}`);

    // Bare: same bodies and the same request shape as the real routes (a token of the real length).
    const bare = [];
    for (let i = 0; i < max; i++) started.push((bare[i] = await startBare(bench, `bare-${i + 1}`, cpusOf(i))));
    await measureRole('bare POST', bare, { method: 'POST', path: '/bare', credentials }, []);
    const barePaths = pathList(new IdentityPaths(contacts, '/bare-contact', 1));
    await measureRole('bare GET', bare, { method: 'GET', paths: barePaths, headers: lookupHeaders('x'.repeat(token.length)) }, []);
    for (const b of bare) await b.child.stop();

    const collectors = [];
    for (let i = 0; i < max; i++) collectors[i] = await start(`collector-${i + 1}`, { ROLES: 'collector' }, cpusOf(i));
    // Each measurement starts with the shard caught up, so its CPU in the window is for that window's events.
    const collectRuns = await measureRole('collect', collectors, { method: 'POST', path: '/http/v1/collect', credentials }, [shard], () =>
      shard.child.guard(waitCompacted(shard)),
    );
    for (const c of collectors) await c.child.stop();
    await shard.child.guard(waitCompacted(shard));
    const settled = await settle([shard.child, nats.child], SETTLED_SECONDS_AFTER_COLLECT);
    say(`scale: compaction caught up; the shard and nats-server idle after ${settled.waitedMs} ms (${settled.busyCores} cores)`);

    const apis = [];
    for (let i = 0; i < max; i++) apis[i] = await start(`api-${i + 1}`, { ROLES: 'api' }, cpusOf(i));
    for (const api of apis) await checkLookups(api, token, contacts.at(-1)!);
    const apiPaths = pathList(new IdentityPaths(contacts, '/audience/v2/contacts', 2));
    await measureRole('api', apis, { method: 'GET', paths: apiPaths, headers: lookupHeaders(token) }, []);
    for (const api of apis) await api.child.stop();
    await shard.child.stop();
    const consistency = await checkStored(shard.dataDir, collectRuns, options.connections);
    return { runs, contacts: contacts.length, syncAlways: nats.syncAlways, consistency };
  } finally {
    // Services first (they finish their batches), then nats-server; the exit hook in procs.ts kills
    // whatever is left if even this fails.
    await Promise.all(started.map((p) => p.child.stop(15_000)));
    await nats?.child.stop(15_000);
  }
}

interface RoleSetup {
  role: Role;
  /** The processes under test; runs use the first n. */
  procs: Proc[];
  requests: SpreadRequests;
  /** Processes of the layout whose CPU the role's work also uses (the shard for collect). */
  others: Proc[];
  nats: BenchNats | undefined;
  /** Every process of ours still running (not counted as other sessions' load). */
  all: () => Child[];
  /** Before each measurement, after its warm-up. */
  before?: (() => Promise<void>) | undefined;
}

async function measureTurns(bench: Bench, options: ScaleOptions, setup: RoleSetup, runs: ScaleRun[]): Promise<ScaleRun[]> {
  const mine: ScaleRun[] = [];
  for (let turn = 1; turn <= options.turns; turn++) {
    // 1, 2 then 2, 1: a drift of the machine's speed over the phase falls on both counts alike.
    for (const n of turn % 2 === 1 ? options.procs : [...options.procs].reverse()) {
      const run = await measureOnce(bench, options, setup, n, turn);
      say(
        `${setup.role} ×${n} (turn ${turn}): ${run.load.reqPerSec} req/s, p50 ${run.load.latency.p50} ms, p99 ${run.load.latency.p99} ms, ` +
          `µs/request ${JSON.stringify(run.usPerRequest)}, cores ${JSON.stringify(run.cores)}` +
          (run.load.non2xx || run.load.errors ? `, non-2xx ${run.load.non2xx}, errors ${run.load.errors}` : ''),
      );
      mine.push(run);
      runs.push(run);
    }
  }
  return mine;
}

async function measureOnce(bench: Bench, options: ScaleOptions, setup: RoleSetup, n: number, turn: number): Promise<ScaleRun> {
  const procs = setup.procs.slice(0, n);
  const load = (seconds: number, what: string) =>
    guardAll(
      setup.all(),
      options.generator.run({
        targets: procs.map((p) => p.url),
        requests: setup.requests,
        connections: options.connections,
        seconds,
        tag: `${bench.runTag}-${setup.role.replace(' ', '')}-${n}-${turn}-${what}`,
      }),
    );
  const warm = await load(bench.warmup, 'w');
  await setup.before?.();
  const ownCpu = () => setup.all().reduce((sum, c) => sum + c.cpuSeconds(), 0);
  // Our own processes first: the shard refreshes and publishes profiles for a while after compacting
  // (paced), and the api processes apply them; that belongs to the events before, not to this window.
  const settled = await settle(setup.all(), SETTLED_SECONDS);
  if (settled.waitedMs > 1500) say(`${setup.role} ×${n}: waited ${settled.waitedMs} ms for our processes to settle (${settled.busyCores} cores)`);
  const quiet = await waitQuiet(QUIET_CORES, bench.quietWaitMs, ownCpu);
  if (quiet.waitedMs > 1500) say(`${setup.role} ×${n}: waited ${quiet.waitedMs} ms for the machine to go quiet (${quiet.busyCores} cores busy)`);

  const measured = [...procs, ...setup.others];
  const sample = () => ({
    t: performance.now(),
    machine: machineCpuSeconds().busy,
    cpu: [...measured.map((p) => p.child.cpuSeconds()), setup.nats?.child.cpuSeconds() ?? 0],
  });
  const before = sample();
  const result = await load(bench.duration, 'm');
  const after = sample();

  const windowSeconds = (after.t - before.t) / 1000;
  const names = [...measured.map((p) => p.name), ...(setup.role.startsWith('bare') ? [] : ['nats-server'])];
  const cores: Record<string, number> = {};
  const usPerRequest: Record<string, number> = {};
  let ours = 0;
  names.forEach((name, i) => {
    const cpu = after.cpu[i]! - before.cpu[i]!;
    ours += cpu;
    cores[name] = round2(cpu / windowSeconds);
    usPerRequest[name] = Math.round((cpu / Math.max(1, result.ok)) * 1e6);
  });
  const { loadGeneratorCpuSeconds, ...loadResult } = result;
  cores.loadGenerator = round2(loadGeneratorCpuSeconds / windowSeconds);
  usPerRequest.loadGenerator = Math.round((loadGeneratorCpuSeconds / Math.max(1, result.ok)) * 1e6);
  const machine = after.machine - before.machine;
  cores.machine = round2(machine / windowSeconds);
  cores.other = round2(Math.max(0, machine - ours - loadGeneratorCpuSeconds) / windowSeconds);
  return {
    role: setup.role,
    processes: n,
    turn,
    load: loadResult,
    windowSeconds: round2(windowSeconds),
    cores,
    usPerRequest,
    quiet,
    settled,
    warmup: { seconds: warm.seconds, ok: warm.ok, non2xx: warm.non2xx, errors: warm.errors, reqPerSec: warm.reqPerSec },
  };
}

/**
 * After the shard has stopped, its org database counted directly: every event answered 200 is stored
 * once. Rows ≥ 2xx answers, and at most the requests in flight when each run ended more (wrk stops at
 * its deadline without waiting for their answers, and the service may have stored them).
 */
async function checkStored(shardDataDir: string, collectRuns: ScaleRun[], connectionsPerProc: number): Promise<ScaleOutcome['consistency']> {
  const okEvents = collectRuns.reduce((n, r) => n + r.load.ok + r.warmup.ok, 0);
  const maxInFlight = collectRuns.reduce((n, r) => n + 2 * r.processes * connectionsPerProc, 0);
  const db = await countDuckDb(shardDataDir, ORG);
  const consistent = db.events === db.distinctMessageIds && db.events >= okEvents && db.events - okEvents <= maxInFlight && db.quarantine === 0;
  say(
    `scale: ${okEvents} events answered 200 through the collectors; the shard stored ${db.events} (${db.distinctMessageIds} distinct messageIds, ` +
      `quarantine ${db.quarantine}; up to ${maxInFlight} more allowed: in flight when a run ended) → ${consistent}`,
  );
  return { okEvents, storedEvents: db.events, distinctMessageIds: db.distinctMessageIds, quarantine: db.quarantine, maxInFlight, consistent };
}

function pathList(paths: IdentityPaths): string[] {
  return Array.from({ length: PATHS }, () => paths.next());
}

function lookupHeaders(token: string): Record<string, string> {
  return { Authorization: `Bearer ${token}`, Accept: 'application/json' };
}

/** Waits (at most SETTLE_MS) until `children` have used less than SETTLED_CORES for `seconds` 1 s windows in a row. */
async function settle(children: Child[], seconds: number): Promise<{ waitedMs: number; busyCores: number }> {
  const started = performance.now();
  const cpu = () => children.reduce((sum, c) => sum + (c.running ? c.cpuSeconds() : 0), 0);
  let calm = 0;
  for (;;) {
    const left = SETTLE_MS - (performance.now() - started);
    const window = await waitQuiet(SETTLED_CORES, Math.max(0, left), () => 0, cpu);
    calm = window.busyCores < SETTLED_CORES ? calm + 1 : 0;
    if (calm >= seconds || left <= 0) return { waitedMs: Math.round(performance.now() - started), busyCores: window.busyCores };
  }
}

/** Fails fast when any of our processes dies during the work. */
function guardAll<T>(children: Child[], work: Promise<T>): Promise<T> {
  return children.reduce((p, child) => child.guard(p), work);
}

const round2 = (x: number) => Math.round(x * 100) / 100;
