/**
 * Waits decided on a consistent view (issue 38): a waitUntil's timeout is decided only once every event
 * acknowledged before it is stored, so an order acknowledged before the timeout ends the wait even when
 * the pass comes before compaction stored it; and the waits listing tells when a first-step wait moves.
 * Real app, real storage, the outbox channel, a manual clock.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { ManualClock } from '../../../src/core/context.js';
import { customEvent, startTestApp, type TestApp } from '../../helpers/app.js';
import { scaled } from '../../helpers/deadline.js';
import { putQuery, runFlow, startFlow } from '../../helpers/flows.js';

const CART_TRIGGER = `SELECT identity, identity_type, ts, event_type, event_id, event_raw
FROM event_triggers
WHERE event_type = 'custom_cart_updated'
  AND ts > {cursor_start_time} AND ts <= {cursor_end_time}`;
const outbox = (text: string) => ({ channel: 'outbox', template: { text, to: '{{ contact.email_address }}' } });

function sentTo(h: TestApp): string[] {
  try {
    return readFileSync(join(h.dataDir, 'outbox', 'acme.jsonl'), 'utf8').trim().split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { email: string }).email);
  } catch {
    return [];
  }
}

async function setUp(t: Test, steps: unknown[]) {
  const clock = new ManualClock(Date.UTC(2026, 5, 10, 12, 0));
  const h = await startTestApp(t, { clock });
  const cred = (await h.createOrg('acme')).production;
  await putQuery(h, 'triggers', 'cart_updated', CART_TRIGGER);
  await startFlow(h, { id: 'cart', trigger: 'cart_updated', steps });
  const event = (email: string, name: string, id: string) =>
    h.collect(customEvent(cred, { messageId: id, clientId: `c-${email}`, sentAt: clock.now(), traits: { email }, properties: { eventName: name, properties: { sku: 'A1' } } }));
  return { clock, h, event };
}

t.test('an order acknowledged before the timeout cancels the "you left your cart" message, however late it is stored', async (t) => {
  const { clock, h, event } = await setUp(t, [{ waitUntil: { event: 'custom_order_completed', timeoutSeconds: 8 }, then: 'exit' }, { message: outbox('you left your cart') }]);
  const buyers = Array.from({ length: 12 }, (_, i) => `buyer${i}@example.com`);
  for (const email of buyers) t.equal((await event(email, 'cart_updated', `cart-${email}`)).statusCode, 200);
  const run = await runFlow(h, 'cart');
  t.same(new Set(run.decisions.map((d) => d.outcome)), new Set(['entered']), 'every buyer entered');
  await h.app.flowsRole!.steps.pass('acme');
  clock.advance(4_000);
  // Compaction lags (as under load): the orders are acknowledged 4 s before the timeout, stored only later.
  const compaction = h.app.orgStorage!.compaction!;
  await compaction.stop();
  const orders = await Promise.all(buyers.map((email) => event(email, 'order_completed', `order-${email}`)));
  t.same(orders.map((r) => r.statusCode), buyers.map(() => 200), 'every order acknowledged');
  clock.advance(5_000);
  // The pass after the timeout; compaction resumes a moment later (a pass that does not wait for it is done by then).
  const passing = h.app.flowsRole!.steps.pass('acme');
  await Promise.race([passing, new Promise((resolve) => setTimeout(resolve, scaled(500)))]);
  await compaction.start();
  t.equal((await passing).sent, 0, 'the pass waited for the orders to be stored');
  await h.app.flowsRole!.dispatcher.idle();
  t.same(sentTo(h), [], 'no buyer was told they left their cart');
  const decisions = (await h.admin('GET', '/admin/v1/orgs/acme/flows/cart/decisions')).json().decisions as Array<{ outcome: string; reason: string }>;
  t.equal(decisions.filter((d) => d.outcome === 'exited').length, buyers.length, 'each exited: the order arrived while waiting');
  t.match(decisions.find((d) => d.outcome === 'exited'), { reason: /custom_order_completed arrived while waiting/ });
});

t.test('the waits listing shows when a first-step wait moves, and the entry moves then', async (t) => {
  const { clock, h, event } = await setUp(t, [{ wait: { seconds: 3600 } }, { message: outbox('still thinking?') }]);
  const entered = clock.now();
  t.equal((await event('ada@example.com', 'cart_updated', 'cart-ada')).statusCode, 200);
  await runFlow(h, 'cart');
  const listed = async () => (await h.admin('GET', '/admin/v1/orgs/acme/flows/cart/waits')).json().entries as Array<{ kind: string; dueAt: string; enteredAt: string }>;
  t.match(await listed(), [{ kind: 'wait', enteredAt: new Date(entered).toISOString(), dueAt: new Date(entered + 3_600_000).toISOString() }], 'before any pass: an hour after the entry');
  clock.advance(30_000);
  await h.app.flowsRole!.steps.pass('acme');
  t.match(await listed(), [{ dueAt: new Date(entered + 3_600_000).toISOString() }], 'a pass 30 s later does not move the time');
  clock.set(entered + 3_600_000 - 1);
  t.equal((await h.app.flowsRole!.steps.pass('acme')).sent, 0, 'not before its time');
  clock.set(entered + 3_600_000);
  t.equal((await h.app.flowsRole!.steps.pass('acme')).sent, 1, 'sent at the time listed');
  t.same(await listed(), []);
});

t.test('a simulation while profiles are behind the acknowledged events answers 503 profiles_behind, then decides', async (t) => {
  const { h, event } = await setUp(t, [{ message: outbox('hello') }]);
  t.equal((await event('ada@example.com', 'cart_updated', 'cart-ada')).statusCode, 200);
  await h.compacted();
  // Compaction stopped: an event acknowledged now is not folded within the bound (10 s).
  const compaction = h.app.orgStorage!.compaction!;
  await compaction.stop();
  t.equal((await event('ada@example.com', 'cart_updated', 'cart-ada-2')).statusCode, 200);
  const behind = await h.admin('POST', '/admin/v1/orgs/acme/flows/cart/simulate', { identity: 'email:ada@example.com' });
  t.equal(behind.statusCode, 503, behind.body.slice(0, 300));
  t.match(behind.json(), { code: 'profiles_behind', detail: /not folded into profiles within/ });
  t.equal(behind.headers['retry-after'], '5');
  await compaction.start();
  const decided = await h.admin('POST', '/admin/v1/orgs/acme/flows/cart/simulate', { identity: 'email:ada@example.com' });
  t.equal(decided.statusCode, 200, `once folded it decides: ${decided.body.slice(0, 200)}`);
});
