/**
 * The Audience API benchmark (SPEC 6; the issue "measure the Audience API"), one phase of bench/run.ts:
 *   bare GET       a bare Fastify GET answering a constant contact (bench/bare-server.ts /bare-contact)
 *   audience       GET /audience/v2/contacts over 100,000 imported contacts, random contacts, identity
 *                  types mixed (contacts.ts IDENTITY_MIX), org rate limit raised to 100,000/s; measured
 *                  in turns with bare GET (alternate.ts), both servers up
 *   freshness      identify event → profile shows it, real clock (freshness.ts)
 *   + collect      the same audience load while /http/v1/collect runs at half its maximum, same process
 *   memory         RSS and V8 heap of the service before and after the import, each after a full GC
 *                  (inspector-gc.ts) → per 100,000 profiles
 * Same connections, same request headers and path shape for bare and audience; fixed request counts.
 */
import { readdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { measureAlternating } from './alternate.js';
import { BodyTemplate, type Credentials } from './bodies.js';
import { BatchBodies, type Contact, contactsCsv, emailHash, IdentityPaths, syntheticContacts } from './contacts.js';
import { type Freshness, measureFreshness } from './freshness.js';
import { admin, type Bench, measure, type Measured, metric, ORG, profileArgs, say, type Service, startService, type Target } from './harness.js';
import { collectGarbage, INSPECT_ON_SIGNAL } from './inspector-gc.js';
import { type LoadResult, type RequestSpec, runLoad } from './load.js';
import { Child, freePort, waitHttpOk } from './procs.js';
import { summarizeProfile, type ProfileSummary } from './profile-summary.js';

/** SPEC 3: rateLimit is at most 100,000/s; raised so the limiter never answers 429 in the benchmark. */
const RATE_LIMIT = 100_000;
const CONTACTS = 100_000;
/** Identities per batch lookup (its maximum). */
export const BATCH_SIZE = 100;
const IMPORT_CHUNK = 20_000;
const FRESHNESS = { events: 200, perSecond: 20, pollMs: 5, timeoutMs: 10_000 };
/** When collect's maximum comes from this phase: a short measurement (the collect phase does the long one). */
const QUICK_COLLECT = { warmup: 2, duration: 4 };
/**
 * The paced background collect is closed-loop per connection (autocannon): at 50 connections and
 * ~20 ms latency under the audience load, 2,500 req/s would be at the connections' limit, so it gets
 * twice as many, keeping its rate set by the pace rather than by its latency.
 */
const BACKGROUND_CONNECTIONS = 100;
/** Turns of bare GET and audience (alternate.ts), each ~duration/TURNS s. */
const TURNS = 5;

export interface AudienceOptions {
  connections: number;
  /** Collect's maximum req/s measured earlier in the same run (else measured here, quickly). */
  collectMax?: number;
  profileDir?: string;
  /** Where to keep the CPU profiles (service-audience.cpuprofile.tmp, bare-contact.cpuprofile.tmp). */
  keepProfilesIn?: string;
}

export interface Memory {
  rssBytes: number;
  heapUsedBytes: number;
}

export interface AudienceOutcome {
  connections: number;
  contacts: number;
  bare: Measured;
  bareResponseBytes: number;
  audience: Measured;
  audienceResponseBytes: number;
  /** Per turn: audience req/s ÷ bare req/s (alternate.ts). */
  turnRatios: number[];
  identityMix: Record<string, number>;
  import: { seconds: number; imported: number; rejected: number; chunks: number };
  /** `before`/`afterImport` after a full GC; `afterImportNoGc` as the import left it; `afterLoad` at the end. */
  memory: { before: Memory; afterImportNoGc: Memory; afterImport: Memory; afterLoad: Memory };
  freshness: Freshness;
  collectMax: { reqPerSec: number; source: 'collect phase' | 'measured here'; measured?: Measured };
  underCollect: { audience: Measured; collect: LoadResult; collectRate: number };
  /** POST …/contacts/batch of BATCH_SIZE random contacts, after the turns, alone. */
  batch: Measured;
  profile?: Profiles;
}

export interface Profiles {
  /** The service during the turns (idle during bare's), and during audience + collect. */
  audience: ProfileSummary;
  underCollect: ProfileSummary;
  /** The bare server during the turns. */
  bare: ProfileSummary | null;
  files: string[];
}

export async function benchAudience(bench: Bench, options: AudienceOptions): Promise<AudienceOutcome> {
  const contacts = syntheticContacts(CONTACTS);
  const bare = await startBare(bench, options.profileDir);
  const dataDir = join(bench.workDir, 'audience');
  say(`audience: service (all roles, embedded log) in ${dataDir}`);
  let service: Service | undefined;
  let outcome: Omit<AudienceOutcome, 'profile'>;
  try {
    service = await startService(bench, 'audience', dataDir, {
      nodeArgs: [INSPECT_ON_SIGNAL],
      ...(options.profileDir ? { profileDir: options.profileDir } : {}),
    });
    outcome = await againstService(bench, service, bare, options, contacts);
  } finally {
    await bare.child.stop();
    const exit = await service?.child.stop();
    if (exit && exit.code !== 0) say(`audience: service exit ${JSON.stringify(exit)}`);
  }
  const profile = options.profileDir ? keepProfiles(bench, options, outcome) : undefined;
  return { ...outcome, ...(profile ? { profile } : {}) };
}

/** The bare server, up for the whole phase (idle outside its turns). */
async function startBare(bench: Bench, profileDir: string | undefined): Promise<Target & { responseBytes: number }> {
  const port = await freePort();
  const child = Child.start('bare-contact', join(bench.root, 'dist/bench/bare-server.js'), {
    cwd: bench.root,
    logFile: join(bench.workDir, 'bare-contact.log'),
    nodeArgs: profileArgs(bench, 'bare-contact', profileDir),
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1' },
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitHttpOk(`${url}/healthz`, child);
    const responseBytes = (await (await fetch(`${url}/bare-contact?identity=email%3Aa%40example.com`)).arrayBuffer()).byteLength;
    return { url, path: '/bare-contact', serverCpu: () => child.cpuSeconds(), child, responseBytes };
  } catch (error) {
    await child.stop();
    throw error;
  }
}

const headers = (token: string) => ({ authorization: `Bearer ${token}`, accept: 'application/json' });

async function againstService(
  bench: Bench,
  service: Service,
  bare: Target & { responseBytes: number },
  options: AudienceOptions,
  contacts: Contact[],
): Promise<Omit<AudienceOutcome, 'profile'>> {
  const { connections } = options;
  const guard = <T>(p: Promise<T>) => service.child.guard(p);
  const { credentials, token } = await guard(setUp(service));
  const before = await memory(service, true);
  const imported = await guard(importContacts(service, contacts));
  const afterImportNoGc = await memory(service, false);
  const afterImport = await memory(service, true);
  say(
    `audience: ${imported.imported} contacts imported in ${imported.seconds} s; after a full GC: RSS ${mb(before.rssBytes)} → ${mb(afterImport.rssBytes)} MB, ` +
      `heap used ${mb(before.heapUsedBytes)} → ${mb(afterImport.heapUsedBytes)} MB (without: RSS ${mb(afterImportNoGc.rssBytes)}, heap ${mb(afterImportNoGc.heapUsedBytes)} MB)`,
  );
  const audienceResponseBytes = await guard(checkLookups(service, token, contacts[12_345]!));

  const target = { url: service.url, path: '/audience/v2/contacts', serverCpu: () => service.child.cpuSeconds(), child: service.child, hasMetrics: true };
  const paths = new IdentityPaths(contacts, '/audience/v2/contacts', 2);
  const spec: RequestSpec = { method: 'GET', headers: headers(token), paths };
  // Bare gets a well-formed token of the real length: same request bytes, nothing checks it.
  const bareSpec: RequestSpec = { method: 'GET', headers: headers(`aud_${'x'.repeat(36)}`), paths: new IdentityPaths(contacts, '/bare-contact', 1) };
  const alternated = await measureAlternating(
    bench,
    [
      { label: 'bare GET', target: bare, spec: bareSpec },
      { label: 'audience', target, spec },
    ],
    connections,
    TURNS,
  );
  await bare.child.stop();

  // A batch of 100 (issue 41): its CPU per request against one lookup's (the report's ratio).
  const batch = await measure(bench, `audience batch of ${BATCH_SIZE}`, { ...target, path: '/audience/v2/contacts/batch' }, { method: 'POST', headers: headers(token), bodies: new BatchBodies(contacts, BATCH_SIZE) }, connections);

  say(`audience: freshness, ${FRESHNESS.events} identify events at ${FRESHNESS.perSecond}/s, polling every ${FRESHNESS.pollMs} ms`);
  const freshness = await guard(measureFreshness({ url: service.url, token, credentials, contacts, ...FRESHNESS, tag: bench.runTag }));
  say(`audience: freshness p50 ${freshness.p50} ms, p99 ${freshness.p99} ms, max ${freshness.max} ms (n ${freshness.n}, missing ${freshness.missing}, failed ${freshness.failed})`);

  const collectTarget = { ...target, path: '/http/v1/collect' };
  let collectMax: AudienceOutcome['collectMax'];
  if (options.collectMax) {
    collectMax = { reqPerSec: options.collectMax, source: 'collect phase' };
  } else {
    const measured = await measure(bench, 'collect (max)', collectTarget, { bodies: BodyTemplate.single(credentials, `am-${bench.runTag}`) }, connections, QUICK_COLLECT);
    collectMax = { reqPerSec: measured.measure.reqPerSec, source: 'measured here', measured };
    await guard(waitCaughtUp(service));
  }

  const collectRate = Math.max(1, Math.round(collectMax.reqPerSec / 2));
  say(`audience: collect in the background at ${collectRate} req/s (half of ${collectMax.reqPerSec}, ${collectMax.source})`);
  let stopCollect!: () => void;
  const stopped = new Promise<void>((r) => (stopCollect = r));
  const background = runLoad({
    ...collectTarget,
    bodies: BodyTemplate.single(credentials, `ac-${bench.runTag}`),
    connections: BACKGROUND_CONNECTIONS,
    // A cap far above the time needed; the load is stopped when the audience measurement ends.
    amount: collectRate * 600,
    overallRate: collectRate,
    stop: stopped,
  });
  // Awaited below; if the measurement fails first, its failure is the one to report.
  background.catch(() => undefined);
  let underCollect: Measured;
  try {
    // measure() warms up first: collect is at its pace well before the measurement starts.
    underCollect = await measure(bench, 'audience + collect', target, { ...spec, paths: new IdentityPaths(contacts, '/audience/v2/contacts', 3) }, connections);
  } finally {
    stopCollect();
  }
  const collect = await guard(background);
  const accepted = underCollect.server?.eventsAccepted ?? 0;
  say(
    `audience: background collect ${collect.reqPerSec} req/s overall (${Math.round(accepted / underCollect.measure.seconds)} events/s accepted ` +
      `during the measurement), p99 ${collect.latency.p99} ms, non-2xx ${collect.non2xx}, errors ${collect.errors}`,
  );
  const afterLoad = await memory(service, false);
  return {
    connections,
    contacts: contacts.length,
    bare: alternated.measured[0]!,
    bareResponseBytes: bare.responseBytes,
    audience: alternated.measured[1]!,
    audienceResponseBytes,
    turnRatios: alternated.ratios,
    identityMix: { ...paths.issued },
    import: imported,
    memory: { before, afterImportNoGc, afterImport, afterLoad },
    freshness,
    collectMax,
    underCollect: { audience: underCollect, collect, collectRate },
    batch,
  };
}

export async function setUp(service: Service): Promise<{ credentials: Credentials; token: string }> {
  const org = await admin<{ credentials: { production: Credentials } }>(service, 'POST', '/admin/v1/orgs', {
    slug: ORG,
    name: 'Bench',
    audienceApi: true,
    rateLimit: RATE_LIMIT,
  });
  if (org.status !== 201) throw new Error(`create org: ${org.status} ${JSON.stringify(org.json)}`);
  const token = await admin<{ token: string }>(service, 'POST', `/admin/v1/orgs/${ORG}/tokens`, { createdBy: 'bench@example.com' });
  if (token.status !== 201) throw new Error(`create token: ${token.status} ${JSON.stringify(token.json)}`);
  return { credentials: org.json.credentials.production, token: token.json.token };
}

export async function importContacts(service: Service, contacts: Contact[]): Promise<AudienceOutcome['import']> {
  const started = performance.now();
  let imported = 0;
  let rejected = 0;
  let chunks = 0;
  for (let from = 0; from < contacts.length; from += IMPORT_CHUNK) {
    const csv = contactsCsv(contacts, from, Math.min(contacts.length, from + IMPORT_CHUNK));
    const res = await admin<{ imported: number; rejected: unknown[] }>(service, 'POST', `/admin/v1/orgs/${ORG}/contacts/import`, csv, 'text/csv');
    if (res.status !== 200) throw new Error(`import: ${res.status} ${JSON.stringify(res.json).slice(0, 500)}`);
    imported += res.json.imported;
    rejected += res.json.rejected.length;
    chunks++;
  }
  if (imported !== contacts.length || rejected > 0) throw new Error(`import: ${imported} imported, ${rejected} rejected of ${contacts.length}`);
  return { seconds: Math.round((performance.now() - started) / 10) / 100, imported, rejected, chunks };
}

/** Every identity type finds the contact, with the imported values; returns the answer's size. */
async function checkLookups(service: Service, token: string, contact: Contact): Promise<number> {
  const identities = [`email:${contact.email}`, `email-hash:${emailHash(contact.email)}`, `user_id:${contact.userId}`];
  let bytes = 0;
  for (const identity of identities) {
    const res = await fetch(`${service.url}/audience/v2/contacts?identity=${encodeURIComponent(identity)}`, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
    });
    const text = await res.text();
    const body = JSON.parse(text) as { contact?: Record<string, unknown> };
    if (res.status !== 200 || body.contact?.email_address !== contact.email || body.contact?.first_name !== contact.firstName) {
      throw new Error(`lookup by ${identity.split(':')[0]}: ${res.status} ${text.slice(0, 300)}`);
    }
    bytes = Buffer.byteLength(text);
  }
  return bytes;
}

/** RSS and V8 heap used of the service, after a full GC if `gc`. */
async function memory(service: Service, gc: boolean): Promise<Memory> {
  if (gc) await service.child.guard(collectGarbage(service.child));
  return { rssBytes: service.child.rssBytes(), heapUsedBytes: await metric(service, 'nodejs_heap_size_used_bytes') };
}

/** Compaction lag 0 (the quick collect measurement's events are in DuckDB), then a moment for the profile refresh. */
export async function waitCaughtUp(service: Service, timeoutMs = 60_000): Promise<void> {
  const started = performance.now();
  while ((await metric(service, 'audience_compaction_lag_records')) > 0) {
    if (performance.now() - started > timeoutMs) throw new Error(`compaction did not catch up within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
  await new Promise((r) => setTimeout(r, 500));
}

function keepProfiles(bench: Bench, options: AudienceOptions, outcome: Omit<AudienceOutcome, 'profile'>): Profiles | undefined {
  const dir = options.profileDir!;
  const keep = (name: string, as: string): string | undefined => {
    const file = readdirSync(dir).find((f) => f.startsWith(`${name}-${bench.runTag}`));
    if (!file) return undefined;
    const kept = join(options.keepProfilesIn ?? dir, as);
    renameSync(join(dir, file), kept);
    return kept;
  };
  const kept = keep('audience', 'service-audience.cpuprofile.tmp');
  if (!kept) return undefined;
  const bareKept = keep('bare-contact', 'bare-contact.cpuprofile.tmp');
  return {
    files: [kept, ...(bareKept ? [bareKept] : [])],
    audience: summarizeProfile(kept, 25, outcome.audience.measure.window),
    underCollect: summarizeProfile(kept, 25, outcome.underCollect.audience.measure.window),
    bare: bareKept ? summarizeProfile(bareKept, 25, outcome.bare.measure.window) : null,
  };
}

export const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
