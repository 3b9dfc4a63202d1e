/**
 * `npm run soak [-- --minutes 10] [--nats] [--seed N] [--busy 2]`: the service's promises under load and
 * faults, checked end to end (issue 37). Partners send events and batches to three orgs, a
 * personalization service looks contacts up, a data engineer previews the trigger, live flows send to a
 * real webhook receiver; meanwhile the service is killed and restarted, its storage process killed and
 * stopped, the disk saturated, and busy loops take cores. Then: acknowledged = stored, each send delivered
 * once per webhook-id (repeats only for sends in flight at a kill), no cap exceeded, nothing sent in quiet
 * hours, no 5xx. One screen of report, a JSON file, exit 1 when a check fails.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startNats } from '../nats-server.js';
import { check, readOrg } from './checks.js';
import { type DriverContext, Tally, type Target, batchDriver, collectDriver, lookupDriver, previewDriver } from './drivers.js';
import { FAULT_KINDS, type FaultLog, busyLoops, inject } from './faults.js';
import { startReceiver } from './receiver.js';
import { ADMIN_KEY, type SoakContact, type SoakOrg, type SoakService, admin, clientIdOf, makeOrg, sleep, startService, zonesFor } from './service.js';
import { metricsText } from '../server-metrics.js';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    nats: { type: 'boolean', default: false },
    seed: { type: 'string' },
    busy: { type: 'string', default: '2' },
    json: { type: 'string' },
    'log-level': { type: 'string', default: 'warn' },
  },
});
const minutes = Number(values.minutes);
if (!(minutes > 0 && minutes <= 120)) throw new Error('--minutes: a number of minutes from 0 to 120');
const seed = values.seed === undefined ? Date.now() % 2 ** 31 : Number(values.seed);
const random = mulberry32(seed);
const root = resolve(import.meta.dirname, '../..');
const workDir = mkdtempSync(join(tmpdir(), 'audience-soak-'));
const dataDir = join(workDir, 'data');
const began = Date.now();
const say = (message: string) => console.log(`[${((Date.now() - began) / 1000).toFixed(0).padStart(4)} s] ${message}`);

/** The orgs' slugs: the longest a slug may be among them (40 characters). */
const SLUGS = ['soak_a', 'soak_b', `soak_${'x'.repeat(35)}`];
const CONTACTS_PER_ORG = 24;

say(`soak: ${minutes} min, ${values.nats ? 'NATS mode' : 'embedded log'}, seed ${seed}, ${values.busy} busy loops; work dir ${workDir}`);
const nats = values.nats ? await startNats('nats-server', workDir, undefined) : undefined;
const receiver = await startReceiver(0.05, random);
const options = {
  root,
  workDir,
  dataDir,
  env: {
    LOG_SEGMENT_MB: '1',
    LOG_RETENTION_HOURS: '0',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    LOG_LEVEL: values['log-level'],
    ...(nats ? { NATS_URL: nats.url } : {}),
  },
};
let generation = 0;
let service: SoakService = await startService(options, generation++);
const target: Target = { url: service.url, down: false };

const zones = zonesFor(Date.now(), Date.now() + (minutes + 5) * 60_000);
const orgs: SoakOrg[] = [];
for (const slug of SLUGS) orgs.push(await makeOrg(service.url, slug, receiver.url, contactsFor(slug)));
await identifyAll(orgs);
say(`${orgs.length} orgs, ${orgs.length * CONTACTS_PER_ORG} contacts (half inside quiet hours), zones identified`);

const tally = new Tally();
let stopped = false;
const ctx: DriverContext = { target, orgs, tally, random, stopped: () => stopped };
const busy = busyLoops(Number(values.busy), workDir);
const drivers = [
  ...Array.from({ length: 6 }, (_, i) => collectDriver(ctx, i)),
  batchDriver(ctx, 50),
  lookupDriver(ctx),
  lookupDriver(ctx),
  previewDriver(ctx),
];
const faults: FaultLog[] = [];
const faultLoop = (async () => {
  const gap = Math.max(10_000, (minutes * 60_000) / 16);
  const kinds = shuffled([...FAULT_KINDS, ...FAULT_KINDS, ...FAULT_KINDS, ...FAULT_KINDS]);
  for (let i = 0; !stopped; i++) {
    await sleep(gap * (0.5 + random()));
    if (stopped) break;
    const kind = kinds[i % kinds.length]!;
    const log = await inject(kind, {
      target,
      workDir,
      random,
      service: () => service,
      restart: async () => {
        service = await startService(options, generation++);
        target.url = service.url;
      },
    });
    faults.push(log);
    say(`fault: ${kind} (${log.ms} ms${log.note ? `, ${log.note}` : ''})`);
  }
})();

const progress = setInterval(() => {
  const acked = [...tally.acked.values()].reduce((s, ids) => s + ids.size, 0);
  const answers = [...tally.answers].map(([driver, m]) => `${driver} ${[...m].map(([k, n]) => `${k}:${n}`).join(' ')}`).join('; ');
  say(`${acked} events acknowledged, ${receiver.deliveries.length} deliveries, ${faults.length} faults; ${answers}`);
}, 15_000);
await sleep(minutes * 60_000);
stopped = true;
clearInterval(progress);
await Promise.all(drivers);
await faultLoop;
for (const child of busy) child.kill();
say('load stopped; waiting for compaction and deliveries to settle');

await settle(orgs);
const exit = await service.child.stop(120_000);
await receiver.close();
nats?.child.kill();
const data = new Map(await Promise.all(orgs.map(async (o) => [o.slug, await readOrg(dataDir, o.slug)] as const)));
const checks = check(orgs, data, tally, receiver.deliveries, faults);
report(exit);

function report(exit: { code: number | null; signal: string | null; killed: boolean }): void {
  const answers = Object.fromEntries([...tally.answers].map(([driver, m]) => [driver, Object.fromEntries([...m].sort())]));
  const result = {
    minutes,
    mode: values.nats ? 'nats' : 'embedded',
    seed,
    faults: Object.fromEntries(FAULT_KINDS.map((k) => [k, faults.filter((f) => f.kind === k).length])),
    answers,
    deliveries: receiver.deliveries.length,
    refusedByReceiver: receiver.refused,
    stopped: exit,
    checks,
    problems: tally.problems.slice(0, 20),
    latencyMs: Object.fromEntries([...tally.latencies].map(([driver, ms]) => [driver, percentiles(ms)])),
    slow: tally.slow,
    receiverLog: receiver.deliveries,
  };
  const file = values.json ?? join(workDir, 'soak.json');
  writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
  console.log('');
  console.log(`soak ${result.mode}, ${minutes} min, seed ${seed}`);
  console.log(`faults      ${Object.entries(result.faults).map(([k, n]) => `${k} ${n}`).join(', ')}`);
  for (const [driver, byStatus] of Object.entries(answers)) console.log(`${driver.padEnd(11)} ${Object.entries(byStatus).map(([s, n]) => `${s}: ${n}`).join(', ')}`);
  for (const [driver, p] of Object.entries(result.latencyMs)) console.log(`${driver.padEnd(11)} p50 ${p.p50} ms, p99 ${p.p99} ms, max ${p.max} ms${driver === 'preview' ? `; ${tally.slow.filter((s) => s.includes(' preview ')).length} over 10 s` : ''}`);
  console.log(`webhooks    ${receiver.deliveries.length} delivered, ${receiver.refused} refused by the receiver (retried)`);
  console.log(`stop        SIGTERM → ${exit.killed ? 'not stopped within 120 s, killed' : `exit ${exit.code ?? exit.signal}`}`);
  for (const c of checks) console.log(`${c.ok ? 'PASS' : 'FAIL'}  ${c.name.padEnd(26)} ${c.detail}`);
  for (const p of result.problems.slice(0, 5)) console.log(`  problem: ${p}`);
  const failed = checks.filter((c) => !c.ok).length + (exit.code === 0 ? 0 : 1);
  console.log(`${failed === 0 ? 'soak passed' : `soak FAILED (${failed} checks)`}; details in ${file}, logs in ${workDir}`);
  process.exitCode = failed === 0 ? 0 : 1;
}

function contactsFor(slug: string): SoakContact[] {
  return Array.from({ length: CONTACTS_PER_ORG }, (_, i) => {
    const quiet = i % 2 === 0;
    const zone = (quiet ? zones.quiet : zones.open)[Math.floor(random() * (quiet ? zones.quiet : zones.open).length)]!;
    // Plus-tags, dots, digits; one address of the longest length (254).
    const local = `${i % 3 === 0 ? 'First.Last' : 'user'}+${slug.slice(0, 8)}.${i}`;
    const email = i === 1 ? `${local}@${domainOf(254 - local.length - 1)}` : `${local}@example.com`;
    return { email: email.toLowerCase(), zone, quiet };
  });
}

/** Each contact's zone, by identify, compacted before the load (the flow's quiet hours read it). */
async function identifyAll(list: SoakOrg[]): Promise<void> {
  for (const org of list) {
    for (const contact of org.contacts) {
      const res = await fetch(`${service.url}/http/v1/collect`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ partnerId: org.partnerId, partnerSecret: org.partnerSecret, clientId: clientIdOf(contact.email), sentAt: Date.now(), type: 'identify', context: { debug: true }, traits: { email: contact.email, timezone: contact.zone } }),
      });
      if (res.status !== 200) throw new Error(`identify: ${res.status} ${await res.text()}`);
    }
  }
  await settle(list);
}

/** Every org's compaction past a sentinel event, and no send pending (each up to 3 minutes). */
async function settle(list: SoakOrg[]): Promise<void> {
  for (const org of list) {
    const name = `sentinel_${Date.now()}`;
    const res = await fetch(`${service.url}/http/v1/collect`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ partnerId: org.partnerId, partnerSecret: org.partnerSecret, clientId: 'sentinel', sentAt: Date.now(), type: 'track', event: 'custom', properties: { eventName: name }, traits: { email: 'sentinel@example.com' } }),
    });
    if (res.status !== 200) throw new Error(`sentinel: ${res.status} ${await res.text()}`);
    await until(async () => {
      const types = await admin<{ types: Array<{ eventType: string }> }>(service.url, 'GET', `/admin/v1/orgs/${org.slug}/events/types?env=production`);
      return types.json.types.some((t) => t.eventType === `custom_${name}`);
    }, `compaction of ${org.slug}`);
    // A run asked for now covers every event visible, the sentinel's included: then nothing more is to come.
    await until(async () => (await admin(service.url, 'POST', `/admin/v1/orgs/${org.slug}/flows/soak/run`, {})).status === 200, `a run of ${org.slug}'s flow`);
    await until(async () => {
      const sends = await admin<{ sends: unknown[] }>(service.url, 'GET', `/admin/v1/orgs/${org.slug}/flows/soak/sends?status=pending`);
      return sends.json.sends.length === 0;
    }, `pending sends of ${org.slug}`);
  }
}

/**
 * Waits for `condition`; fails when it has not held for 180 s and the service made no progress meanwhile
 * (compaction's backlog, `audience_compaction_lag_records`, did not move): a service catching up after a
 * kill on a loaded machine takes as long as it takes, a stalled one does not settle.
 */
async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
  let deadline = Date.now() + 180_000;
  let lag = await compactionLag();
  while (!(await condition().catch(() => false))) {
    const now = await compactionLag();
    if (now !== lag) {
      lag = now;
      deadline = Date.now() + 180_000;
    }
    if (Date.now() > deadline) throw new Error(`soak: ${what} did not settle: no progress for 180 s (compaction backlog ${lag ?? 'unknown'} records)`);
    await sleep(250);
  }
}

/** The service's compaction backlog in log records, or undefined when /metrics does not answer. */
async function compactionLag(): Promise<number | undefined> {
  const text = await metricsText(service.url, ADMIN_KEY).catch(() => '');
  const line = text.split('\n').find((l) => l.startsWith('audience_compaction_lag_records '));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

/** A domain name of exactly `length` characters: labels of at most 63, ending in `.com`. */
function domainOf(length: number): string {
  const labels: string[] = [];
  let left = length - '.com'.length;
  while (left > 0) {
    const size = left <= 63 ? left : Math.min(63, left - 2);
    labels.push(String.fromCharCode(100 + labels.length).repeat(size));
    left -= size + 1;
  }
  return `${labels.join('.')}.com`;
}

function shuffled<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

/** A small seeded generator, so a failing run can be repeated with its --seed. */
function mulberry32(state: number): () => number {
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Nearest-rank percentiles of answer times, in whole ms. */
function percentiles(ms: number[]): { p50: number; p99: number; max: number } {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (p: number) => Math.round(sorted[Math.max(0, Math.ceil(sorted.length * p) - 1)] ?? 0);
  return { p50: at(0.5), p99: at(0.99), max: at(1) };
}
