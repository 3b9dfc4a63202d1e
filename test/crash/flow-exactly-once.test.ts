/**
 * Exactly once per send key under crashes (SPEC 8): the real service (a child process) is killed with
 * SIGKILL (1) after the outbox rows are written but before any delivery reached the receiver,
 * (2) after the receiver got the webhooks but before the service recorded them as delivered (the middle of
 * a large delivery is in flow-exactly-once-mid-delivery.test.ts).
 * After a restart the receiver must see every key, and each webhook-id (1) exactly once, (2) at most
 * twice (the receiver dedupes repeats by webhook-id, as Standard Webhooks intends), and no more of them
 * twice than a channel has delivery slots (SEND_CONCURRENCY): only sends in flight at the kill repeat.
 */
import t from 'tap';
import type { ServerResponse } from 'node:http';
import { BOOKING_TRIGGER } from '../helpers/flows.js';
import { type Receiver, startReceiver, status } from '../helpers/http-receiver.js';
import { adminCall, type Credential, createOrgOverHttp, freePort, spawnServer } from '../helpers/server-process.js';
import { waitFor } from '../helpers/app.js';
import { SEND_CONCURRENCY } from '../../src/reactions/flows/send/send-dispatcher.js';

const EVENTS = 20;

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
