/**
 * Flows with steps (issue 26 part 1): waits, waits for an event with a timeout, message steps, the flow's
 * exit event. Scenario tables against the real app (real DuckDB, the outbox channel) with a manual clock:
 * events in → entries, decisions and messages out. Crashes (kill -9 while entries wait) are in
 * test/crash/flow-steps-crash.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { ManualClock } from '../../../src/core/context.js';
import { customEvent, startTestApp, type TestApp, waitFor } from '../../helpers/app.js';
import { putQuery, runFlow, startFlow } from '../../helpers/flows.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const CART_TRIGGER = `SELECT identity, identity_type, ts, event_type, event_id, event_raw
FROM event_triggers
WHERE event_type = 'custom_cart_updated'
  AND ts > {cursor_start_time} AND ts <= {cursor_end_time}`;
const ORDER_TRIGGER = CART_TRIGGER.replace('custom_cart_updated', 'custom_order_completed');

const outbox = (text: string) => ({ channel: 'outbox', template: { text, to: '{{ contact.email_address }}' } });

/** The outbox channel's messages: [to, text] in the order sent. */
function sent(h: TestApp): Array<[string, string]> {
  try {
    return readFileSync(join(h.dataDir, 'outbox', 'acme.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const { content } = JSON.parse(line) as { content: { to: string; text: string } };
        return [content.to, content.text];
      });
  } catch {
    return [];
  }
}

async function setUp(t: Test, steps: unknown[], extra: Record<string, unknown> = {}) {
  const clock = new ManualClock(Date.UTC(2026, 5, 10, 12, 0));
  const h = await startTestApp(t, { clock });
  const cred = (await h.createOrg('acme')).production;
  await putQuery(h, 'triggers', 'cart_updated', CART_TRIGGER);
  await putQuery(h, 'triggers', 'order_completed', ORDER_TRIGGER);
  await startFlow(h, { id: 'cart', trigger: 'cart_updated', steps, ...extra });
  const event = (email: string, name: string, id: string) =>
    h.collect(customEvent(cred, { messageId: id, clientId: `c-${email}`, sentAt: clock.now(), traits: { email }, properties: { eventName: name, properties: { sku: 'A1' } } }));
  /** One pass of the steps, its sends delivered. */
  const pass = async () => {
    await h.compacted();
    const summary = await h.app.flowsRole!.steps.pass('acme');
    await h.app.flowsRole!.dispatcher.idle();
    return summary;
  };
  const decisions = async (email: string) =>
    ((await h.admin('GET', `/admin/v1/orgs/acme/flows/cart/decisions?identity=email:${email}`)).json().decisions as Array<{ outcome: string; eventId: string }>)
      .map((d) => `${d.eventId}:${d.outcome}`)
      .sort();
  const waits = async (email?: string) => {
    const res = await h.admin('GET', `/admin/v1/orgs/acme/flows/cart/waits${email ? `?identity=email:${email}` : ''}`);
    t.equal(res.statusCode, 200, res.body);
    return res.json() as { entries: Array<{ email: string; step: number; kind: string; until: string | null; dueAt: string }>; total: number };
  };
  return { h, clock, event, pass, decisions, waits };
}

t.test('cart abandonment: wait 1 h unless bought, send, wait 1 day, send a reminder unless bought', async (t) => {
  const { h, clock, event, pass, decisions, waits } = await setUp(
    t,
    [
      { waitUntil: { event: 'custom_order_completed', timeoutSeconds: 3600 }, then: 'exit' },
      { message: outbox('You left something in your cart') },
      { wait: { seconds: 86_400 } },
      { message: outbox('Still thinking about it?') },
    ],
    { exit: { event: 'custom_order_completed' } },
  );
  const start = clock.now();
  for (const who of ['ada', 'bob', 'cy']) t.equal((await event(`${who}@example.com`, 'cart_updated', `cart-${who}`)).statusCode, 200);
  await h.compacted();
  const simulated = await h.admin('POST', '/admin/v1/orgs/acme/flows/cart/simulate', { identity: 'email:ada@example.com' });
  t.equal(simulated.statusCode, 200, simulated.body);
  t.match(simulated.json().decisions, [{ eventId: 'cart-ada', outcome: 'entered', waitsIn: { step: 0, kind: 'waitUntil', until: 'custom_order_completed', dueAt: new Date(start + HOUR).toISOString(), messagesBefore: 0 } }]);
  t.equal((await waits()).total, 0, 'a simulation enters nobody');
  const run = await runFlow(h, 'cart');
  t.same(run.decisions.map((d) => d.outcome), ['entered', 'entered', 'entered'], 'each contact enters; nothing is sent at entry');
  await pass();
  t.equal((await waits()).total, 3, 'each waits in step 0');
  t.same(sent(h), []);
  t.match(await waits('ada@example.com'), { total: 1, entries: [{ email: 'ada@example.com', step: 0, kind: 'waitUntil', until: 'custom_order_completed', dueAt: new Date(start + HOUR).toISOString() }] });

  clock.set(start + 30 * MINUTE);
  await event('bob@example.com', 'order_completed', 'order-bob');
  await pass();
  t.same(sent(h), [], 'bob bought: his entry ends, nothing sent');
  t.same(await decisions('bob@example.com'), ['cart-bob#0:exited', 'cart-bob:entered']);
  t.equal((await waits()).total, 2);

  clock.set(start + HOUR - 1);
  await pass();
  t.same(sent(h), [], 'not a millisecond early');
  clock.set(start + HOUR);
  await pass();
  t.same(sent(h).sort(), [
    ['ada@example.com', 'You left something in your cart'],
    ['cy@example.com', 'You left something in your cart'],
  ]);
  await pass();
  t.equal(sent(h).length, 2, 'a second pass at the same time sends nothing more');

  clock.set(start + 2 * HOUR);
  await event('cy@example.com', 'order_completed', 'order-cy');
  await pass();
  t.same((await waits()).entries.map((e) => e.email), ['ada@example.com'], "cy bought during the day: the flow's exit event ends her entry");

  clock.set(start + HOUR + 86_400_000);
  await pass();
  t.same(sent(h).slice(2), [['ada@example.com', 'Still thinking about it?']], 'only ada gets the reminder');
  t.equal((await waits()).total, 0, 'every entry ended');
  t.same(await decisions('ada@example.com'), ['cart-ada#1:sent', 'cart-ada#3:sent', 'cart-ada:entered']);
  t.same(await decisions('cy@example.com'), ['cart-cy#1:sent', 'cart-cy#2:exited', 'cart-cy:entered']);
  const sendIds = ((await h.admin('GET', '/admin/v1/orgs/acme/flows/cart/sends')).json().sends as Array<{ sendId: string; status: string }>).filter((s) => s.status === 'delivered');
  t.equal(new Set(sendIds.map((s) => s.sendId)).size, 3, 'three messages, three send ids');
  const results = (await h.admin('GET', '/admin/v1/orgs/acme/flows/cart/results')).json();
  t.match(results.variants, [{ variant: null, entered: 3, sent: 2 }], 'results: three contacts entered, two were sent a message');
});

t.test('the journey preview (simulate): each step at its latest, the branch that holds, and the run then takes that path', async (t) => {
  const { h, clock, event, pass } = await setUp(t, [
    { waitUntil: { event: 'order_completed', timeoutSeconds: 3600 }, then: 'continue' },
    {
      message: outbox('Your cart'),
      branches: [
        { when: { field: 'wait.outcome', op: 'eq', value: 'event' }, message: outbox('Thanks for your order') },
        { when: { field: 'event.properties.sku', op: 'eq', value: 'A1' }, message: outbox('About A1') },
      ],
    },
    { wait: { seconds: 86_400 } },
    { message: outbox('Still there?'), branches: [{ when: { field: 'contact.email_address', op: 'eq', value: 'ada@example.com' }, message: outbox('Still there, Ada?') }] },
  ]);
  const start = clock.now();
  await event('ada@example.com', 'cart_updated', 'cart-ada');
  await event('bob@example.com', 'cart_updated', 'cart-bob');
  await h.compacted();
  const iso = (ms: number) => new Date(ms).toISOString();
  const journey = async (email: string) => {
    const res = await h.admin('POST', '/admin/v1/orgs/acme/flows/cart/simulate', { identity: `email:${email}` });
    t.equal(res.statusCode, 200, res.body);
    return res.json().decisions[0].journey;
  };
  const path = (last: number | null) => [
    { step: 0, kind: 'waitUntil', at: iso(start), until: iso(start + HOUR), event: 'order_completed', branch: null, branchIfEvent: null },
    { step: 1, kind: 'message', at: iso(start + HOUR), until: null, event: null, branch: 1, branchIfEvent: 0 },
    { step: 2, kind: 'wait', at: iso(start + HOUR), until: iso(start + HOUR + 86_400_000), event: null, branch: null, branchIfEvent: null },
    { step: 3, kind: 'message', at: iso(start + HOUR + 86_400_000), until: null, event: null, branch: last, branchIfEvent: last },
  ];
  t.same(await journey('ada@example.com'), path(0), "ada: at the timeout the sku branch, if she ordered the thanks; then her own reminder");
  t.same(await journey('bob@example.com'), path(null), "bob: the last step's own message");
  const sim = await h.admin('POST', '/admin/v1/orgs/acme/flows/cart/simulate', { identity: 'email:ada@example.com' });
  t.match(sim.json().decisions[0].waitsIn, { step: 0, kind: 'waitUntil', until: 'order_completed', dueAt: iso(start + HOUR), messagesBefore: 0 }, 'waitsIn is the journey\'s first wait');

  // The run takes the path the preview showed.
  await runFlow(h, 'cart');
  await pass();
  clock.set(start + HOUR);
  await pass();
  clock.set(start + HOUR + 86_400_000);
  await pass();
  t.same(sent(h).sort(), [
    ['ada@example.com', 'About A1'],
    ['ada@example.com', 'Still there, Ada?'],
    ['bob@example.com', 'About A1'],
    ['bob@example.com', 'Still there?'],
  ]);
});

t.test('waitUntil then continue: the next step knows whether the event came (wait.outcome) or the timeout passed', async (t) => {
  const { h, clock, event, pass } = await setUp(t, [
    { waitUntil: { event: 'order_completed', timeoutSeconds: 600 }, then: 'continue' },
    { message: outbox('No order yet'), branches: [{ when: { field: 'wait.outcome', op: 'eq', value: 'event' }, message: outbox('Thanks for your order') }] },
  ]);
  const start = clock.now();
  await event('ada@example.com', 'cart_updated', 'cart-ada');
  await event('bob@example.com', 'cart_updated', 'cart-bob');
  await runFlow(h, 'cart');
  await pass();
  clock.set(start + MINUTE);
  // order_completed is a trigger here (not a stored event name): its rows for ada move her on at once.
  await event('ada@example.com', 'order_completed', 'order-ada');
  await pass();
  t.same(sent(h), [['ada@example.com', 'Thanks for your order']], 'ada moves on when her order arrives, not at the timeout');
  clock.set(start + 10 * MINUTE);
  await pass();
  t.same(sent(h).sort(), [
    ['ada@example.com', 'Thanks for your order'],
    ['bob@example.com', 'No order yet'],
  ]);
});

t.test('the service moves entries by itself: an arriving event ends a wait without a pass being asked for', async (t) => {
  const { h, event, pass } = await setUp(t, [{ waitUntil: { event: 'custom_order_completed', timeoutSeconds: 86_400 }, then: 'continue' }, { message: outbox('Thanks') }]);
  await event('ada@example.com', 'cart_updated', 'cart-ada');
  await runFlow(h, 'cart');
  await pass();
  t.same(sent(h), [], 'waiting');
  // No pass is called from here on: the steps' own tick sees the stored order (the clock stands still).
  await event('ada@example.com', 'order_completed', 'order-ada');
  await waitFor(async () => sent(h).length === 1, 20_000);
  t.same(sent(h), [['ada@example.com', 'Thanks']]);
});

t.test('an event before the entry, or of another contact, does not end a wait; a paused flow waits; consent is checked at each message', async (t) => {
  const { h, clock, event, pass, decisions } = await setUp(t, [{ wait: { seconds: 60 } }, { message: outbox('one') }, { wait: { seconds: 60 } }, { message: outbox('two') }], {
    exit: { event: 'custom_order_completed' },
  });
  const start = clock.now();
  await event('ada@example.com', 'order_completed', 'order-before');
  clock.set(start + 1000);
  await event('ada@example.com', 'cart_updated', 'cart-ada');
  await event('bob@example.com', 'cart_updated', 'cart-bob');
  await runFlow(h, 'cart');
  await pass();
  await event('eve@example.com', 'order_completed', 'order-eve');
  clock.set(start + 2 * MINUTE);
  await pass();
  t.same(sent(h).map(([to, text]) => `${to} ${text}`).sort(), ['ada@example.com one', 'bob@example.com one'], "an order before the cart, and eve's order, end nothing");

  t.equal((await h.admin('POST', '/admin/v1/orgs/acme/flows/cart/pause')).statusCode, 200);
  clock.set(start + 10 * MINUTE);
  await pass();
  t.equal(sent(h).length, 2, 'a paused flow moves no entry');
  t.equal((await h.admin('PUT', '/admin/v1/orgs/acme/contacts/consent', { identity: 'email:bob@example.com', topic: 'all', status: 'unsubscribed' })).statusCode, 200);
  t.equal((await h.admin('POST', '/admin/v1/orgs/acme/flows/cart/start')).statusCode, 200);
  await pass();
  t.same(sent(h).map(([to, text]) => `${to} ${text}`).sort(), ['ada@example.com one', 'ada@example.com two', 'bob@example.com one'], 'started again: ada gets the second message');
  t.same(await decisions('bob@example.com'), ['cart-bob#1:sent', 'cart-bob#3:unsubscribed', 'cart-bob:entered'], 'bob unsubscribed meanwhile: his entry ends, said why');
});

t.test('steps are checked: a message or steps, known events, no message of the flow beside steps', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 5, 10, 12, 0));
  const h = await startTestApp(t, { clock });
  await h.createOrg('acme');
  await putQuery(h, 'triggers', 'cart_updated', CART_TRIGGER);
  // Another org's trigger is not a name this org can wait on.
  await h.createOrg('other');
  await putQuery(h, 'triggers', 'secret_orders', CART_TRIGGER, 'other');
  const base = { id: 'f', name: 'x', category: 'triggered', entry: 'when_contact_triggers_event', trigger: 'cart_updated' };
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{}, /\/message: a flow sends a message, or has steps/],
    [{ steps: [{ wait: { seconds: 60 } }] }, /\/steps: no step sends a message/],
    [{ steps: [{ waitUntil: { event: 'no_such_trigger', timeoutSeconds: 60 }, then: 'exit' }, { message: outbox('x') }] }, /\/steps\/0\/waitUntil\/event: no_such_trigger is neither/],
    [{ steps: [{ message: outbox('x') }], message: outbox('y') }, /\/message: a flow with steps/],
    [{ steps: [{ message: outbox('x') }], exit: { event: 'nope' } }, /\/exit\/event: nope is neither/],
    [{ message: outbox('y'), exit: { event: 'custom_x' } }, /\/exit: exit ends entries waiting in steps/],
    [{ steps: [{ message: outbox('x') }], experiment: { variants: [{ label: 'a', weight: 1, message: outbox('z') }] } }, /variant.label/],
    [{ steps: [{ wait: { seconds: 0 } }, { message: outbox('x') }] }, /does not match/],
    [{ steps: [{ wait: { seconds: 60 }, message: outbox('x') }] }, /does not match/],
    [{ steps: Array.from({ length: 51 }, () => ({ message: outbox('x') })) }, /does not match/],
    [{ steps: [{ message: outbox('x'), branches: [{ when: { field: '__proto__.x', op: 'exists' }, message: outbox('y') }] }] }, /does not match/],
    [{ steps: [{ waitUntil: { event: 'secret_orders', timeoutSeconds: 60 }, then: 'exit' }, { message: outbox('x') }] }, /secret_orders is neither/],
    [{ steps: [{ waitUntil: { event: "x'; DROP TABLE flow_waits; --", timeoutSeconds: 60 }, then: 'exit' }, { message: outbox('x') }] }, /does not match/],
    [{ steps: [{ waitUntil: { event: 'custom_x', timeoutSeconds: 60 }, then: 'later' }, { message: outbox('x') }] }, /does not match/],
    [{ steps: [{ wait: { seconds: 31_536_001 } }, { message: outbox('x') }] }, /does not match/],
  ];
  const proto = await h.admin('POST', '/admin/v1/orgs/acme/flows', { ...base, steps: [JSON.parse('{"wait": {"seconds": 60}, "__proto__": {"polluted": true}}'), { message: outbox('x') }] });
  t.equal(proto.statusCode, 400, 'a __proto__ key in a step is refused before it is read');
  t.match(proto.json(), { code: 'invalid_json' });
  t.equal(({} as Record<string, unknown>).polluted, undefined);
  for (const [extra, expected] of cases) {
    const res = await h.admin('POST', '/admin/v1/orgs/acme/flows', { ...base, ...extra });
    t.equal(res.statusCode, 422, JSON.stringify(extra).slice(0, 120));
    t.match(res.json(), { code: 'invalid_flow', detail: expected });
  }
});
