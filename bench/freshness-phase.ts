/**
 * The freshness phase (issue 37, finding 6; SPEC 6.1 "an accepted event shows in the profile within 1 s
 * at p99"): event → profile freshness while /http/v1/collect runs at HALF of its saturation rate, in one
 * service (all roles, embedded log, storage process as in production):
 *   1. 10,000 contacts imported (the identify probes change their names);
 *   2. collect's maximum: from the collect phase of the same run, else `--freshness-rate` (the background
 *      rate itself), else measured here quickly;
 *   3. collect in the background at half that maximum (custom events of varied contacts, as the collect
 *      phase sends), warmed up, then freshness.ts: identify events each giving one contact a unique
 *      firstName, paced, each polled through the Audience API until it shows;
 *   4. beside it, the service's own audience_profile_delay_seconds over the same window (receipt → the
 *      profile refreshed; the client-side figure adds the collect answer's and the poll's time).
 */
import { join } from 'node:path';
import { setUp, importContacts, waitCaughtUp } from './audience.js';
import { BodyTemplate } from './bodies.js';
import { syntheticContacts } from './contacts.js';
import { type Freshness, measureFreshness, measureReadYourWrites, measureTraitFreshness, PROBE_TRAIT, type ReadYourWrites } from './freshness.js';
import { admin, ADMIN_KEY, type Bench, measure, type Measured, ORG, say, type Service, startService } from './harness.js';
import { metricsText } from './server-metrics.js';
import { type LoadResult, runLoad } from './load.js';

const CONTACTS = 10_000;
/** 20 probes/s beside the background collect: a load of its own small enough not to move the figure. */
const PROBES = { events: 300, perSecond: 20, pollMs: 25, timeoutMs: 30_000 };
/** Trait probes (issue 41: a trait is refreshed within 5 s of the events that change it). */
const TRAIT_PROBES = { events: 100, perSecond: 10, pollMs: 25, timeoutMs: 30_000 };
export const TRAIT_TARGET_MS = 5000;
const QUICK_COLLECT = { warmup: 2, duration: 4 };
/** Seconds of background collect before the probes start, so compaction and refreshes are in their steady state. */
const SETTLE_SECONDS = 5;
/** As in audience.ts: the paced background load must be set by its pace, not by its connections' latency. */
const BACKGROUND_CONNECTIONS = 100;
export const FRESHNESS_TARGET_P99_MS = 1000;

export interface FreshnessPhaseOptions {
  connections: number;
  /** Collect's maximum req/s measured earlier in the same run. */
  collectMax?: number;
  /** The background collect rate, given (overrides half of the maximum). */
  rate?: number;
  /** Identify → after= lookup pairs: how many, started how many a second. */
  readYourWrites: { events: number; perSecond: number };
}

export interface FreshnessPhaseOutcome {
  collectMax: { reqPerSec: number; source: 'collect phase' | 'measured here' } | null;
  /** Background collect req/s asked for, and what it reached. */
  rate: number;
  background: Pick<LoadResult, 'reqPerSec' | 'non2xx' | 'errors'> & { p99Ms: number };
  /** Client side: collect request sent → first lookup answer showing the change (ms). */
  freshness: Freshness;
  /** The same load: identify → `after=` lookup pairs (issue 41: none stale; lagMs near the delay). */
  readYourWrites: ReadYourWrites;
  /** The same load: an event → the trait it changes served (issue 41: within 5 s). */
  traits: Freshness & { lastRunMs: number | null; target: { maxMs: number; met: boolean } };
  /** Server side, over the probes' window: audience_profile_delay_seconds by bucket (le → events). */
  serverDelay: { events: number; meanMs: number; buckets: Record<string, number> };
  target: { p99Ms: number; met: boolean };
}

export async function benchFreshnessPhase(bench: Bench, options: FreshnessPhaseOptions): Promise<FreshnessPhaseOutcome> {
  const dataDir = join(bench.workDir, 'freshness');
  say(`freshness: service (all roles, embedded log) in ${dataDir}`);
  const service = await startService(bench, 'freshness', dataDir);
  try {
    return await againstService(bench, service, options);
  } finally {
    const exit = await service.child.stop();
    if (exit.code !== 0) say(`freshness: service exit ${JSON.stringify(exit)}`);
  }
}

async function againstService(bench: Bench, service: Service, options: FreshnessPhaseOptions): Promise<FreshnessPhaseOutcome> {
  const guard = <T>(p: Promise<T>) => service.child.guard(p);
  const { credentials, token } = await guard(setUp(service));
  const contacts = syntheticContacts(CONTACTS);
  const imported = await guard(importContacts(service, contacts));
  say(`freshness: ${imported.imported} contacts imported in ${imported.seconds} s`);
  const target = { url: service.url, path: '/http/v1/collect', serverCpu: () => service.child.cpuSeconds(), child: service.child, hasMetrics: true };

  let collectMax: FreshnessPhaseOutcome['collectMax'] = null;
  if (options.rate === undefined) {
    if (options.collectMax) collectMax = { reqPerSec: options.collectMax, source: 'collect phase' };
    else {
      const measured: Measured = await measure(bench, 'collect (max)', target, { bodies: BodyTemplate.single(credentials, `fm-${bench.runTag}`) }, options.connections, QUICK_COLLECT);
      collectMax = { reqPerSec: measured.measure.reqPerSec, source: 'measured here' };
      await guard(waitCaughtUp(service));
    }
  }
  const rate = options.rate ?? Math.max(1, Math.round(collectMax!.reqPerSec / 2));
  say(`freshness: collect in the background at ${rate} req/s${collectMax ? ` (half of ${collectMax.reqPerSec}, ${collectMax.source})` : ' (--freshness-rate)'}`);

  let stopCollect!: () => void;
  const stopped = new Promise<void>((r) => (stopCollect = r));
  const background = runLoad({
    ...target,
    bodies: BodyTemplate.single(credentials, `fc-${bench.runTag}`),
    connections: BACKGROUND_CONNECTIONS,
    // A cap far above the time needed; the load is stopped when the probes end.
    amount: rate * 600,
    overallRate: rate,
    stop: stopped,
  });
  // Awaited below; if the probes fail first, theirs is the failure to report.
  background.catch(() => undefined);
  let freshness: Freshness;
  let readYourWrites: ReadYourWrites;
  let traits: Freshness;
  let lastRunMs: number | null = null;
  let before: Histogram;
  let after: Histogram;
  try {
    await new Promise((r) => setTimeout(r, SETTLE_SECONDS * 1000));
    before = await guard(delayHistogram(service));
    say(`freshness: ${PROBES.events} identify events at ${PROBES.perSecond}/s, polling every ${PROBES.pollMs} ms`);
    freshness = await guard(measureFreshness({ url: service.url, token, credentials, contacts, ...PROBES, tag: bench.runTag }));
    after = await guard(delayHistogram(service));
    const pairs = options.readYourWrites;
    say(`freshness: read your writes, ${pairs.events} identify → after= lookup pairs at ${pairs.perSecond}/s`);
    readYourWrites = await guard(measureReadYourWrites({ url: service.url, token, credentials, contacts, ...PROBES, ...pairs, tag: bench.runTag }));
    await guard(serveProbeTrait(service));
    say(`freshness: a trait over every stored event, ${TRAIT_PROBES.events} events that change it at ${TRAIT_PROBES.perSecond}/s`);
    traits = await guard(measureTraitFreshness({ url: service.url, token, credentials, contacts, ...TRAIT_PROBES, tag: bench.runTag }));
    lastRunMs = (await guard(admin<{ values: { tookMs: number | null } | null }>(service, 'GET', `/admin/v1/orgs/${ORG}/traits/${PROBE_TRAIT.name}`))).json.values?.tookMs ?? null;
  } finally {
    stopCollect();
  }
  const load = await guard(background);
  const serverDelay = difference(before, after);
  say(
    `freshness: p50 ${freshness.p50} ms, p95 ${freshness.p95} ms, p99 ${freshness.p99} ms, max ${freshness.max} ms (n ${freshness.n}, missing ${freshness.missing}, ` +
      `failed ${freshness.failed}); background collect ${load.reqPerSec} req/s, p99 ${load.latency.p99} ms, non-2xx ${load.non2xx}; ` +
      `server side: ${serverDelay.events} events, mean ${serverDelay.meanMs} ms, by bucket ${JSON.stringify(serverDelay.buckets)}`,
  );
  say(`freshness: read your writes ${JSON.stringify(readYourWrites)}`);
  say(`freshness: event → trait served p50 ${traits.p50} ms, p99 ${traits.p99} ms, max ${traits.max} ms (n ${traits.n}, missing ${traits.missing}, failed ${traits.failed}); the trait's last run ${lastRunMs} ms`);
  return {
    collectMax,
    rate,
    background: { reqPerSec: load.reqPerSec, non2xx: load.non2xx, errors: load.errors, p99Ms: load.latency.p99 },
    freshness,
    readYourWrites,
    traits: { ...traits, lastRunMs, target: { maxMs: TRAIT_TARGET_MS, met: traits.missing === 0 && traits.failed === 0 && traits.max <= TRAIT_TARGET_MS } },
    serverDelay,
    target: { p99Ms: FRESHNESS_TARGET_P99_MS, met: freshness.missing === 0 && freshness.failed === 0 && freshness.p99 <= FRESHNESS_TARGET_P99_MS },
  };
}

/** PROBE_TRAIT saved, computed once, and among the org's content fields. */
async function serveProbeTrait(service: Service): Promise<void> {
  const saved = await admin(service, 'PUT', `/admin/v1/orgs/${ORG}/traits/${PROBE_TRAIT.name}`, { sql: PROBE_TRAIT.sql });
  if (saved.status !== 200) throw new Error(`saving the probe trait: ${saved.status} ${JSON.stringify(saved.json)}`);
  for (let tries = 0; ; tries++) {
    const got = await admin<{ values: { computedAt: string | null } | null }>(service, 'GET', `/admin/v1/orgs/${ORG}/traits/${PROBE_TRAIT.name}`);
    if (got.json.values?.computedAt) break;
    if (tries > 300) throw new Error('the probe trait was not computed within 30 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  const { json } = await admin<{ org: { contentFields: string[] } }>(service, 'GET', `/admin/v1/orgs/${ORG}`);
  const patched = await admin(service, 'PATCH', `/admin/v1/orgs/${ORG}`, { contentFields: [...json.org.contentFields, PROBE_TRAIT.name] });
  if (patched.status !== 200) throw new Error(`serving the probe trait: ${patched.status} ${JSON.stringify(patched.json)}`);
}

interface Histogram {
  buckets: Map<string, number>;
  sum: number;
  count: number;
}

async function delayHistogram(service: Service): Promise<Histogram> {
  const text = await metricsText(service.url, ADMIN_KEY);
  const value = (line: string) => Number(line.slice(line.lastIndexOf(' ') + 1));
  const buckets = new Map<string, number>();
  let sum = 0;
  let count = 0;
  for (const line of text.split('\n')) {
    const bucket = /^audience_profile_delay_seconds_bucket\{le="([^"]+)"\} /.exec(line);
    if (bucket) buckets.set(bucket[1]!, value(line));
    else if (line.startsWith('audience_profile_delay_seconds_sum ')) sum = value(line);
    else if (line.startsWith('audience_profile_delay_seconds_count ')) count = value(line);
  }
  return { buckets, sum, count };
}

/** Events per bucket (cumulative, as Prometheus keeps them) between two scrapes. */
function difference(before: Histogram, after: Histogram): FreshnessPhaseOutcome['serverDelay'] {
  const events = after.count - before.count;
  const buckets = Object.fromEntries([...after.buckets].map(([le, n]) => [le, n - (before.buckets.get(le) ?? 0)]));
  return { events, meanMs: events > 0 ? Math.round(((after.sum - before.sum) / events) * 1000) : 0, buckets };
}
