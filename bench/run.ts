/**
 * The collect benchmark (SPEC 4; the issue "measure collect") and the Audience API benchmark (SPEC 6,
 * bench/audience.ts), in one run on this machine, with autocannon (no pipelining, varied identities,
 * a unique messageId per event):
 *   bare     a bare Fastify POST handler that parses the body and does nothing (bench/bare-server.ts)
 *   drain    compaction throughput: a backlog of batches written by the service without its compactor,
 *            then the service restarted with every role, timed until every row is in DuckDB
 *   collect  /http/v1/collect with valid custom events (a 200 = durable in the log), same service
 *   batch    /http/v1/batch with 100-event batches, same service
 *   segment  the Segment-compatible /v1/batch with the same events as Segment messages, same service
 * then checks that 200s = events in the log = rows in DuckDB;
 *   audience GET /audience/v2/contacts over 100,000 imported contacts against a bare Fastify GET, alone
 *            and beside collect at half its maximum; event→profile freshness; memory per 100,000 profiles
 *            (its own service and data dir; collect's maximum is taken from the collect phase if it ran)
 *   freshness  identify event → profile (polled via the API) while collect runs in the background at half
 *            its maximum (from the collect phase if it ran, else measured here; or --freshness-rate req/s):
 *            p50/p95/p99 against SPEC 6.1's 1 s, and the service's audience_profile_delay_seconds beside it
 *            (bench/freshness-phase.ts; ~1.5 min)
 *   flows    trigger run time over a window of 10,000 new events with 1M and 10M events stored, event
 *            accepted → webhook received latency with a 1 s schedule, webhook sends/s against bare POST
 *            req/s (bench/flows.ts; bare's req/s from the bare phase if it ran); the trigger SQL against
 *            count(*) of it over the last window of each size
 *   fair     one org's previews and 60 flows beside another org's preview and flow latency
 *            (bench/fair-shares.ts, in a process of its own; ~5 min)
 *   scheduled  a scheduled send to a 100,000-member segment: decisions/s, sends/s to a local receiver, the
 *            service's CPU per send (bench/scheduled.ts)
 *   waits    1M entries waiting in a flow's steps: the service's memory, and a wait's end (timeout or
 *            event) to its send, p50/p99 (bench/flow-waits.ts, in a process of its own; ~1 min)
 *   scale    the many-process layout on a private nats-server: collect through 1 and 2 `collector`
 *            processes, lookups through 1 and 2 `api` processes, bare POST and GET with 1 and 2, each
 *            process pinned to its own core, loaded by wrk (bench/scale.ts; installs wrk if missing)
 *   speed    issue 39's table: collect, lookup and batch each beside a bare route doing the same minimal work
 *            (bench/fair-bare.ts), wrk (one thread, 50 and 4 connections, 8 s), three rounds, CPU of each
 *            whole process tree from /proc (bench/speed.ts)
 * Servers run compiled (dist/), each in its own process; the load generator runs in this process (the
 * scale phase's wrk in its own).
 * Writes bench/results/collect.json (only a complete run of bare,drain,collect,batch with default
 * settings) and bench/results/audience.json (the audience phase with default settings); other runs write
 * bench/results/partial-*.json.tmp; bench/results/flows.json (the flows phase with default settings);
 * bench/results/scale.json (the scale phase with default settings); bench/results/scheduled.json (the scheduled
 * phase with default settings); bench/results/freshness.json (the freshness phase with default settings).
 *
 *   npm run bench                                 everything (~16 min, of which flows ~4.5, scale ~8)
 *   npm run bench -- --only speed                 issue 39's table with wrk (~7 min); --speed-turns 1 for a quick one
 *   npm run bench -- --only speed --speed-paths collect --speed-gc   the service under --trace-gc: each run's GC pauses and heap kept
 *   npm run bench -- --only speed --speed-paths lookup --profile   one path of it (comma-separated: bare-collect,collect,plain-collect,plan-collect,bare-lookup,lookup,bare-contact-batch,contact-batch,bare-batch,batch) under --cpu-prof
 *   npm run bench -- --only collect               some phases: bare,drain,collect,batch,audience,flows,scheduled,waits,scale (comma-separated)
 *   npm run bench -- --only freshness             freshness at half of collect's maximum (measured quickly here)
 *   npm run bench -- --only collect,freshness     the same, at half of the collect phase's maximum
 *   npm run bench -- --only freshness --freshness-rate 1500   at a given background rate (partial)
 *   npm run bench -- --only freshness --ryw-pairs 10000 --ryw-rate 100   issue 41's 10,000 read-your-writes pairs
 *   npm run bench -- --only flows --flow-sizes 1000000 --flow-reps 1   a quicker flows run (partial)
 *   npm run bench -- --only flows --flow-sizes ''   only event → webhook latency and sends/s (~1 min)
 *   npm run bench -- --only audience --profile    the audience service under node --cpu-prof; summary printed
 *   npm run bench -- --only collect --profile     the service under node --cpu-prof; summary printed
 *   npm run bench -- --only collect --roles collector,api    experiment: service without compactor
 *   npm run bench -- --tmp-dir /dev/shm           experiment: data on tmpfs (fdatasync ~free)
 *   npm run bench -- --ablate materializer        experiment: no profile refresh after commits (ablate.ts)
 *   npm run bench -- --only scale                 the scale phase alone (~8 min on a busy machine)
 *   npm run bench -- --only scheduled             the scheduled send alone (~4 min); --scheduled-members 10000 for a quick one
 *   npm run bench -- --only scale --scale-procs 1,2,4 --scale-cores 0,1,2,3   on a larger machine
 *   npm run bench -- --only scale --loadgen autocannon   without wrk (the generator then runs in this process)
 *   other options: --duration 10 --warmup 3 --connections 50 --batch-connections 20 --batch-size 100
 *                  --drain-events 300000 --quiet-wait 10 --no-build --keep (keep the temp data dirs)
 *                  --scale-turns 2 --scale-contacts 5000 --wrk-threads 2
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { benchAudience } from './audience.js';
import { reportAudience } from './audience-report.js';
import { benchFlows } from './flows.js';
import { benchFreshnessPhase } from './freshness-phase.js';
import { benchScheduled } from './scheduled.js';
import { benchSpeed, SPEED_PATHS } from './speed.js';
import { commandVersion, ensureCommand } from './system-tools.js';
import { runScalePhase } from './scale-phase.js';
import { printFlows, reportFlows } from './flows-report.js';
import { BodyTemplate, IDENTITIES, type Credentials } from './bodies.js';
import {
  admin,
  type Bench,
  latencyAndCpuColumns,
  loadSummary,
  measure as measureWith,
  measureBare,
  type Measured,
  metric,
  ORG,
  say,
  type Service,
  startService as startServiceWith,
  table,
  type Target,
} from './harness.js';
import { type LoadResult, type RequestSpec, runLoad } from './load.js';
import { duckdbReadJson, type ReadJsonOutcome } from './drain-bare.js';
import { type Child, waitQuiet } from './procs.js';
import { printSummary, summarizeProfile, type ProfileSummary } from './profile-summary.js';
import { countDuckDb, countLog, type DbCounts, type LogCounts } from './verify.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const resultsDir = join(root, 'bench', 'results');

const PHASES = ['speed', 'bare', 'drain', 'collect', 'batch', 'segment', 'audience', 'freshness', 'flows', 'fair', 'scheduled', 'waits', 'scale'] as const;
type Phase = (typeof PHASES)[number];
/** The phases of bench/results/collect.json; audience has its own file. */
const COLLECT_PHASES: readonly Phase[] = ['bare', 'drain', 'collect', 'batch', 'segment'];

const { values: args } = parseArgs({
  options: {
    only: { type: 'string' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    'batch-connections': { type: 'string', default: '20' },
    'batch-size': { type: 'string', default: '100' },
    'drain-events': { type: 'string', default: '300000' },
    /** Stored events before the flows phase's timed window, one data dir each (comma-separated). */
    'flow-sizes': { type: 'string', default: '1000000,10000000' },
    'flow-reps': { type: 'string', default: '3' },
    /** Members of the scheduled phase's segment. */
    'scheduled-members': { type: 'string', default: '100000' },
    /** The freshness phase's background collect req/s (default: half of collect's maximum). */
    'freshness-rate': { type: 'string' },
    /** The freshness phase's identify → after= lookup pairs, and how many start each second (issue 41 asks 10,000). */
    'ryw-pairs': { type: 'string', default: '300' },
    'ryw-rate': { type: 'string', default: '20' },
    /** Entries waiting in the waits phase. */
    'waits-entries': { type: 'string', default: '1000000' },
    profile: { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    /** Seconds to wait, before each measurement, for the (shared) machine to be idle. */
    'quiet-wait': { type: 'string', default: '10' },
    /** Where the temp data dirs go (e.g. /dev/shm to take the disk's fdatasync out, for experiments). */
    'tmp-dir': { type: 'string', default: tmpdir() },
    /** Experiments: switch parts of the service off (bench/ablate.ts), e.g. materializer. */
    ablate: { type: 'string', default: '' },
    /** ROLES of the service for collect/batch (experiments, e.g. collector,api = no compactor). */
    roles: { type: 'string', default: '' },
    keep: { type: 'boolean', default: false },
    /** The scale phase (bench/scale-phase.ts): process counts, their cores, turns, contacts, load generator. */
    'scale-procs': { type: 'string', default: '1,2' },
    /** CPU of each process under test, in order; default 0, 1, … (everything else runs on the remaining cores, if any). */
    'scale-cores': { type: 'string', default: '' },
    'scale-turns': { type: 'string', default: '2' },
    'scale-contacts': { type: 'string', default: '5000' },
    /** wrk (installed from Debian's packages if missing) or autocannon (in this process). */
    loadgen: { type: 'string', default: 'wrk' },
    'wrk-threads': { type: 'string', default: '2' },
    /** Rounds of the speed phase (each: bare collect, collect, bare lookup, lookup, bare batch, batch, then the light load). */
    'speed-turns': { type: 'string', default: '3' },
    /** Seconds measured per path in the speed phase (issue 39: 8). */
    'speed-seconds': { type: 'string', default: '8' },
    'speed-paths': { type: 'string' },
    'speed-gc': { type: 'boolean', default: false },
  },
});

const phases = new Set<Phase>(
  args.only
    ? args.only.split(',').map((p) => {
        if (!(PHASES as readonly string[]).includes(p)) throw new Error(`--only: unknown phase ${p} (${PHASES.join(', ')})`);
        return p as Phase;
      })
    : PHASES,
);
const defaultSettings = !args.profile && !args.roles && !args.ablate && args['tmp-dir'] === tmpdir();
/** Only a complete, unprofiled run with default roles writes bench/results/collect.json. */
const fullRun = COLLECT_PHASES.every((p) => phases.has(p)) && defaultSettings;
const collectPhases = COLLECT_PHASES.filter((p) => phases.has(p));
const DURATION = Number(args.duration);
const WARMUP = Number(args.warmup);
const CONNECTIONS = Number(args.connections);
const BATCH_CONNECTIONS = Number(args['batch-connections']);
const BATCH_SIZE = Number(args['batch-size']);
const DRAIN_EVENTS = Number(args['drain-events']);
const QUIET_WAIT_MS = Number(args['quiet-wait']) * 1000;

const workDir = mkdtempSync(join(args['tmp-dir'], 'audience-bench-'));
const runTag = Date.now().toString(36);
const bench: Bench = { root, workDir, runTag, warmup: WARMUP, duration: DURATION, quietWaitMs: QUIET_WAIT_MS, ablate: args.ablate };

// ---------------------------------------------------------------------------------------------------
// Build

function build(): void {
  if (args['no-build']) return;
  say('building (tsc → dist/)');
  try {
    execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], {
      cwd: root,
      stdio: 'pipe',
    });
  } catch (error) {
    // tsc still emits on type errors; go on if the entry points exist, but say so.
    const out = String((error as { stdout?: Buffer }).stdout ?? '').split('\n').slice(0, 10).join('\n');
    console.warn(`tsc reported errors (continuing with what it emitted):\n${out}`);
  }
  for (const f of ['dist/src/server.js', 'dist/bench/bare-server.js', 'dist/bench/ablate.js']) {
    if (!existsSync(join(root, f))) throw new Error(`${f} missing after build`);
  }
}

// ---------------------------------------------------------------------------------------------------
// The service

function startService(
  name: string,
  dataDir: string,
  options: { roles?: string; profileDir?: string; onSpawn?: (child: Child) => void } = {},
): Promise<Service> {
  return startServiceWith(bench, name, dataDir, options);
}

/** A write key for the bench org (the drain phase's org was made by an earlier process: its key was not kept). */
async function rotateWriteKey(service: Service): Promise<string> {
  const res = await admin<{ writeKey: string }>(service, 'POST', `/admin/v1/orgs/${ORG}/credentials/production/write-key/rotate`);
  if (res.status !== 200) throw new Error(`rotate write key: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json.writeKey;
}

async function createOrg(service: Service): Promise<Credentials> {
  const res = await admin<{ credentials: { production: Credentials } }>(service, 'POST', '/admin/v1/orgs', { slug: ORG, name: 'Bench' });
  if (res.status !== 201) throw new Error(`create org: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json.credentials.production;
}

/** Rows in DuckDB's events table for the org, as the admin API reports them. */
async function rowsViaApi(service: Service): Promise<number> {
  const res = await admin<{ types: Array<{ count: number }> }>(service, 'GET', `/admin/v1/orgs/${ORG}/events/types`);
  return res.json.types.reduce((sum, t) => sum + t.count, 0);
}

/**
 * Waits until the compactor has caught up: the lag gauge is 0 after a commit that happened once the
 * expected number of rows is there (the gauge alone can be a stale 0 from before the last appends).
 */
async function waitCompacted(
  service: Service,
  expectedRows: number,
  timeoutMs = 300_000,
  pollMs = 100,
): Promise<{ ms: number; rows: number; startedAt: number }> {
  const startedAt = performance.now();
  for (;;) {
    const lag = await service.child.guard(metric(service, 'audience_compaction_lag_records'));
    if (lag === 0) {
      const rows = await rowsViaApi(service);
      if (rows >= expectedRows) return { ms: performance.now() - startedAt, rows, startedAt };
    }
    if (performance.now() - startedAt > timeoutMs) throw new Error(`compaction did not catch up within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

// ---------------------------------------------------------------------------------------------------
// Load

function measure(label: string, target: Target, bodies: BodyTemplate | RequestSpec, connections: number): Promise<Measured> {
  return measureWith(bench, label, target, bodies instanceof BodyTemplate ? { bodies } : bodies, connections);
}

// ---------------------------------------------------------------------------------------------------
// Phases

function benchBare(): Promise<Measured> {
  return measureBare(bench, CONNECTIONS);
}

interface DrainOutcome {
  backlogEvents: number;
  /** The backlog's ingestion, by a service without the compactor role. */
  ingest: LoadResult;
  /** Events/s: backlog ÷ (time from spawn to caught up − the start-up time of the same service without compactor). */
  eventsPerSec: number;
  /** Conservative: backlog ÷ time from spawn to caught up (includes start-up). */
  eventsPerSecFromSpawn: number;
  drainMs: number;
  startupMs: number;
  serverCpu: number;
  transactions: { sum: number; count: number };
  /** The bare equivalent (issue 39): DuckDB's read_json of as many of the same events, in this run. */
  readJson: ReadJsonOutcome;
}

interface ServiceOutcome {
  drain?: DrainOutcome;
  collect?: Measured;
  batch?: Measured;
  segment?: Measured;
  /** After the load ended: until the compactor had caught up (null without the compactor role). */
  tail: { lagRecordsAtEnd: number; rowsAtEnd: number; drainMs: number; rowsDrained: number; eventsPerSec: number | null } | null;
  ok2xxEvents: number;
  rowsViaApi: number;
  log: LogCounts;
  db: DbCounts;
  shutdown: { code: number | null; signal: string | null; killed: boolean; ms: number };
  profile?: ProfileSummary;
}

function okEvents(m: Measured | undefined): number {
  return m ? m.warmup.okEvents + m.measure.okEvents : 0;
}

/**
 * Compaction throughput: a backlog of batches written by the service with the compactor role off, then
 * the service restarted with every role; timed from spawn until the lag is 0 and every row is there,
 * minus the start-up time of the same service without compactor.
 */
async function writeBacklog(dataDir: string): Promise<{ credentials: Credentials; ingest: LoadResult; startupMs: number }> {
  say('drain: writing a backlog with the service without compactor (ROLES=collector,api)');
  const spawned = performance.now();
  const service = await startService('backlog', dataDir, { roles: 'collector,api' });
  const startupMs = Math.round(performance.now() - spawned);
  try {
    const credentials = await createOrg(service);
    const bodies = BodyTemplate.batch(credentials, `d-${runTag}`, BATCH_SIZE);
    const ingest = await service.child.guard(
      runLoad({
        url: service.url,
        path: '/http/v1/batch',
        connections: BATCH_CONNECTIONS,
        amount: Math.max(BATCH_CONNECTIONS, Math.ceil(DRAIN_EVENTS / BATCH_SIZE)),
        bodies,
        serverCpu: () => service.child.cpuSeconds(),
      }),
    );
    say(`drain: backlog of ${ingest.okEvents} events written at ${ingest.eventsPerSec} events/s (no compactor)`);
    return { credentials, ingest, startupMs };
  } finally {
    await service.child.stop();
  }
}

/**
 * The service phases on one data dir: [drain of a backlog →] collect → batch, then the wait for
 * compaction, a clean stop, and the counts of the log and DuckDB.
 */
async function benchService(profileDir: string | undefined): Promise<ServiceOutcome> {
  const dataDir = join(workDir, 'service');
  const compacting = !args.roles || args.roles.split(',').includes('compactor');
  if (phases.has('drain') && !compacting) throw new Error('--only drain needs the compactor role');
  const backlog = phases.has('drain') ? await writeBacklog(dataDir) : undefined;

  if (backlog) {
    const quiet = await waitQuiet(0.3, QUIET_WAIT_MS);
    if (quiet.waitedMs > 1500) say(`drain: waited ${quiet.waitedMs} ms for the machine to go quiet (${quiet.busyCores} cores busy)`);
  }
  say(`service (${args.roles ? `ROLES=${args.roles}` : 'all roles'}, embedded log) in ${dataDir}`);
  const spawned = performance.now();
  const cpuAtSpawn = { value: 0 };
  const service = await startService('service', dataDir, {
    roles: args.roles,
    ...(profileDir ? { profileDir } : {}),
    onSpawn: (child) => (cpuAtSpawn.value = child.cpuSeconds()),
  });
  const target = { url: service.url, serverCpu: () => service.child.cpuSeconds(), child: service.child, hasMetrics: true };
  let drain: DrainOutcome | undefined;
  let collect: Measured | undefined;
  let batch: Measured | undefined;
  let segment: Measured | undefined;
  let tail: ServiceOutcome['tail'] = null;
  let apiRows = 0;
  try {
    if (backlog) {
      const backlogEvents = backlog.ingest.okEvents;
      const drained = await waitCompacted(service, backlogEvents, 300_000, 20);
      const fromSpawnMs = drained.ms + (drained.startedAt - spawned);
      const drainMs = Math.max(1, fromSpawnMs - backlog.startupMs);
      drain = {
        backlogEvents,
        ingest: backlog.ingest,
        eventsPerSec: Math.round(backlogEvents / (drainMs / 1000)),
        eventsPerSecFromSpawn: Math.round(backlogEvents / (fromSpawnMs / 1000)),
        drainMs: Math.round(drainMs),
        startupMs: backlog.startupMs,
        serverCpu: Math.round(((service.child.cpuSeconds() - cpuAtSpawn.value) / (fromSpawnMs / 1000)) * 100) / 100,
        transactions: {
          sum: await metric(service, 'audience_compaction_batch_seconds_sum'),
          count: await metric(service, 'audience_compaction_batch_seconds_count'),
        },
        // Measured while the service idles, caught up.
        readJson: await duckdbReadJson(workDir, backlogEvents, `r-${runTag}`),
      };
      say(
        `drain: ${backlogEvents} events compacted ${Math.round(fromSpawnMs)} ms after spawn (start-up ~${backlog.startupMs} ms) ` +
          `→ ${drain.eventsPerSec} events/s; ${drain.transactions.count} transactions, ${drain.transactions.sum.toFixed(2)} s inside them`,
      );
      say(`drain: DuckDB's read_json of ${backlogEvents} of the same events into a table: ${drain.readJson.ms} ms → ${drain.readJson.eventsPerSec} events/s; drain ${(drain.eventsPerSec / drain.readJson.eventsPerSec).toFixed(2)} × it`);
    }
    const credentials = backlog?.credentials ?? (await createOrg(service));
    if (phases.has('collect')) {
      collect = await measure('collect', { ...target, path: '/http/v1/collect' }, BodyTemplate.single(credentials, `c-${runTag}`), CONNECTIONS);
    }
    if (phases.has('batch')) {
      const bodies = BodyTemplate.batch(credentials, `b-${runTag}`, BATCH_SIZE);
      say(`batch body: ${BATCH_SIZE} events, ${bodies.bytes} bytes`);
      batch = await measure('batch', { ...target, path: '/http/v1/batch' }, bodies, BATCH_CONNECTIONS);
    }
    if (phases.has('segment')) {
      // Compared with batch: both start with the compactor caught up, so neither pays for the other's backlog.
      if (compacting && batch) await waitCompacted(service, (backlog?.ingest.okEvents ?? 0) + okEvents(collect) + okEvents(batch));
      const bodies = BodyTemplate.segmentBatch(`s-${runTag}`, BATCH_SIZE);
      say(`segment body: ${BATCH_SIZE} messages, ${bodies.bytes} bytes`);
      const writeKey = credentials.writeKey ?? (await rotateWriteKey(service));
      const authorization = `Basic ${Buffer.from(`${writeKey}:`).toString('base64')}`;
      segment = await measure('segment', { ...target, path: '/v1/batch' }, { bodies, headers: { authorization } }, BATCH_CONNECTIONS);
    }
    const expected = (backlog?.ingest.okEvents ?? 0) + okEvents(collect) + okEvents(batch) + okEvents(segment);
    if (compacting && (collect || batch || segment)) {
      const lagRecordsAtEnd = await metric(service, 'audience_compaction_lag_records');
      const rowsAtEnd = await rowsViaApi(service);
      say(`load over: ${expected} events answered 200 in all, ${rowsAtEnd} rows in DuckDB, lag ${lagRecordsAtEnd} records; waiting for compaction`);
      const drained = await waitCompacted(service, expected);
      apiRows = drained.rows;
      const rowsDrained = drained.rows - rowsAtEnd;
      tail = {
        lagRecordsAtEnd,
        rowsAtEnd,
        drainMs: Math.round(drained.ms),
        rowsDrained,
        eventsPerSec: rowsDrained > 10_000 ? Math.round(rowsDrained / (drained.ms / 1000)) : null,
      };
      say(`compacted: ${drained.rows} rows after ${Math.round(drained.ms)} ms`);
    } else if (compacting) {
      apiRows = await rowsViaApi(service);
    }
  } catch (error) {
    await service.child.stop();
    throw error;
  }
  const stopStarted = performance.now();
  const exit = await service.child.stop();
  const shutdown = { code: exit.code, signal: exit.signal, killed: exit.killed, ms: Math.round(performance.now() - stopStarted) };
  say(`service stopped (${JSON.stringify(shutdown)}); counting log and DuckDB`);
  const log = await countLog(dataDir);
  const db = await countDuckDb(dataDir, ORG);
  let profile: ProfileSummary | undefined;
  if (profileDir) {
    const file = readdirSync(profileDir).find((f) => f.startsWith(`service-${runTag}`));
    if (file) {
      // Kept next to the results, git-ignored (*.tmp); open it in Chrome DevTools or speedscope.
      const kept = join(resultsDir, `service-${collectPhases.join('-')}.cpuprofile.tmp`);
      mkdirSync(resultsDir, { recursive: true });
      renameSync(join(profileDir, file), kept);
      // The measurement of collect (else batch); the whole profile for drain alone.
      const measured = collect ?? batch;
      profile = summarizeProfile(kept, 30, measured?.measure.window);
    }
  }
  return {
    ...(drain ? { drain } : {}),
    ...(collect ? { collect } : {}),
    ...(batch ? { batch } : {}),
    ...(segment ? { segment } : {}),
    tail,
    ok2xxEvents: (backlog?.ingest.okEvents ?? 0) + okEvents(collect) + okEvents(batch) + okEvents(segment),
    rowsViaApi: apiRows,
    log,
    db,
    shutdown,
    ...(profile ? { profile } : {}),
  };
}

// ---------------------------------------------------------------------------------------------------
// Report

function consistency(okEvents: number, log: LogCounts, db: DbCounts) {
  return {
    ok200Events: okEvents,
    logEvents: log.events,
    logRejected: log.rejected,
    logRecords: log.records,
    eventsPerLogRecord: log.eventsPerRecord,
    dbRows: db.events,
    dbDistinctMessageIds: db.distinctMessageIds,
    dbQuarantine: db.quarantine,
    dbPending: db.pending,
    dbCursor: db.cursor,
    consistent:
      okEvents === log.events &&
      log.events === db.events &&
      db.events === db.distinctMessageIds &&
      log.rejected === 0 &&
      db.quarantine === 0 &&
      db.pending === 0 &&
      db.cursor === log.records,
  };
}

/** bare, drain, collect, batch: measures, prints, writes collect.json; returns collect's and bare's req/s if measured. */
async function collectPhasesRun(profileDir: string | undefined): Promise<{ collect?: number; bare?: number }> {
  const bare = phases.has('bare') ? await benchBare() : undefined;
  const svc = phases.has('collect') || phases.has('batch') || phases.has('segment') || phases.has('drain') ? await benchService(profileDir) : undefined;
  const drain = svc?.drain;

  const bareS = bare && loadSummary(bare);
  const collectS = svc?.collect && loadSummary(svc.collect);
  const batchS = svc?.batch && loadSummary(svc.batch);
  const segmentS = svc?.segment && loadSummary(svc.segment);
  const ratioToBare = bareS && collectS ? Math.round((collectS.reqPerSec / bareS.reqPerSec) * 1000) / 1000 : null;
  const compactionRate = drain?.eventsPerSec ?? null;
  const ratio = (a: number | null | undefined, b: number | undefined) => (a && b ? Math.round((a / b) * 100) / 100 : null);
  const check = svc ? consistency(svc.ok2xxEvents, svc.log, svc.db) : null;

  const report = {
    date: new Date().toISOString(),
    machine: machine(),
    method: {
      loadGenerator: 'autocannon 9 in the orchestrating process, no workers, pipelining 1, fixed request counts so every request is answered',
      servers: 'compiled (dist/), one child process each; the service with the embedded log (fdatasync per group commit), LOG_LEVEL=warn',
      roles: args.roles || 'all (collector, compactor, api, flows)',
      ...(args.ablate ? { ablated: args.ablate } : {}),
      order: 'bare; then one service data dir: backlog written without compactor → restart with every role, drain timed → collect → batch → segment',
      bodies: `custom track event (~${svc?.collect?.measure.bodyBytes ?? 700} B), clientId/e-mail cycled over ${IDENTITIES} identities, unique messageId per event, sentAt = now`,
      connections: { bare: CONNECTIONS, collect: CONNECTIONS, batch: BATCH_CONNECTIONS, segment: BATCH_CONNECTIONS },
      durationSeconds: DURATION,
      warmupSeconds: WARMUP,
      latency: 'ms, 2xx answers, exact percentiles over every response of the measurement',
      cpu: 'CPU seconds per wall second during the measurement (1.0 = one core busy); other = machine − server − load generator (shared machine noise)',
      dataDir: args['tmp-dir'],
      partial: !fullRun,
    },
    bare: bareS ?? null,
    collect: collectS ? { ...collectS, ratioToBare } : null,
    batch: batchS ? { ...batchS, batchSize: BATCH_SIZE } : null,
    segment: segmentS
      ? {
          ...segmentS,
          batchSize: BATCH_SIZE,
          ratioToBatch: ratio(segmentS.eventsPerSec, batchS?.eventsPerSec),
          cpuPerEventRatioToBatch: batchS ? ratio(segmentS.cpu.server / segmentS.eventsPerSec, batchS.cpu.server / batchS.eventsPerSec) : null,
        }
      : null,
    compaction: drain
      ? {
          eventsPerSec: drain.eventsPerSec,
          ratioToIngest: ratio(compactionRate, batchS?.eventsPerSec),
          ratioToCollectIngest: ratio(compactionRate, collectS?.eventsPerSec),
          ratioToIngestWithoutCompactor: ratio(compactionRate, drain.ingest.eventsPerSec),
          eventsPerSecFromSpawn: drain.eventsPerSecFromSpawn,
          backlogEvents: drain.backlogEvents,
          drainMs: drain.drainMs,
          startupMs: drain.startupMs,
          serverCpu: drain.serverCpu,
          transactions: drain.transactions,
          duckdbReadJson: drain.readJson,
          ratioToReadJson: ratio(compactionRate, drain.readJson.eventsPerSec),
          backlogIngestWithoutCompactor: {
            eventsPerSec: drain.ingest.eventsPerSec,
            p50: drain.ingest.latency.p50,
            p99: drain.ingest.latency.p99,
            cpu: drain.ingest.cpu,
          },
          afterLoad: svc?.tail ?? null,
        }
      : svc
        ? { afterLoad: svc.tail }
        : null,
    consistency: check && svc ? { ...check, rowsViaApi: svc.rowsViaApi, shutdown: svc.shutdown } : null,
    targets: {
      collectRatioToBare: { target: 0.65, value: ratioToBare, met: ratioToBare === null ? null : ratioToBare >= 0.65 },
      collectP99Ms: { target: 10, value: collectS?.p99 ?? null, met: collectS ? collectS.p99 <= 10 : null },
      batchEventsPerSec: { target: 300_000, value: batchS?.eventsPerSec ?? null, met: batchS ? batchS.eventsPerSec >= 300_000 : null },
      segmentWithinTenPercentOfBatch: {
        target: 0.9,
        value: ratio(segmentS?.eventsPerSec, batchS?.eventsPerSec),
        met: segmentS && batchS ? segmentS.eventsPerSec >= 0.9 * batchS.eventsPerSec : null,
      },
      compactionRatioToIngest: {
        target: 3,
        ingest: 'batch events/s, the highest ingest rate measured with every role',
        value: ratio(compactionRate, batchS?.eventsPerSec),
        met: compactionRate && batchS ? compactionRate >= 3 * batchS.eventsPerSec : null,
      },
      drainEventsPerSec: { target: 100_000, issue: 39, value: compactionRate ?? null, met: compactionRate ? compactionRate >= 100_000 : null },
      consistent: check?.consistent ?? null,
    },
    ...(svc?.profile ? { profile: svc.profile } : {}),
  };

  // ---- print
  const rows: Array<Record<string, string | number>> = [];
  const add = (name: string, s: ReturnType<typeof loadSummary> | undefined, extra = '') => {
    if (!s) return;
    rows.push({
      phase: name,
      'req/s': s.reqPerSec,
      'events/s': s.eventsPerSec,
      ...latencyAndCpuColumns(s),
      note: extra,
    });
  };
  add('bare', bareS, `${CONNECTIONS} conns`);
  add('collect', collectS, ratioToBare !== null ? `${ratioToBare} × bare` : '');
  add(`batch ×${BATCH_SIZE}`, batchS, `${BATCH_CONNECTIONS} conns, ${batchS?.bodyBytes ?? 0} B bodies`);
  add(`segment ×${BATCH_SIZE}`, segmentS, `${ratio(segmentS?.eventsPerSec, batchS?.eventsPerSec) ?? '-'} × batch, ${segmentS?.bodyBytes ?? 0} B bodies`);
  if (drain) {
    rows.push({
      phase: 'compaction',
      'events/s': drain.eventsPerSec,
      'cpu server': drain.serverCpu,
      note:
        `${drain.backlogEvents} backlog in ${drain.drainMs} ms; ${ratio(compactionRate, drain.readJson.eventsPerSec)} × DuckDB read_json ` +
        `(${drain.readJson.eventsPerSec}/s); ${ratio(compactionRate, batchS?.eventsPerSec) ?? '-'} × batch, ` +
        `${ratio(compactionRate, collectS?.eventsPerSec) ?? '-'} × collect`,
    });
  }
  console.log(`\n${table(rows)}\n`);
  if (check) {
    console.log(
      `consistency: 200s ${check.ok200Events} = log ${check.logEvents} = DuckDB ${check.dbRows} ` +
        `(distinct messageIds ${check.dbDistinctMessageIds}, quarantine ${check.dbQuarantine}, pending ${check.dbPending}, ` +
        `cursor ${check.dbCursor}/${check.logRecords} records) → ${check.consistent}`,
    );
  }
  if (svc?.tail) console.log(`after the load: ${JSON.stringify(svc.tail)}`);
  console.log(`targets: ${JSON.stringify(report.targets, null, 1).replace(/\n\s*/g, ' ')}`);
  if (svc?.profile) printSummary(svc.profile);

  mkdirSync(resultsDir, { recursive: true });
  const out = fullRun
    ? join(resultsDir, 'collect.json')
    : join(resultsDir, `partial-${collectPhases.join('-')}${args.profile ? '-profile' : ''}.json.tmp`);
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  say(`wrote ${out}`);
  return { ...(collectS ? { collect: collectS.reqPerSec } : {}), ...(bareS ? { bare: bareS.reqPerSec } : {}) };
}

/** `bare-post,lookup` → the speed phase's path names; an unknown one is an error that lists them. */
function speedPaths(list: string): string[] {
  const flag = (path: string) => path.replaceAll(' ', '-').toLowerCase();
  return list.split(',').map((given) => {
    const path = SPEED_PATHS.find((p) => flag(p) === given.trim().toLowerCase());
    if (!path) throw new Error(`--speed-paths: unknown path ${given} (one of ${SPEED_PATHS.map(flag).join(', ')})`);
    return path;
  });
}

async function main(): Promise<void> {
  say(`phases: ${[...phases].join(', ')}; work dir ${workDir}`);
  build();
  const profileDir = args.profile ? join(workDir, 'profiles') : undefined;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  mkdirSync(resultsDir, { recursive: true });

  if (phases.has('speed')) {
    const wrk = ensureCommand('wrk', 'wrk', true);
    if (!wrk) throw new Error('the speed phase needs wrk (apt-get install wrk)');
    const turns = Number(args['speed-turns']);
    const outcome = await benchSpeed(bench, {
      wrk,
      wrkVersion: commandVersion(wrk),
      connections: CONNECTIONS,
      lightConnections: 4,
      seconds: Number(args['speed-seconds']),
      warmup: Number(args.warmup),
      turns,
      batchSize: Number(args['batch-size']),
      ...(args['speed-paths'] ? { paths: speedPaths(args['speed-paths']) } : {}),
      ...(profileDir ? { profileDir } : {}),
      gcTrace: args['speed-gc'],
    });
    const command = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
    const out = defaultSettings && turns === 3 && !args['speed-paths'] && !args['speed-gc'] ? join(resultsDir, 'speed.json') : join(resultsDir, 'partial-speed.json.tmp');
    writeFileSync(out, `${JSON.stringify({ phase: 'speed', command, machine: machine(), ...outcome }, null, 2)}\n`);
    say(`wrote ${out}`);
    if (profileDir) {
      // Each path's first measured seconds at saturation, from its server's profile: the service's and the bare one's side by side.
      const files = readdirSync(profileDir);
      for (const run of outcome.runs.filter((r) => r.turn === 1 && r.load === 'saturation')) {
        const file = files.find((f) => f.startsWith(`${run.path.startsWith('bare') ? 'bare-speed' : 'speed'}-${runTag}`));
        if (!file) continue;
        console.log(`\n== ${run.path}, ${run.reqPerSec} req/s: µs of the main thread per request by activity, and the profile`);
        const summary = summarizeProfile(join(profileDir, file), 30, run.window);
        const requests = run.reqPerSec * (Number(args['speed-seconds']) || 1);
        for (const r of summary.byActivity) console.log(`${(((r.ms * 1000) / Math.max(1, requests)).toFixed(1)).padStart(8)} µs  ${r.name}`);
        printSummary(summary);
      }
    }
  }
  const measured = collectPhases.length > 0 ? await collectPhasesRun(profileDir) : {};
  const collectMax = measured.collect;
  if (phases.has('audience')) {
    const outcome = await benchAudience(bench, {
      connections: CONNECTIONS,
      ...(collectMax ? { collectMax } : {}),
      // Kept next to the results, git-ignored (*.tmp); open them in Chrome DevTools or speedscope.
      ...(profileDir ? { profileDir, keepProfilesIn: resultsDir } : {}),
    });
    const report = reportAudience(outcome, machine());
    const out = defaultSettings ? join(resultsDir, 'audience.json') : join(resultsDir, `partial-audience${args.profile ? '-profile' : ''}.json.tmp`);
    writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
    say(`wrote ${out}`);
  }
  if (phases.has('freshness')) {
    const rate = args['freshness-rate'] ? Number(args['freshness-rate']) : undefined;
    const readYourWrites = { events: Number(args['ryw-pairs']), perSecond: Number(args['ryw-rate']) };
    const outcome = await benchFreshnessPhase(bench, { connections: CONNECTIONS, readYourWrites, ...(collectMax ? { collectMax } : {}), ...(rate ? { rate } : {}) });
    const command = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
    const report = { phase: 'freshness', command, machine: machine(), ...outcome };
    const f = outcome.freshness;
    console.log(`\n${table([{ 'collect req/s': outcome.background.reqPerSec, 'p50 ms': f.p50, 'p95 ms': f.p95, 'p99 ms': f.p99, 'max ms': f.max, missing: f.missing, 'p99 ≤ 1 s': outcome.target.met ? 'yes' : 'no' }])}\n`);
    const defaultPairs = args['ryw-pairs'] === '300' && args['ryw-rate'] === '20';
    const out = defaultSettings && !rate && defaultPairs ? join(resultsDir, 'freshness.json') : join(resultsDir, 'partial-freshness.json.tmp');
    writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
    say(`wrote ${out}`);
  }
  if (phases.has('flows')) {
    const sizes = args['flow-sizes'].split(',').filter(Boolean).map(Number);
    const reps = Number(args['flow-reps']);
    const outcome = await benchFlows(bench, {
      sizes,
      reps,
      connections: CONNECTIONS,
      ...(measured.bare ? { bareReqPerSec: measured.bare } : {}),
      ...(profileDir ? { profileDir, keepProfilesIn: resultsDir } : {}),
    });
    const defaults = defaultSettings && args['flow-sizes'] === '1000000,10000000' && reps === 3;
    const command = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
    const report = reportFlows(outcome, machine(), command, !defaults);
    printFlows(report);
    for (const profile of [...outcome.sizes.map((s) => s.profile), outcome.sends.profile]) if (profile) printSummary(profile);
    const out = defaults ? join(resultsDir, 'flows.json') : join(resultsDir, `partial-flows${args.profile ? '-profile' : ''}.json.tmp`);
    writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
    say(`wrote ${out}`);
  }
  if (phases.has('fair')) {
    // Its own process, on the built service: one org's previews and 60 flows beside another's (issue 37,
    // and issue 39's "event → message p99 while another org runs 60 flows"). Writes bench/results/fair-shares.json.
    execFileSync(process.execPath, ['--import', 'tsx', join(root, 'bench', 'fair-shares.ts')], { cwd: root, stdio: 'inherit' });
  }
  if (phases.has('scheduled')) {
    const members = Number(args['scheduled-members']);
    const outcome = await benchScheduled(bench, { members });
    const command = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
    const report = { phase: 'scheduled', command, machine: machine(), ...outcome };
    console.log(`\n${table([{ members, 'start s': outcome.startSeconds, 'decisions/s': outcome.decisionsPerSec, 'sends/s': outcome.sendsPerSec, 'cpu ms/send': outcome.cpu.msPerSend, duplicates: outcome.duplicates }])}\n`);
    const out = defaultSettings && members === 100_000 ? join(resultsDir, 'scheduled.json') : join(resultsDir, 'partial-scheduled.json.tmp');
    writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
    say(`wrote ${out}`);
  }
  if (phases.has('waits')) {
    // A process of its own: its RSS is one of the measures. It writes bench/results/flow-waits.json.
    execFileSync(process.execPath, ['--import', 'tsx', join(root, 'bench', 'flow-waits.ts'), '--waiting', args['waits-entries']], { cwd: root, stdio: 'inherit' });
  }
  if (phases.has('scale')) {
    await runScalePhase(bench, {
      procs: args['scale-procs'],
      cores: args['scale-cores'],
      turns: Number(args['scale-turns']),
      contacts: Number(args['scale-contacts']),
      connections: CONNECTIONS,
      loadgen: args.loadgen,
      wrkThreads: Number(args['wrk-threads']),
      resultsDir,
      machine,
      command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
      defaults: defaultSettings && args['scale-procs'] === '1,2' && !args['scale-cores'] && args.loadgen === 'wrk' && args['scale-turns'] === '2',
    });
  }
}

function machine() {
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? '',
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    // The machine is shared: its load average (1, 5, 15 min) when the report is written.
    loadAverage: loadavg().map((x) => Math.round(x * 100) / 100),
  };
}

// Also when a signal ends the run (procs.ts kills the children first, then exits).
const removeWorkDir = () => rmSync(workDir, { recursive: true, force: true });
if (!args.keep) process.once('exit', removeWorkDir);
try {
  await main();
} finally {
  if (!args.keep) removeWorkDir();
  else say(`kept ${workDir}`);
}
