/**
 * The scheduled-send benchmark (issue 26), one phase of bench/run.ts: a scheduled flow sends one webhook to
 * each member of a segment of 100,000 imported contacts, as fast as it may (sendRatePerSecond 10,000, the
 * most a flow may ask), to a local receiver answering 204 at once (this process).
 *   start      the occurrence's start: the segment read and its 100,000 members stored (going live → started)
 *   decided    occurrence start → every member decided and its send recorded (chunks of 1,000, each one
 *              transaction): decisions/s
 *   sent       going live → the last webhook received: sends/s end to end
 *   cpu/send   the service's CPU seconds from going live to the last webhook, per send (ms); the receiver's
 *              and this process's apart
 * The service runs compiled (dist/) in its own process.
 */
import { join } from 'node:path';
import { admin, type Bench, ORG, say, type Service, startService } from './harness.js';
import { round } from './load.js';
import { selfCpuSeconds } from './procs.js';
import { Receiver } from './flows.js';

const RATE = 10_000;

export interface ScheduledOptions {
  /** Members of the segment. */
  members: number;
}

export interface ScheduledOutcome {
  members: number;
  sendRatePerSecond: number;
  importSeconds: number;
  /** Going live → the occurrence started (segment read, members stored). */
  startSeconds: number;
  /** Occurrence started → every member decided. */
  decideSeconds: number;
  decisionsPerSec: number;
  /** Going live → the last webhook received. */
  sendSeconds: number;
  sendsPerSec: number;
  received: number;
  duplicates: number;
  cpu: { serviceSeconds: number; msPerSend: number; receiverAndBenchSeconds: number };
  outcomes: Record<string, number>;
}

export async function benchScheduled(bench: Bench, options: ScheduledOptions): Promise<ScheduledOutcome> {
  const receiver = await Receiver.start();
  const dataDir = join(bench.workDir, 'scheduled');
  const service = await startService(bench, 'scheduled', dataDir, { env: { QUERIES_DIR: join(dataDir, 'queries'), WEBHOOK_ALLOW_PRIVATE: 'true' } });
  try {
    return await service.child.guard(run(service, receiver, options.members));
  } finally {
    await service.child.stop();
    await receiver.close();
  }
}

async function run(service: Service, receiver: Receiver, members: number): Promise<ScheduledOutcome> {
  await adminOk(service, 'POST', '/admin/v1/orgs', { slug: ORG, name: 'Bench' });
  say(`scheduled: importing ${members} contacts`);
  const importStarted = performance.now();
  const lines = Array.from({ length: members }, (_, i) => JSON.stringify({ email_address: `member-${String(i).padStart(7, '0')}@example.com`, first_name: `M${i}` })).join('\n');
  const imported = await admin<{ imported: number }>(service, 'POST', `/admin/v1/orgs/${ORG}/contacts/import`, lines, 'application/x-ndjson');
  if (imported.status !== 200 || imported.json.imported !== members) throw new Error(`import: ${imported.status} ${JSON.stringify(imported.json).slice(0, 300)}`);
  const importSeconds = (performance.now() - importStarted) / 1000;
  await adminOk(service, 'PUT', `/admin/v1/orgs/${ORG}/segments/members`, { sql: "SELECT email_address AS email FROM profiles WHERE email_address LIKE 'member-%'" });
  await adminOk(service, 'POST', `/admin/v1/orgs/${ORG}/flows`, {
    id: 'launch',
    name: 'bench launch',
    category: 'scheduled',
    audience: { segment: 'members' },
    // This minute in the org's zone (UTC): due as soon as it is live.
    schedule: { at: new Date().toISOString().slice(0, 16), timeZone: 'org' },
    sendRatePerSecond: RATE,
    message: { channel: 'webhook', url: receiver.url, template: { body: { eventId: '{{ contact.email_address }}', flow: 'launch', name: '{{ contact.first_name }}' } } },
  });

  say(`scheduled: one occurrence to ${members} members, at most ${RATE}/s`);
  const cpu0 = { service: service.child.cpuSeconds(), self: selfCpuSeconds() };
  const liveAt = performance.now();
  await adminOk(service, 'POST', `/admin/v1/orgs/${ORG}/flows/launch/start`);
  let startedAt: number | undefined;
  let occurrence: Occurrence | undefined;
  for (;;) {
    [occurrence] = (await adminOk<{ occurrences: Occurrence[] }>(service, 'GET', `/admin/v1/orgs/${ORG}/flows/launch/occurrences`)).occurrences;
    if (occurrence && startedAt === undefined) startedAt = performance.now();
    if (occurrence?.status === 'done') break;
    if (occurrence?.status === 'skipped') throw new Error(`skipped: ${occurrence.reason}`);
    if (performance.now() - liveAt > 600_000) throw new Error(`not done after 600 s: ${JSON.stringify(occurrence)}`);
    await sleep(100);
  }
  const decidedAt = performance.now();
  const lastAt = await receiver.waitFor('launch', members, 600_000);
  const cpu = { service: service.child.cpuSeconds() - cpu0.service, self: selfCpuSeconds() - cpu0.self };
  const decideSeconds = (decidedAt - startedAt!) / 1000;
  const sendSeconds = (lastAt - liveAt) / 1000;
  const outcome: ScheduledOutcome = {
    members,
    sendRatePerSecond: RATE,
    importSeconds: round(importSeconds, 2),
    startSeconds: round((startedAt! - liveAt) / 1000, 2),
    decideSeconds: round(decideSeconds, 2),
    decisionsPerSec: Math.round(members / decideSeconds),
    sendSeconds: round(sendSeconds, 2),
    sendsPerSec: Math.round(receiver.count('launch') / sendSeconds),
    received: receiver.count('launch'),
    duplicates: receiver.duplicates,
    cpu: { serviceSeconds: round(cpu.service, 2), msPerSend: round((cpu.service * 1000) / receiver.count('launch'), 3), receiverAndBenchSeconds: round(cpu.self, 2) },
    outcomes: occurrence.outcomes,
  };
  say(
    `scheduled: started ${outcome.startSeconds} s after going live; ${members} decided in ${outcome.decideSeconds} s (${outcome.decisionsPerSec}/s); ` +
      `last webhook ${outcome.sendSeconds} s after going live (${outcome.sendsPerSec} sends/s); service CPU ${outcome.cpu.msPerSend} ms per send`,
  );
  return outcome;
}

interface Occurrence {
  status: string;
  decided: number;
  reason: string | null;
  outcomes: Record<string, number>;
}

async function adminOk<T = unknown>(service: Service, method: string, path: string, body?: unknown): Promise<T> {
  const res = await admin<T>(service, method, path, body);
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.json).slice(0, 500)}`);
  return res.json;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
