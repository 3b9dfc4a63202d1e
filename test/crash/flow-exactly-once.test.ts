/**
 * Exactly once per send key under crashes (SPEC 8): the real service (a child process) is killed with
 * SIGKILL (1) after the outbox rows are written but before any delivery reached the receiver,
 * (2) after the receiver got the webhooks but before the service recorded them as delivered, and
 * (3) in the middle of 300 webhook (or e-mail) sends answered after a few milliseconds.
 * After a restart the receiver must see every key, and each webhook-id (1) exactly once, (2, 3) at most
 * twice (the receiver dedupes repeats by webhook-id, as Standard Webhooks intends), and no more of them
 * twice than a channel has delivery slots (SEND_CONCURRENCY): only sends in flight at the kill repeat.
 */
import { DuckDBInstance } from '@duckdb/node-api';
import t from 'tap';
import type { ServerResponse } from 'node:http';
import { BOOKING_TRIGGER } from '../helpers/flows.js';
import { type Receiver, startReceiver, status } from '../helpers/http-receiver.js';
import { ADMIN_KEY, type Credential, createOrgOverHttp, freePort, type ServerProcess, spawnServer, waitForCompaction } from '../helpers/server-process.js';
import { smtpServer } from '../helpers/smtp-server.js';
import { waitFor } from '../helpers/app.js';
import { SEND_CONCURRENCY } from '../../src/reactions/flows/send-dispatcher.js';

// Eleven real services started, five of them killed, 940 sends: longer than the default 120 s when busy.
t.setTimeout(300_000);

const EVENTS = 20;

async function adminCall(url: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

async function setUp(url: string, hookUrl: string): Promise<Credential> {
  const cred = await createOrgOverHttp(url, 'acme');
  await adminCall(url, 'PUT', '/admin/v1/orgs/acme/triggers/booking_completed', { sql: BOOKING_TRIGGER });
  await adminCall(url, 'POST', '/admin/v1/orgs/acme/flows', {
    id: 'f1',
    name: 'Follow-up',
    category: 'triggered',
    entry: 'when_contact_triggers_event',
    trigger: 'booking_completed',
    scheduleSeconds: 1,
    message: { channel: 'webhook', url: hookUrl, template: { body: { eventId: '{{ event.event_id }}' } } },
  });
  await adminCall(url, 'POST', '/admin/v1/orgs/acme/flows/f1/start');
  for (let i = 0; i < EVENTS; i++) {
    const res = await fetch(`${url}/http/v1/collect`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        ...cred,
        clientId: `c${i}`,
        sentAt: Date.now(),
        type: 'track',
        event: 'custom',
        messageId: `e${i}`,
        properties: { eventName: 'booking_completed', properties: { city: 'Lisbon' } },
        traits: { email: `user${i}@example.com` },
      }),
    });
    if (res.status !== 200) throw new Error(`collect: ${res.status}`);
  }
  return cred;
}

const sends = async (url: string) => (await adminCall(url, 'GET', '/admin/v1/orgs/acme/flows/f1/sends?limit=1000')).sends as { status: string; sendId: string }[];

function countById(receiver: Receiver): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of receiver.received) {
    const id = String(r.headers['webhook-id']);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

t.test('killed after the outbox write, before delivery: every key delivered exactly once after restart', async (t) => {
  const dataDir = t.testdir();
  const env = { DATA_DIR: dataDir, QUERIES_DIR: `${dataDir}/queries`, WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_BACKOFF_MS: '60000' };
  // Nothing listens on the receiver's port yet: every first attempt is refused and waits a minute.
  const hookPort = await freePort();
  const first = await spawnServer(t, env);
  await setUp(first.url, `http://127.0.0.1:${hookPort}/hook`);
  await waitFor(async () => (await sends(first.url)).length === EVENTS, 15_000);
  t.ok((await sends(first.url)).every((s) => s.status === 'pending'), 'all written to the outbox, none delivered');
  await first.kill9();

  const receiver = await startReceiver([status(204)], hookPort);
  t.teardown(() => receiver.close());
  const second = await spawnServer(t, env);
  await waitFor(async () => (await sends(second.url)).every((s) => s.status === 'delivered'), 15_000);
  // A few more scheduled runs must not send anything again.
  await new Promise((resolve) => setTimeout(resolve, 2500));
  const counts = countById(receiver);
  t.equal(counts.size, EVENTS, 'every send key reached the receiver');
  t.same([...counts.values()].filter((n) => n !== 1), [], 'each exactly once');
  t.same(new Set(receiver.received.map((r) => JSON.parse(r.body).eventId)).size, EVENTS);
  await second.stop();
});

t.test('killed after delivery, before it was recorded: the repeat carries the same webhook-id, at most once', async (t) => {
  const dataDir = t.testdir();
  // No attempt times out while the receiver holds them (the default 10 s could pass on a slow machine).
  const env = { DATA_DIR: dataDir, QUERIES_DIR: `${dataDir}/queries`, WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: '120000' };
  let holding = true;
  const held: ServerResponse[] = [];
  // While holding, the receiver records each webhook and never answers: the service cannot mark it.
  const receiver = await startReceiver([
    (res) => {
      if (holding) held.push(res);
      else res.writeHead(204).end();
    },
  ]);
  t.teardown(() => receiver.close());
  const first = await spawnServer(t, env);
  await setUp(first.url, receiver.url);
  await waitFor(async () => countById(receiver).size >= SEND_CONCURRENCY, 15_000);
  // A few more flow runs (every second) while nothing is answered: no slot frees, nothing more goes out.
  await new Promise((resolve) => setTimeout(resolve, 2500));
  t.equal(receiver.received.length, SEND_CONCURRENCY, `unanswered, no more than ${SEND_CONCURRENCY} sends are in flight`);
  await first.kill9();
  holding = false;
  for (const res of held) res.destroy();

  const second = await spawnServer(t, env);
  await waitFor(async () => (await sends(second.url)).every((s) => s.status === 'delivered'), 15_000);
  await new Promise((resolve) => setTimeout(resolve, 2500));
  const counts = countById(receiver);
  t.equal(counts.size, EVENTS, 'after dedupe by webhook-id, every key once');
  t.ok([...counts.values()].every((n) => n <= 2), 'no key repeated more than once');
  t.equal([...counts.values()].filter((n) => n === 2).length, SEND_CONCURRENCY, 'the unrecorded deliveries, and only they, were repeated (with the same id)');
  const ids = new Set((await sends(second.url)).map((s) => s.sendId));
  t.same([...counts.keys()].filter((id) => !ids.has(id)), [], 'webhook-id is the send id');
  await second.stop();
});

/**
 * Killed in the middle of delivery (the attacker's finding: 131 of 300 delivered twice when outcomes were
 * recorded in batches). A delivery slot is held from the request until its outcome is recorded, so a
 * kill -9 can only repeat what was in flight: at most SEND_CONCURRENCY webhook-ids twice, none three times.
 */
const MANY = 300;

/**
 * One org, one flow (run by hand), MANY events already compacted; returns when the run queued them all
 * (`deferred_quiet_hours`: deferred them all until `flow.quietHours` end).
 */
async function queueMany(url: string, message: Record<string, unknown>, flow: Record<string, unknown> = {}, outcome = 'sent'): Promise<void> {
  const cred = await createOrgOverHttp(url, 'acme');
  await adminCall(url, 'PUT', '/admin/v1/orgs/acme/triggers/booking_completed', { sql: BOOKING_TRIGGER });
  // Runs only when asked (the first scheduled run would be an hour after each start).
  await adminCall(url, 'POST', '/admin/v1/orgs/acme/flows', { id: 'f1', name: 'Many', category: 'triggered', entry: 'when_contact_triggers_event', trigger: 'booking_completed', scheduleSeconds: 3600, message, ...flow });
  await adminCall(url, 'POST', '/admin/v1/orgs/acme/flows/f1/start');
  for (let b = 0; b < MANY / 100; b++) {
    const batch = Array.from({ length: 100 }, (_, i) => {
      const n = b * 100 + i;
      return { clientId: `c${n}`, sentAt: Date.now(), type: 'track', event: 'custom', messageId: `e${n}`, properties: { eventName: 'booking_completed', properties: { city: 'Lisbon' } }, traits: { email: `user${n}@example.com` } };
    });
    const res = await fetch(`${url}/http/v1/batch`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...cred, batch }) });
    if (res.status !== 200) throw new Error(`batch: ${res.status} ${await res.text()}`);
  }
  await waitForCompaction(url, 'acme', cred);
  const run = await adminCall(url, 'POST', '/admin/v1/orgs/acme/flows/f1/run');
  if ((run.outcomes as Record<string, number>)[outcome] !== MANY) throw new Error(`run: ${JSON.stringify(run)}`);
}

const tally = (ids: string[]) => {
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  const values = [...counts.values()];
  return { distinct: counts.size, twice: values.filter((n) => n === 2).length, more: values.filter((n) => n > 2).length };
};

/** Quiet hours (UTC) that hold now and for the next hour. */
function quietNow(): { start: string; end: string; timeZone: string } {
  const hhmm = (at: number) => new Date(at).toISOString().slice(11, 16);
  return { start: hhmm(Date.now() - 60_000), end: hhmm(Date.now() + 3_600_000), timeZone: 'UTC' };
}

/**
 * One kill point per run, drawn from 40–260 (printed): the bound holds wherever the kill falls. Sent at
 * once, and deferred by quiet hours: the service stops with all 300 deferred, their due time is moved to
 * now in its database (the clock, faked: the window ended while it was down), and the next start
 * releases them together and is killed while sending.
 */
const KILL_AT = 40 + Math.floor(Math.random() * 221);
for (const deferred of [false, true]) {
  const how = deferred ? 'deferred by quiet hours and released' : 'sent at once';
  t.test(`${how}, killed after ${KILL_AT} of ${MANY} webhooks arrived: at most ${SEND_CONCURRENCY} repeated, none three times`, async (t) => {
    const dataDir = t.testdir();
    const env = { DATA_DIR: dataDir, QUERIES_DIR: `${dataDir}/queries`, WEBHOOK_ALLOW_PRIVATE: 'true' };
    let killed: Promise<void> | undefined;
    let first: ServerProcess | undefined;
    // Every webhook answered 204 after 1–10 ms; the KILL_AT-th arrival triggers the kill -9.
    const receiver = await startReceiver([
      (res, n) => {
        if (n + 1 === KILL_AT) killed = first!.kill9();
        setTimeout(() => res.writeHead(204).end(), 1 + Math.random() * 9);
      },
    ]);
    t.teardown(() => receiver.close());
    first = await spawnServer(t, env);
    const message = { channel: 'webhook', url: receiver.url, template: { body: { eventId: '{{ event.event_id }}' } } };
    if (deferred) {
      await queueMany(first.url, message, { quietHours: quietNow() }, 'deferred_quiet_hours');
      t.ok((await sends(first.url)).every((s) => s.status === 'deferred'), 'every send waits, deferred');
      await first.stop();
      t.equal(receiver.received.length, 0, 'nothing sent during quiet hours');
      const instance = await DuckDBInstance.create(`${dataDir}/orgs/acme.duckdb`);
      const connection = await instance.connect();
      await connection.run("UPDATE flow_sends SET due_at = now() WHERE status = 'deferred'");
      connection.closeSync();
      instance.closeSync();
      first = await spawnServer(t, env);
    } else {
      await queueMany(first.url, message);
    }
    await waitFor(async () => killed !== undefined, 30_000);
    await killed;
    const before = receiver.received.length;

    const second = await spawnServer(t, env);
    await waitFor(async () => (await sends(second.url)).filter((s) => s.status === 'delivered').length === MANY, 30_000);
    const ids = receiver.received.map((r) => String(r.headers['webhook-id']));
    const { distinct, twice, more } = tally(ids);
    t.comment(`${before} arrived before the kill; ${twice} webhook-ids arrived twice`);
    t.equal(distinct, MANY, 'every send delivered at least once');
    t.ok(twice <= SEND_CONCURRENCY, `${twice} repeated ≤ ${SEND_CONCURRENCY} (the sends in flight at the kill)`);
    t.equal(more, 0, 'none three times');
    await second.stop();
  });
}

t.test(`e-mail killed mid-delivery: each Message-ID at most twice, at most ${SEND_CONCURRENCY} of them`, async (t) => {
  const dataDir = t.testdir();
  let killed: Promise<void> | undefined;
  let first: ServerProcess | undefined;
  const smtp = await smtpServer(t, {
    answerDelayMs: () => 1 + Math.random() * 19,
    onMail: (n) => {
      if (n === 100) killed = first!.kill9();
    },
  });
  const env = { DATA_DIR: dataDir, QUERIES_DIR: `${dataDir}/queries`, SMTP_URL: smtp.url };
  first = await spawnServer(t, env);
  await queueMany(first.url, { channel: 'email', template: { subject: 'Stay {{ event.event_id }}', text: 'Hello' } });
  await waitFor(async () => killed !== undefined, 30_000);
  await killed;

  const second = await spawnServer(t, env);
  await waitFor(async () => (await sends(second.url)).filter((s) => s.status === 'delivered').length === MANY, 60_000);
  const ids = smtp.mails.map((m) => /^Message-ID: <([^@>]+)@/im.exec(m.data)?.[1] ?? '');
  const { distinct, twice, more } = tally(ids);
  t.comment(`${twice} Message-IDs arrived twice`);
  t.equal(distinct, MANY, 'every e-mail sent at least once');
  t.ok(twice <= SEND_CONCURRENCY, `${twice} retried ≤ ${SEND_CONCURRENCY} (the e-mails in flight at the kill)`);
  t.equal(more, 0, 'none retried more than once');
  await second.stop();
});
