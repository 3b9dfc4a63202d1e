/**
 * The flows benchmark (SPEC 7-8; the issue "measure flows"), one phase of bench/run.ts:
 *   trigger run  POST …/flows/f1/run over a window of 10,000 new events, with 1,000,000 and 10,000,000
 *                events stored before them. The history is bulk-inserted into DuckDB by this process
 *                while the service is stopped (10M through HTTP would take far too long); the 10,000
 *                come through /http/v1/batch and the compactor like any event. Timed by the client and
 *                by the service's audience_trigger_run_seconds histogram.
 *   latency      event accepted (the 200 of /http/v1/collect) → webhook received, flow every 1 s,
 *                50 events/s for 20 s, each event's own id carried in the webhook body; on a new service
 *                and on each size's service after its timed runs (the stored events' cost shows there)
 *   sends/s      20,000 sends queued by one run → received by a local receiver answering 204 at once,
 *                against a bare Fastify POST's req/s measured in the same run
 * The service runs compiled (dist/) in its own process; the receiver runs in this process.
 */
import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { LocalDatabase } from '../src/db/database.js';
import { runSandboxed, windowOf } from '../src/reactions/triggers/sandbox.js';
import { checkSql } from '../src/reactions/triggers/sql-guard.js';
import { BodyTemplate, type Credentials, IDENTITIES } from './bodies.js';
import { admin, type Bench, measureBare, type Measured, metric, ORG, say, type Service, startService } from './harness.js';
import { type Latency, latencyOf, round, runLoad } from './load.js';
import { selfCpuSeconds } from './procs.js';
import { type ProfileSummary, summarizeProfile } from './profile-summary.js';

/** New events per timed window (the figure). */
const WINDOW_EVENTS = 10_000;
const BATCH_SIZE = 100;
const LATENCY = { perSecond: 50, seconds: 20 };
const SENDS = 20_000;
/** When the bare phase did not run: a short bare measurement here (the bare phase does the long one). */
const QUICK_BARE = { warmup: 2, duration: 5 };
const TRIGGER = 'booking_completed';
const TRIGGER_SQL = `SELECT identity, identity_type, ts, event_type, event_id, event_raw
  FROM event_triggers
 WHERE event_type = 'custom_booking_completed'
   AND ts > {cursor_start_time} AND ts <= {cursor_end_time}`;
/** Flows the scheduler must leave alone (runs only through POST …/run): first due after a day. */
const NEVER = 86_400;

export interface FlowsOptions {
  /** Stored events before the timed window, one data dir each. */
  sizes: number[];
  /** Timed runs per size (a new window of WINDOW_EVENTS each). */
  reps: number;
  connections: number;
  /** Bare Fastify POST req/s from the bare phase of the same run (else measured here, shortly). */
  bareReqPerSec?: number;
  /** --profile: the services of the timed runs under node --cpu-prof, kept in keepProfilesIn. */
  profileDir?: string;
  keepProfilesIn?: string;
}

export interface RunSample {
  rows: number;
  sent: number;
  /** POST …/run, request to answer. */
  clientMs: number;
  /** audience_trigger_run_seconds: the run's transaction (query, decisions, outbox rows, cursor). */
  histogramMs: number;
  /** audience_trigger_query_seconds: the trigger SQL alone over the window (the part that could depend on stored size). */
  queryMs: number;
  /** Last 200 of the window's events → compacted (lag 0). */
  compactMs: number;
  /** Then until DuckDB (one serialized connection) was free: the profile refresh of the touched contacts. */
  dbBusyMs: number;
  /** Run start → the window's last webhook received. */
  deliveredMs: number;
}

export interface SizeOutcome {
  storedEvents: number;
  /** Bulk insert of the history (this process, DuckDB INSERT … SELECT FROM range). */
  insertSeconds: number;
  dbFileBytes: number;
  /** Spawn → /readyz with the history in place (profiles materialized from every event at start). */
  startupMs: number;
  rssBytesAfterStart: number;
  runs: RunSample[];
  /** Accepted → webhook received on this service, after the timed runs. */
  latency: LatencyOutcome;
  /** The trigger SQL against the same query returning only count(*), over the last timed window. */
  countOnly: CountOnly;
  /** --profile: the service's main thread during the last timed run (DuckDB's own threads not included). */
  profile?: ProfileSummary;
}

/**
 * Issue 39's bare equivalent for the trigger SQL: `SELECT count(*) FROM (<the trigger SQL>)`, over the
 * same window of the same file, each run COUNT_ONLY_REPS times in turn on one sandboxed connection (the
 * bench's own process, with the service stopped), median ms of each.
 */
export interface CountOnly {
  rows: number;
  triggerMs: number;
  countOnlyMs: number;
  ratio: number;
}

const COUNT_ONLY_REPS = 7;

export interface LatencyOutcome extends Latency {
  sent: number;
  accepted: number;
  received: number;
  missing: number;
  duplicates: number;
  perSecond: number;
  /** The latency flows run in real time (on each compaction commit of new events). */
  realTime: boolean;
}

export interface SendsOutcome {
  sends: number;
  received: number;
  duplicates: number;
  /** POST …/run that queued them. */
  runMs: number;
  /** Run start → last received. */
  seconds: number;
  /** Through the channel: received ÷ (last received − first received); the run's own time excluded. */
  sendsPerSec: number;
  /** received ÷ seconds: the run that queued them included. */
  endToEndPerSec: number;
  /** CPU seconds per wall second over `seconds`. */
  cpu: { service: number; receiverAndBench: number };
  /** --profile: the service's main thread from run start to the last send received. */
  profile?: ProfileSummary;
}

export interface FlowsOutcome {
  sizes: SizeOutcome[];
  latency: LatencyOutcome;
  sends: SendsOutcome;
  bare: { reqPerSec: number; source: 'bare phase' | 'measured here'; measured?: Measured };
}

export async function benchFlows(bench: Bench, options: FlowsOptions): Promise<FlowsOutcome> {
  const receiver = await Receiver.start();
  try {
    const bare = options.bareReqPerSec
      ? { reqPerSec: options.bareReqPerSec, source: 'bare phase' as const }
      : await measureBare(bench, options.connections, QUICK_BARE, 'bare-flows').then((m) => ({
          reqPerSec: m.measure.reqPerSec,
          source: 'measured here' as const,
          measured: m,
        }));
    const sizes: SizeOutcome[] = [];
    for (const size of options.sizes) sizes.push(await triggerRunAt(bench, receiver, size, options));
    const { latency, sends } = await latencyAndSends(bench, receiver, options);
    return { sizes, latency, sends, bare };
  } finally {
    await receiver.close();
  }
}

// ---------------------------------------------------------------------------------------------------
// Trigger run time over a large history

async function triggerRunAt(bench: Bench, receiver: Receiver, storedEvents: number, options: FlowsOptions): Promise<SizeOutcome> {
  const dataDir = join(bench.workDir, `flows-${storedEvents}`);
  const flowId = `run${storedEvents}`;
  say(`flows: ${storedEvents} stored events in ${dataDir}`);
  // 1. Schema, org, trigger and a draft flow, written by the service itself; stopped (checkpointed).
  let service = await start(bench, `flows-seed-${storedEvents}`, dataDir);
  let credentials: Credentials;
  try {
    credentials = await setUp(service, [flowDefinition(flowId, receiver.url, NEVER), flowDefinition(`lat${storedEvents}`, receiver.url, REAL_TIME)]);
  } finally {
    await service.child.stop();
  }
  // 2. The history, straight into the file (nothing else has it open now).
  const dbFile = join(dataDir, 'orgs', `${ORG}.duckdb`);
  const insertStarted = performance.now();
  await insertHistory(dbFile, storedEvents);
  const insertSeconds = round((performance.now() - insertStarted) / 1000, 1);
  const dbFileBytes = statSync(dbFile).size;
  say(`flows: ${storedEvents} events inserted in ${insertSeconds} s (file ${Math.round(dbFileBytes / 1e6)} MB)`);

  // 3. The service on that file; the flow goes live after the history (its cursor = newest visible_at).
  const spawned = performance.now();
  const name = `flows-${storedEvents}`;
  service = await start(bench, name, dataDir, options.profileDir);
  const startupMs = Math.round(performance.now() - spawned);
  const rssBytesAfterStart = service.child.rssBytes();
  const runs: RunSample[] = [];
  let lastWindow: { startUs: number; endUs: number } | undefined;
  let latency: LatencyOutcome;
  try {
    say(`flows: service ready ${startupMs} ms after spawn, RSS ${Math.round(rssBytesAfterStart / 1e6)} MB`);
    await adminOk(service, 'POST', `/admin/v1/orgs/${ORG}/flows/${flowId}/start`);
    for (let rep = 0; rep < options.reps; rep++) {
      const { window, ...sample } = await service.child.guard(timedRun(bench, service, receiver, credentials, flowId, `w${storedEvents}r${rep}`));
      runs.push(sample);
      lastWindow = window;
      say(
        `flows: ${storedEvents} stored, run ${rep + 1}/${options.reps}: ${sample.rows} rows, ${sample.sent} sent; run ${sample.clientMs} ms ` +
          `(histogram ${sample.histogramMs} ms, trigger SQL ${sample.queryMs} ms); compacted ${sample.compactMs} ms after the last 200, DuckDB busy ${sample.dbBusyMs} ms more; ` +
          `all delivered ${sample.deliveredMs} ms after the run started`,
      );
    }
    latency = await service.child.guard(measureLatency(bench, service, receiver, credentials, `lat${storedEvents}`));
  } finally {
    const exit = await service.child.stop();
    if (exit.code !== 0) say(`flows: service exit ${JSON.stringify(exit)}`);
  }
  let countOnly: CountOnly;
  try {
    // With the service stopped: the file is the bench's alone.
    countOnly = await triggerAgainstCountOnly(dbFile, `w${storedEvents}r${options.reps - 1}-`);
  } finally {
    // The 10M file is ~1.5 GB: not kept beyond its size's measurement.
    rmSync(dataDir, { recursive: true, force: true });
  }
  say(`flows: ${storedEvents} stored, trigger SQL ${countOnly.triggerMs} ms against count(*) of it ${countOnly.countOnlyMs} ms (${countOnly.ratio}×) over ${countOnly.rows} rows`);
  const profile = options.profileDir && lastWindow ? keepProfile(bench, options, name, lastWindow) : undefined;
  return { storedEvents, insertSeconds, dbFileBytes, startupMs, rssBytesAfterStart, runs, latency, countOnly, ...(profile ? { profile } : {}) };
}

/**
 * The trigger SQL as a run reads it (checked, sandboxed, every row converted to JS) against `count(*)` of
 * the same query, over the window of the timed run whose message ids start with `idPrefix`.
 */
async function triggerAgainstCountOnly(dbFile: string, idPrefix: string): Promise<CountOnly> {
  const db = await LocalDatabase.open(dbFile);
  try {
    return await db.untrusted(600_000, async (c) => {
      const [bounds] = await c.all<{ first: bigint; last: bigint }>(
        `SELECT epoch_us(min(visible_at)) AS first, epoch_us(max(visible_at)) AS last FROM events WHERE starts_with(message_id, $1)`,
        [idPrefix],
      );
      if (bounds?.first === null || bounds?.first === undefined) throw new Error(`flows: no events of the window ${idPrefix}*`);
      const window = windowOf(BigInt(bounds.first) - 1n, BigInt(bounds.last));
      const checked = await checkSql(c, TRIGGER_SQL, ORG, 'trigger');
      const counted = { ...checked, sql: `SELECT count(*) AS n FROM (${checked.sql})`, columns: ['n'] };
      const triggerMs: number[] = [];
      const countOnlyMs: number[] = [];
      let rows = 0;
      for (let rep = 0; rep < COUNT_ONLY_REPS; rep++) {
        let started = performance.now();
        rows = (await runSandboxed(c, checked, window, WINDOW_EVENTS * 2)).rows.length;
        triggerMs.push(performance.now() - started);
        started = performance.now();
        const [count] = (await runSandboxed(c, counted, window, 1)).rows;
        countOnlyMs.push(performance.now() - started);
        if (Number(count!.n) !== rows) throw new Error(`flows: count(*) ${String(count!.n)} against ${rows} rows`);
      }
      const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
      return { rows, triggerMs: round(median(triggerMs), 1), countOnlyMs: round(median(countOnlyMs), 1), ratio: round(median(triggerMs) / median(countOnlyMs), 2) };
    });
  } finally {
    await db.close();
  }
}

/** The service's CPU profile, kept as <keepProfilesIn>/service-<name>.cpuprofile.tmp, summarized over `window`. */
function keepProfile(bench: Bench, options: FlowsOptions, name: string, window: { startUs: number; endUs: number }): ProfileSummary | undefined {
  const file = join(options.profileDir!, `${name}-${bench.runTag}.cpuprofile`);
  if (!existsSync(file)) return undefined;
  const kept = join(options.keepProfilesIn ?? options.profileDir!, `service-${name}.cpuprofile.tmp`);
  renameSync(file, kept);
  return summarizeProfile(kept, 25, window);
}

/**
 * One window: WINDOW_EVENTS new events through /http/v1/batch → compacted → DuckDB idle → POST run
 * (timed) → every send received (so the next window starts from a quiet service).
 */
async function timedRun(
  bench: Bench,
  service: Service,
  receiver: Receiver,
  credentials: Credentials,
  flowId: string,
  tag: string,
): Promise<RunSample & { window: { startUs: number; endUs: number } }> {
  const load = await runLoad({
    url: service.url,
    path: '/http/v1/batch',
    connections: 10,
    amount: WINDOW_EVENTS / BATCH_SIZE,
    bodies: BodyTemplate.batch(credentials, `${tag}-${bench.runTag}`, BATCH_SIZE),
    serverCpu: () => service.child.cpuSeconds(),
  });
  if (load.okEvents !== WINDOW_EVENTS) throw new Error(`window events: ${load.okEvents} of ${WINDOW_EVENTS} accepted ${JSON.stringify(load.statusCodes)}`);
  const compactMs = await waitCompacted(service);
  const dbBusyMs = await waitDbIdle(service, flowId);

  const before = await histogram(service);
  const receivedBefore = receiver.count(flowId);
  const started = performance.now();
  const startUs = monotonicUs();
  const run = await adminOk<RunAnswer>(service, 'POST', `/admin/v1/orgs/${ORG}/flows/${flowId}/run`);
  const clientMs = performance.now() - started;
  const window = { startUs, endUs: monotonicUs() };
  const after = await histogram(service);
  if (after.count !== before.count + 1) throw new Error(`trigger run histogram: ${after.count - before.count} runs observed, expected 1`);
  const sent = run.outcomes.sent ?? 0;
  if (run.skipped || run.rows !== WINDOW_EVENTS) say(`flows: WARNING the window held ${run.rows} rows (expected ${WINDOW_EVENTS}), skipped: ${run.skipped}`);

  const lastAt = await receiver.waitFor(flowId, receivedBefore + sent, 120_000);
  const deliveredMs = lastAt - started;
  await waitDbIdle(service, flowId);
  return {
    rows: run.rows,
    sent,
    clientMs: round(clientMs, 1),
    histogramMs: round((after.sum - before.sum) * 1000, 1),
    queryMs: round((after.querySum - before.querySum) * 1000, 1),
    compactMs: Math.round(compactMs),
    dbBusyMs: Math.round(dbBusyMs),
    deliveredMs: Math.round(deliveredMs),
    window,
  };
}

/**
 * `storedEvents` production events of the bench org, in visible_at order (as the compactor writes
 * them: 1,000 per commit), over the 20 days before the last two. Older than a day on purpose: the
 * compactor loads the last 24 h of message ids into memory at start (its dedupe window), and this is
 * meant as a stored history, not as the last day's traffic. Shaped like the bench's own events
 * (bodies.ts): the same 20,000 contacts, 10% booking_completed (what the trigger selects), ~600 B raw.
 */
async function insertHistory(dbFile: string, storedEvents: number): Promise<void> {
  const stepUs = Math.floor((20 * 86_400 * 1e6) / storedEvents);
  const email = `'user-' || lpad((i % ${IDENTITIES})::VARCHAR, 6, '0') || '@example.com'`;
  const instance = await DuckDBInstance.create(dbFile);
  const connection = await instance.connect();
  try {
    await connection.run(`
      INSERT INTO events
      SELECT '${ORG}', 'production', 'hist-' || i, 'track',
             CASE WHEN i % 10 = 0 THEN 'custom_booking_completed' WHEN i % 10 < 6 THEN 'custom_page_viewed' ELSE 'custom_search_performed' END,
             'c-' || (i % ${IDENTITIES}), ${email}, NULL,
             base + to_microseconds(i * ${stepUs}),
             base + to_microseconds(i * ${stepUs} - 1000),
             base + to_microseconds((i // 1000 + 1) * 1000 * ${stepUs}),
             '{"city":"Lisbon","nights":' || (i % 7 + 1) || '}',
             '{"clientId":"c-' || (i % ${IDENTITIES}) || '","sentAt":' || (epoch_ms(base) + i * ${stepUs} // 1000) ||
               ',"type":"track","event":"custom","messageId":"hist-' || i || '","context":{"library":{"name":"audience-js","version":"1.4.2"},' ||
               '"page":{"url":"https://shop.example.com/checkout/confirmation?ref=newsletter"},"userAgent":"Mozilla/5.0 (X11; Linux x86_64) ' ||
               'AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36"},"traits":{"email":"' || ${email} || '"},' ||
               '"properties":{"eventName":"booking_completed","properties":{"city":"Lisbon","nights":' || (i % 7 + 1) || '}}}',
             0, NULL
        FROM range(${storedEvents}) t(i), (SELECT now() - INTERVAL 22 DAY AS base)`);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

// ---------------------------------------------------------------------------------------------------
// Latency and sends/s: one small service (no history)

async function latencyAndSends(bench: Bench, receiver: Receiver, options: FlowsOptions): Promise<{ latency: LatencyOutcome; sends: SendsOutcome }> {
  const dataDir = join(bench.workDir, 'flows-latency');
  say(`flows: latency and sends/s, service in ${dataDir}`);
  const service = await start(bench, 'flows-latency', dataDir, options.profileDir);
  let latency: LatencyOutcome;
  let sends: SendsOutcome & { window?: { startUs: number; endUs: number } };
  try {
    const guard = <T>(p: Promise<T>) => service.child.guard(p);
    const credentials = await guard(setUp(service, [flowDefinition('lat', receiver.url, REAL_TIME), flowDefinition('sends', receiver.url, NEVER)]));
    latency = await guard(measureLatency(bench, service, receiver, credentials, 'lat'));
    await adminOk(service, 'POST', `/admin/v1/orgs/${ORG}/flows/lat/pause`);
    sends = await guard(measureSends(bench, service, receiver, credentials));
  } finally {
    await service.child.stop();
  }
  const { window, ...measured } = sends;
  const profile = options.profileDir && window ? keepProfile(bench, options, 'flows-latency', window) : undefined;
  return { latency, sends: { ...measured, ...(profile ? { profile } : {}) } };
}

/** 50 events/s through /http/v1/collect; latency = the webhook's arrival − the event's 200. */
async function measureLatency(bench: Bench, service: Service, receiver: Receiver, credentials: Credentials, flowId: string): Promise<LatencyOutcome> {
  const { perSecond, seconds } = LATENCY;
  await adminOk(service, 'POST', `/admin/v1/orgs/${ORG}/flows/${flowId}/start`);
  await sleep(1500);
  say(`flows: latency (${flowId}), ${perSecond * seconds} events at ${perSecond}/s, real-time flow`);
  const acceptedAt = new Map<string, number>();
  const total = perSecond * seconds;
  const started = performance.now();
  const requests: Array<Promise<void>> = [];
  for (let i = 0; i < total; i++) {
    await sleep(started + (i * 1000) / perSecond - performance.now());
    const messageId = `${flowId}-${bench.runTag}-${i}`;
    requests.push(
      fetch(`${service.url}/http/v1/collect`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(customEvent(credentials, messageId, i)),
      }).then(async (res) => {
        await res.arrayBuffer();
        if (res.status === 200) acceptedAt.set(messageId, performance.now());
      }),
    );
  }
  await Promise.all(requests);
  await receiver.waitFor(flowId, acceptedAt.size, 30_000).catch((error: Error) => say(`flows: ${error.message}`));
  const latencies: number[] = [];
  for (const [id, at] of acceptedAt) {
    const arrived = receiver.arrivalOf(id);
    if (arrived !== undefined) latencies.push(arrived - at);
  }
  const outcome = {
    ...latencyOf(Float64Array.from(latencies).sort()),
    sent: total,
    accepted: acceptedAt.size,
    received: latencies.length,
    missing: acceptedAt.size - latencies.length,
    duplicates: receiver.duplicates,
    perSecond,
    realTime: true,
  };
  say(`flows: latency (${flowId}) p50 ${outcome.p50} ms, p99 ${outcome.p99} ms, max ${outcome.max} ms (received ${outcome.received}/${outcome.accepted}, duplicates ${outcome.duplicates})`);
  return outcome;
}

/** One run queues SENDS webhook sends; timed until the receiver has them all. */
async function measureSends(
  bench: Bench,
  service: Service,
  receiver: Receiver,
  credentials: Credentials,
): Promise<SendsOutcome & { window: { startUs: number; endUs: number } }> {
  await adminOk(service, 'POST', `/admin/v1/orgs/${ORG}/flows/sends/start`);
  const load = await runLoad({
    url: service.url,
    path: '/http/v1/batch',
    connections: 10,
    amount: SENDS / BATCH_SIZE,
    bodies: BodyTemplate.batch(credentials, `s-${bench.runTag}`, BATCH_SIZE),
    serverCpu: () => service.child.cpuSeconds(),
  });
  if (load.okEvents !== SENDS) throw new Error(`sends: ${load.okEvents} of ${SENDS} events accepted`);
  await waitCompacted(service);
  await waitDbIdle(service, 'sends');
  say(`flows: sends/s, one run queueing ${SENDS} webhook sends`);
  const cpu0 = { service: service.child.cpuSeconds(), self: selfCpuSeconds() };
  const started = performance.now();
  const startUs = monotonicUs();
  const run = await adminOk<RunAnswer>(service, 'POST', `/admin/v1/orgs/${ORG}/flows/sends/run`);
  const runMs = performance.now() - started;
  const sent = run.outcomes.sent ?? 0;
  if (sent !== SENDS) say(`flows: WARNING the run decided ${sent} sends (expected ${SENDS}): ${JSON.stringify(run.outcomes)}`);
  const lastAt = await receiver.waitFor('sends', sent, 300_000);
  const seconds = (lastAt - started) / 1000;
  const window = { startUs, endUs: startUs + Math.round(seconds * 1e6) };
  const cpu = {
    service: round((service.child.cpuSeconds() - cpu0.service) / seconds, 2),
    receiverAndBench: round((selfCpuSeconds() - cpu0.self) / seconds, 2),
  };
  const received = receiver.count('sends');
  const firstAt = receiver.firstOf('sends')!;
  const outcome = {
    sends: sent,
    received,
    duplicates: receiver.duplicates,
    runMs: round(runMs, 1),
    seconds: round(seconds, 2),
    sendsPerSec: Math.round(received / ((lastAt - firstAt) / 1000)),
    endToEndPerSec: Math.round(received / seconds),
    cpu,
    window,
  };
  say(
    `flows: ${received} sends received ${outcome.seconds} s after the run started → ${outcome.sendsPerSec} sends/s through the channel, ` +
      `${outcome.endToEndPerSec}/s with the run (${outcome.runMs} ms); cpu service ${cpu.service}, receiver ${cpu.receiverAndBench}`,
  );
  return outcome;
}

// ---------------------------------------------------------------------------------------------------
// The service and its admin API

interface RunAnswer {
  skipped: string | null;
  rows: number;
  outcomes: Record<string, number>;
}

function start(bench: Bench, name: string, dataDir: string, profileDir?: string): Promise<Service> {
  // QUERIES_DIR inside the data dir: PUT writes the trigger file there (the default is ./queries).
  return startService(bench, name, dataDir, {
    env: { QUERIES_DIR: join(dataDir, 'queries'), WEBHOOK_ALLOW_PRIVATE: 'true' },
    ...(profileDir ? { profileDir } : {}),
  });
}

async function adminOk<T = unknown>(service: Service, method: string, path: string, body?: unknown): Promise<T> {
  const res = await admin<T>(service, method, path, body);
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.json).slice(0, 500)}`);
  return res.json;
}

/** The org, the trigger and the flows (drafts); the org's production credentials. */
async function setUp(service: Service, flows: object[]): Promise<Credentials> {
  const org = await adminOk<{ credentials: { production: Credentials } }>(service, 'POST', '/admin/v1/orgs', { slug: ORG, name: 'Bench' });
  await adminOk(service, 'PUT', `/admin/v1/orgs/${ORG}/triggers/${TRIGGER}`, { sql: TRIGGER_SQL });
  for (const flow of flows) await adminOk(service, 'POST', `/admin/v1/orgs/${ORG}/flows`, flow);
  return org.credentials.production;
}

/** The latency flows: run when events are stored (real time, the default), their schedule the default 60 s. */
const REAL_TIME = 'real time';

/**
 * The body carries the event's id (latency) and the flow's (the receiver counts per flow). A flow the
 * bench runs itself (timed runs, sends/s) is not real time: its windows are the bench's.
 */
function flowDefinition(id: string, url: string, schedule: number | typeof REAL_TIME) {
  return {
    id,
    name: `bench ${id}`,
    category: 'triggered',
    entry: 'when_contact_triggers_event',
    trigger: TRIGGER,
    ...(schedule === REAL_TIME ? { realTime: true } : { scheduleSeconds: schedule, realTime: false }),
    message: { channel: 'webhook', url, template: { body: { eventId: '{{ event.event_id }}', flow: '{{ flow.id }}', city: '{{ event.properties.city }}' } } },
  };
}

function customEvent(credentials: Credentials, messageId: string, n: number) {
  const id = String(n % IDENTITIES).padStart(6, '0');
  return {
    ...credentials,
    clientId: `c-${id}`,
    sentAt: Date.now(),
    type: 'track',
    event: 'custom',
    messageId,
    properties: { eventName: 'booking_completed', properties: { city: 'Lisbon', nights: 3 } },
    traits: { email: `user-${id}@example.com` },
  };
}

async function histogram(service: Service): Promise<{ sum: number; count: number; querySum: number }> {
  return {
    sum: await metric(service, 'audience_trigger_run_seconds_sum'),
    count: await metric(service, 'audience_trigger_run_seconds_count'),
    querySum: await metric(service, 'audience_trigger_query_seconds_sum'),
  };
}

/**
 * Until every accepted event is in DuckDB: the lag gauge is 0 after a commit that came after the last
 * 200 (the gauge alone may be a stale 0 from before the appends), seen twice 50 ms apart. When the
 * commits were all done before we looked, no further commit comes: 0 for 600 ms then counts too. The
 * run's row count is checked anyway (timedRun warns when the window is short).
 */
async function waitCompacted(service: Service, timeoutMs = 120_000): Promise<number> {
  const started = performance.now();
  const commits = await metric(service, 'audience_compaction_batch_seconds_count');
  let zeros = 0;
  let zeroSince: number | undefined;
  for (;;) {
    const lag = await metric(service, 'audience_compaction_lag_records');
    const now = performance.now();
    if (lag === 0) {
      zeroSince ??= now;
      zeros++;
      const committed = (await metric(service, 'audience_compaction_batch_seconds_count')) > commits;
      if ((committed && zeros >= 2) || now - zeroSince > 600) return (committed ? now : zeroSince) - started;
    } else {
      zeros = 0;
      zeroSince = undefined;
    }
    if (now - started > timeoutMs) throw new Error(`compaction did not catch up within ${timeoutMs} ms`);
    await sleep(50);
  }
}

/**
 * Until DuckDB's one connection is free: three admin reads in a row answered within 20 ms, no send
 * of the flow still pending. Every use of the connection is queued (src/db/database.ts), so a read
 * waits behind a profile refresh or a send-status flush; measured, so the run is timed on its own.
 */
async function waitDbIdle(service: Service, flowId: string, timeoutMs = 120_000): Promise<number> {
  const started = performance.now();
  for (let fast = 0; fast < 3; ) {
    const t = performance.now();
    const pending = await adminOk<{ sends: unknown[] }>(service, 'GET', `/admin/v1/orgs/${ORG}/flows/${flowId}/sends?status=pending&limit=1`);
    fast = performance.now() - t < 20 && pending.sends.length === 0 ? fast + 1 : 0;
    if (performance.now() - started > timeoutMs) throw new Error(`DuckDB still busy after ${timeoutMs} ms`);
    if (fast < 3) await sleep(20);
  }
  return performance.now() - started;
}

/** CLOCK_MONOTONIC µs, the clock of V8 CPU profiles (as load.ts). */
function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.max(0, ms)));
}

// ---------------------------------------------------------------------------------------------------
// The webhook receiver

/**
 * A local webhook receiver (node:http, this process) answering 204 at once. Records, per flow, how
 * many sends arrived and when, and per event id its first arrival; a repeated webhook-id (Standard
 * Webhooks: the send id) is a duplicate delivery.
 */
export class Receiver {
  private readonly arrivals = new Map<string, number>();
  private readonly perFlow = new Map<string, { count: number; firstAt: number; lastAt: number }>();
  private readonly webhookIds = new Set<string>();
  duplicates = 0;

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<Receiver> {
    let receiver!: Receiver;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        receiver.record(String(req.headers['webhook-id'] ?? ''), Buffer.concat(chunks).toString('utf8'));
        res.writeHead(204).end();
      });
    });
    // Node's default keep-alive timeout (5 s) is shorter than undici's; the service keeps its pool.
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    receiver = new Receiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`);
    return receiver;
  }

  private record(webhookId: string, body: string): void {
    const now = performance.now();
    if (this.webhookIds.has(webhookId)) {
      this.duplicates++;
      return;
    }
    this.webhookIds.add(webhookId);
    const { eventId, flow } = JSON.parse(body) as { eventId: string; flow: string };
    if (!this.arrivals.has(eventId)) this.arrivals.set(eventId, now);
    const f = this.perFlow.get(flow) ?? { count: 0, firstAt: now, lastAt: now };
    f.count++;
    f.lastAt = now;
    this.perFlow.set(flow, f);
  }

  count(flow: string): number {
    return this.perFlow.get(flow)?.count ?? 0;
  }

  firstOf(flow: string): number | undefined {
    return this.perFlow.get(flow)?.firstAt;
  }

  arrivalOf(eventId: string): number | undefined {
    return this.arrivals.get(eventId);
  }

  /** Resolves with the time of the last arrival once `flow` has `count` sends. */
  async waitFor(flow: string, count: number, timeoutMs: number): Promise<number> {
    const started = performance.now();
    while (this.count(flow) < count) {
      if (performance.now() - started > timeoutMs) throw new Error(`receiver: ${this.count(flow)} of ${count} sends of ${flow} after ${timeoutMs} ms`);
      await sleep(10);
    }
    return this.perFlow.get(flow)?.lastAt ?? performance.now();
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((ok) => this.server.close(() => ok()));
  }
}
