/** bench/results/audience.json and the printed table of the Audience API benchmark (bench/audience.ts). */
import { type AudienceOutcome, BATCH_SIZE, mb } from './audience.js';
import { IDENTITY_MIX } from './contacts.js';
import { latencyAndCpuColumns, loadSummary, type Measured, table } from './harness.js';
import { printSummary, type ProfileSummary } from './profile-summary.js';

/** The issue's targets (and SPEC 6.1's freshness bound). */
export const AUDIENCE_TARGETS = { ratioToBare: 0.85, p99Ms: 3, underCollectRatioToBare: 0.7, freshnessP99Ms: 1000, batchCpuToOne: 3 };

const ratio = (a: number, b: number) => (b ? Math.round((a / b) * 1000) / 1000 : null);
const per100k = (bytes: number, contacts: number) => mb((bytes * 100_000) / contacts);

function bad(m: Measured): number {
  return m.warmup.non2xx + m.warmup.errors + m.measure.non2xx + m.measure.errors;
}

/** Builds the report, prints it, returns it (for audience.json). */
export function reportAudience(o: AudienceOutcome, machine: Record<string, unknown>): AudienceReport {
  const report = buildReport(o, machine);
  print(report, o);
  return report;
}

type AudienceReport = ReturnType<typeof buildReport>;

function buildReport(o: AudienceOutcome, machine: Record<string, unknown>) {
  const bare = loadSummary(o.bare);
  const audience = loadSummary(o.audience);
  const under = loadSummary(o.underCollect.audience);
  const collect = o.underCollect.collect;
  const accepted = o.underCollect.audience.server?.eventsAccepted ?? 0;
  const audienceRatio = ratio(audience.reqPerSec, bare.reqPerSec);
  const underRatio = ratio(under.reqPerSec, bare.reqPerSec);
  const { before, afterImportNoGc, afterImport, afterLoad } = o.memory;
  const f = o.freshness;
  const non2xx = { bare: bad(o.bare), audience: bad(o.audience), underCollect: bad(o.underCollect.audience), collect: collect.non2xx + collect.errors, batch: bad(o.batch) };
  const batch = loadSummary(o.batch);
  // CPU of the service per request: a batch of BATCH_SIZE against one lookup (issue 41: at most 3×).
  const cpuPerRequest = (s: ReturnType<typeof loadSummary>) => (s.reqPerSec ? s.cpu.server / s.reqPerSec : 0);
  const batchCpuToOne = ratio(cpuPerRequest(batch), cpuPerRequest(audience));

  const report = {
    date: new Date().toISOString(),
    machine,
    method: {
      loadGenerator: 'autocannon 9 in the orchestrating process, no workers, pipelining 1, fixed request counts (the background collect: paced, stopped after the measurement)',
      servers: 'compiled (dist/), one child process each; the service with every role and the embedded log, LOG_LEVEL=warn, its own fresh data dir',
      contacts: `${o.contacts} imported by CSV in ${o.import.chunks} requests; org rateLimit 100000/s`,
      requests: `GET ?identity=<type>:<value>, a uniformly random imported contact each, types ${JSON.stringify(IDENTITY_MIX)}; bare gets the same headers and path shape`,
      connections: o.connections,
      latency: 'ms, 2xx answers, exact percentiles over every response of the measurement',
      underCollect:
        'collect (track events, bodies of the collect phase) paced at half its maximum over 100 connections, spread over 10 autocannon instances started 100 ms apart, running from before the warm-up to the end of the measurement',
      freshness: 'identify events setting a unique firstName on a random imported contact, paced; the contact polled via the API after the 200; ms from sending the event to the first poll answer showing it',
      memory: 'service RSS (/proc VmRSS) and V8 heap used (/metrics nodejs_heap_size_used_bytes) just before and just after the import, each after a full GC (inspector HeapProfiler.collectGarbage)',
      bareVsAudience: `measured in ${o.turnRatios.length} alternating turns each (bench/alternate.ts), both servers up; figures merge the turns`,
    },
    bare: { ...bare, responseBytes: o.bareResponseBytes },
    audience: {
      ...audience,
      responseBytes: o.audienceResponseBytes,
      identityMix: o.identityMix,
      ratioToBare: audienceRatio,
      turnRatios: o.turnRatios,
    },
    underCollect: {
      ...under,
      ratioToBare: underRatio,
      collectRate: o.underCollect.collectRate,
      collectMax: { reqPerSec: o.collectMax.reqPerSec, source: o.collectMax.source },
      collectAcceptedPerSec: Math.round(accepted / under.seconds),
      collectLoad: { reqPerSec: collect.reqPerSec, seconds: collect.seconds, p50: collect.latency.p50, p99: collect.latency.p99, non2xx: collect.non2xx, errors: collect.errors },
    },
    batch: { ...batch, size: BATCH_SIZE, identitiesPerSec: batch.reqPerSec * BATCH_SIZE, cpuUsPerRequest: Math.round(cpuPerRequest(batch) * 1e6), cpuToOneLookup: batchCpuToOne },
    collectMaxMeasured: o.collectMax.measured ? loadSummary(o.collectMax.measured) : null,
    freshness: f,
    memory: {
      rssMbPer100k: per100k(afterImport.rssBytes - before.rssBytes, o.contacts),
      heapMbPer100k: per100k(afterImport.heapUsedBytes - before.heapUsedBytes, o.contacts),
      contacts: o.contacts,
      beforeImport: { rssMb: mb(before.rssBytes), heapUsedMb: mb(before.heapUsedBytes) },
      afterImport: { rssMb: mb(afterImport.rssBytes), heapUsedMb: mb(afterImport.heapUsedBytes) },
      afterImportNoGc: { rssMb: mb(afterImportNoGc.rssBytes), heapUsedMb: mb(afterImportNoGc.heapUsedBytes) },
      afterAllLoad: { rssMb: mb(afterLoad.rssBytes), heapUsedMb: mb(afterLoad.heapUsedBytes) },
    },
    import: { ...o.import, contactsPerSec: Math.round(o.import.imported / o.import.seconds) },
    targets: {
      audienceRatioToBare: { target: AUDIENCE_TARGETS.ratioToBare, value: audienceRatio, met: audienceRatio !== null && audienceRatio >= AUDIENCE_TARGETS.ratioToBare },
      audienceP99Ms: { target: AUDIENCE_TARGETS.p99Ms, value: audience.p99, met: audience.p99 <= AUDIENCE_TARGETS.p99Ms },
      underCollectRatioToBare: {
        target: AUDIENCE_TARGETS.underCollectRatioToBare,
        value: underRatio,
        met: underRatio !== null && underRatio >= AUDIENCE_TARGETS.underCollectRatioToBare,
      },
      freshnessP99Ms: { target: AUDIENCE_TARGETS.freshnessP99Ms, source: 'SPEC 6.1', value: f.p99, met: f.missing === 0 && f.failed === 0 && f.p99 <= AUDIENCE_TARGETS.freshnessP99Ms },
      batchCpuToOneLookup: { target: AUDIENCE_TARGETS.batchCpuToOne, source: 'issue 41', value: batchCpuToOne, met: batchCpuToOne !== null && batchCpuToOne <= AUDIENCE_TARGETS.batchCpuToOne },
      all2xx: { value: non2xx, met: Object.values(non2xx).every((n) => n === 0) },
    },
    ...(o.profile ? { profile: o.profile } : {}),
  };
  return report;
}

function print(r: AudienceReport, o: AudienceOutcome): void {
  const collect = o.underCollect.collect;
  const row = (phase: string, s: ReturnType<typeof loadSummary>, note: string) => ({
    phase,
    'req/s': s.reqPerSec,
    ...latencyAndCpuColumns(s),
    note,
  });
  const rows = [
    row('bare GET', r.bare, `${o.connections} conns, ${r.bare.responseBytes} B answers`),
    row('audience', r.audience, `${r.audience.ratioToBare} × bare (turns ${Math.min(...o.turnRatios)}–${Math.max(...o.turnRatios)}), ${r.audience.responseBytes} B answers`),
    row(`batch of ${BATCH_SIZE}`, r.batch, `${r.batch.identitiesPerSec} identities/s; CPU per request ${r.batch.cpuToOneLookup} × one lookup's (${r.batch.cpuUsPerRequest} µs)`),
    row('audience + collect', r.underCollect, `${r.underCollect.ratioToBare} × bare; collect ${r.underCollect.collectAcceptedPerSec}/s of ${r.underCollect.collectRate}/s asked`),
    {
      phase: 'collect (background)',
      'req/s': collect.reqPerSec,
      'p50 ms': collect.latency.p50,
      'p99 ms': collect.latency.p99,
      'p99.9 ms': collect.latency.p999,
      'non-2xx': collect.non2xx + collect.errors,
      note: `paced at ${r.underCollect.collectRate}/s = ½ × ${r.underCollect.collectMax.reqPerSec} (${r.underCollect.collectMax.source})`,
    },
  ];
  console.log(`\n${table(rows)}\n`);
  const f = r.freshness;
  console.log(`freshness (event → profile): p50 ${f.p50} ms, p90 ${f.p90} ms, p99 ${f.p99} ms, max ${f.max} ms; n ${f.n}, missing ${f.missing}, failed ${f.failed}; ${f.perSecond}/s, poll ${f.pollMs} ms`);
  const m = r.memory;
  console.log(
    `memory per 100,000 profiles: RSS ${m.rssMbPer100k} MB, V8 heap used ${m.heapMbPer100k} MB ` +
      `(after a full GC: RSS ${m.beforeImport.rssMb} → ${m.afterImport.rssMb} MB, heap ${m.beforeImport.heapUsedMb} → ${m.afterImport.heapUsedMb} MB; ` +
      `without GC after the import: RSS ${m.afterImportNoGc.rssMb} MB, heap ${m.afterImportNoGc.heapUsedMb} MB; ` +
      `after all the load: RSS ${m.afterAllLoad.rssMb} MB, heap ${m.afterAllLoad.heapUsedMb} MB)`,
  );
  console.log(`import: ${r.import.imported} contacts in ${r.import.seconds} s (${r.import.contactsPerSec}/s, ${r.import.chunks} requests)`);
  console.log(`targets: ${JSON.stringify(r.targets, null, 1).replace(/\n\s*/g, ' ')}`);
  if (o.profile) {
    console.log(`\n=== CPU profile of the service, audience turns (${o.profile.files.join(', ')}) ===`);
    printSummary(o.profile.audience);
    if (o.profile.bare) printPerRequest(o.profile.bare, r.bare.requests, o.profile.audience, r.audience.requests);
    console.log(`\n=== CPU profile of the service, audience + collect ===`);
    printSummary(o.profile.underCollect);
  }
}

/** Main-thread self time per request by area, bare server vs service: where the service's extra time goes. */
function printPerRequest(bare: ProfileSummary, bareRequests: number, service: ProfileSummary, serviceRequests: number): void {
  const us = (ms: number, n: number) => Math.round((ms * 1000 * 10) / n) / 10;
  const areas = new Map<string, { bare: number; service: number }>();
  for (const row of bare.selfByArea) areas.set(row.name, { bare: us(row.ms, bareRequests), service: 0 });
  for (const row of service.selfByArea) areas.set(row.name, { bare: areas.get(row.name)?.bare ?? 0, service: us(row.ms, serviceRequests) });
  const rows = [...areas.entries()]
    .map(([area, v]) => ({ area, 'bare µs/req': v.bare, 'service µs/req': v.service, 'Δ µs/req': Math.round((v.service - v.bare) * 10) / 10 }))
    .sort((a, b) => b['Δ µs/req'] - a['Δ µs/req']);
  rows.unshift({
    area: 'main thread busy, total',
    'bare µs/req': us(bare.busyMs, bareRequests),
    'service µs/req': us(service.busyMs, serviceRequests),
    'Δ µs/req': Math.round((us(service.busyMs, serviceRequests) - us(bare.busyMs, bareRequests)) * 10) / 10,
  });
  console.log(`\nmain-thread self time per request by area (top areas of each profile), bare GET vs service audience:\n${table(rows)}`);
}
