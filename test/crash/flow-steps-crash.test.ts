/**
 * Entries waiting in a flow's steps survive kill -9 (issue 26): the real service (a child process) is
 * killed while every entry waits, and again in the middle of sending their messages. After a restart
 * each message arrives, none is lost, and a webhook-id arrives twice only for a send in flight at the
 * kill (at most SEND_CONCURRENCY of them); no entry's message is sent by two different sends.
 */
import t from 'tap';
import { startReceiver, type Receiver } from '../helpers/http-receiver.js';
import { adminCall, createOrgOverHttp, type ServerProcess, spawnServer, waitForCompaction } from '../helpers/server-process.js';
import { waitFor } from '../helpers/app.js';
import { SEND_CONCURRENCY } from '../../src/reactions/flows/send/send-dispatcher.js';

const CART_TRIGGER = `SELECT identity, identity_type, ts, event_type, event_id, event_raw
FROM event_triggers
WHERE event_type = 'custom_cart_updated'
  AND ts > {cursor_start_time} AND ts <= {cursor_end_time}`;
const ENTRIES = 60;

async function setUp(url: string, steps: unknown[]): Promise<void> {
  const cred = await createOrgOverHttp(url, 'acme');
  await adminCall(url, 'PUT', '/admin/v1/orgs/acme/triggers/cart_updated', { sql: CART_TRIGGER });
  await adminCall(url, 'POST', '/admin/v1/orgs/acme/flows', { id: 'cart', name: 'Cart', category: 'triggered', entry: 'when_contact_triggers_event', trigger: 'cart_updated', scheduleSeconds: 1, steps });
  await adminCall(url, 'POST', '/admin/v1/orgs/acme/flows/cart/start');
  const batch = Array.from({ length: ENTRIES }, (_, i) => ({
    clientId: `c${i}`, sentAt: Date.now(), type: 'track', event: 'custom', messageId: `cart-${i}`,
    properties: { eventName: 'cart_updated', properties: {} }, traits: { email: `user${i}@example.com` },
  }));
  const res = await fetch(`${url}/http/v1/batch`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...cred, batch }) });
  if (res.status !== 200) throw new Error(`batch: ${res.status} ${await res.text()}`);
  await waitForCompaction(url, 'acme', cred);
}

const hook = (url: string, text: string) => ({ message: { channel: 'webhook', url, template: { body: { text, to: '{{ contact.email_address }}' } } } });
const waiting = async (url: string) => (await adminCall(url, 'GET', '/admin/v1/orgs/acme/flows/cart/waits?limit=1')).total as number;

function tally(receiver: Receiver) {
  const ids = new Map<string, number>();
  const perMessage = new Map<string, Set<string>>();
  for (const r of receiver.received) {
    const id = String(r.headers['webhook-id']);
    ids.set(id, (ids.get(id) ?? 0) + 1);
    const body = JSON.parse(r.body) as { text: string; to: string };
    const key = `${body.to} ${body.text}`;
    perMessage.set(key, (perMessage.get(key) ?? new Set()).add(id));
  }
  const counts = [...ids.values()];
  return { distinct: ids.size, twice: counts.filter((n) => n === 2).length, more: counts.filter((n) => n > 2).length, messages: perMessage.size, idsPerMessage: Math.max(...[...perMessage.values()].map((s) => s.size)) };
}

t.test(`killed while ${ENTRIES} entries wait: after a restart each is sent once, when due`, async (t) => {
  const dataDir = t.testdir();
  const env = { DATA_DIR: dataDir, QUERIES_DIR: `${dataDir}/queries`, WEBHOOK_ALLOW_PRIVATE: 'true' };
  const receiver = await startReceiver([(res) => res.writeHead(204).end()]);
  t.teardown(() => receiver.close());
  const first = await spawnServer(t, env);
  await setUp(first.url, [{ wait: { seconds: 8 } }, hook(receiver.url, 'Your cart')]);
  await waitFor(async () => (await waiting(first.url)) === ENTRIES, 30_000);
  t.equal(receiver.received.length, 0, 'every entry waits; nothing sent yet');
  await first.kill9();

  const second = await spawnServer(t, env);
  await waitFor(async () => receiver.received.length >= ENTRIES && (await waiting(second.url)) === 0, 60_000);
  await new Promise((resolve) => setTimeout(resolve, 2500));
  const { distinct, twice, messages } = tally(receiver);
  t.equal(messages, ENTRIES, 'every entry got its message');
  t.equal(distinct, ENTRIES, 'one send id each');
  t.equal(twice, 0, 'none twice: nothing was in flight at the kill');
  await second.stop();
});

t.test('killed in the middle of sending the steps: none lost, a repeat only for what was in flight', async (t) => {
  const dataDir = t.testdir();
  const env = { DATA_DIR: dataDir, QUERIES_DIR: `${dataDir}/queries`, WEBHOOK_ALLOW_PRIVATE: 'true' };
  let first: ServerProcess | undefined;
  let killed: Promise<void> | undefined;
  const killAt = 20 + Math.floor(Math.random() * 60);
  const receiver = await startReceiver([
    (res, n) => {
      if (n + 1 === killAt) killed = first!.kill9();
      setTimeout(() => res.writeHead(204).end(), 1 + Math.random() * 9);
    },
  ]);
  t.teardown(() => receiver.close());
  first = await spawnServer(t, env);
  await setUp(first.url, [hook(receiver.url, 'Your cart'), { wait: { seconds: 1 } }, hook(receiver.url, 'Still there?')]);
  await waitFor(async () => killed !== undefined, 60_000);
  await killed;
  t.comment(`killed at arrival ${killAt} of ${2 * ENTRIES}`);

  const restarting = Date.now();
  const second = await spawnServer(t, env);
  t.comment(`healthy ${Date.now() - restarting} ms after the restart began`);
  await waitFor(async () => tally(receiver).messages === 2 * ENTRIES && (await waiting(second.url)) === 0, 60_000);
  await new Promise((resolve) => setTimeout(resolve, 2500));
  const { distinct, twice, more, messages, idsPerMessage } = tally(receiver);
  t.equal(messages, 2 * ENTRIES, 'both messages of every entry arrived');
  t.equal(distinct, 2 * ENTRIES, 'one send id per (entry, step)');
  t.equal(idsPerMessage, 1, 'no message sent under two ids');
  t.ok(twice <= SEND_CONCURRENCY, `${twice} repeated ≤ ${SEND_CONCURRENCY} (the sends in flight at the kill)`);
  t.equal(more, 0, 'none three times');
  await second.stop();
});
