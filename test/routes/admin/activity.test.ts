/**
 * Counts over time for the charts (issue 28): GET …/events/activity (events per type, stored, quarantined),
 * GET …/events/pending (events held for an identity, with their age) and GET …/flows/{id}/activity (sends
 * per status over time, the funnel). A manual clock, the real app and org database; numbers counted by hand.
 * Hostile ranges, another org's data and cursors, repeated and unknown parameters.
 */
import t from 'tap';
import { ManualClock } from '../../../src/core/context.js';
import { MAX_BUCKETS } from '../../../src/db/time-buckets.js';
import { customEvent, startTestApp } from '../../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../../helpers/flows.js';
import { startReceiver, status } from '../../helpers/http-receiver.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const T0 = Date.UTC(2026, 5, 10, 10, 0);
const iso = (ms: number) => new Date(ms).toISOString();

t.test('events per type, stored and quarantined, per bucket; the top types and the rest', async (t) => {
  const clock = new ManualClock(T0);
  const h = await startTestApp(t, { clock });
  const acme = await h.createOrg('acme');
  const beta = await h.createOrg('beta');
  let n = 0;
  const send = async (eventName: string, at: number, cred = acme.production) => {
    clock.set(at);
    const res = await h.collect(customEvent(cred, { messageId: `m-${n++}`, sentAt: at, properties: { eventName, properties: {} } }));
    t.equal(res.statusCode, 200, res.body);
  };
  // 10:05 three bookings, 10:10 two page views, 11:30 one booking, 11:31 one booking in staging.
  for (let i = 0; i < 3; i++) await send('booking_completed', T0 + 5 * MINUTE);
  for (let i = 0; i < 2; i++) await send('page_viewed', T0 + 10 * MINUTE);
  await send('booking_completed', T0 + 90 * MINUTE);
  await send('booking_completed', T0 + 91 * MINUTE, acme.staging);
  // Two rejected at 10:20 (quarantined), and beta's events at 10:05, which acme never counts.
  clock.set(T0 + 20 * MINUTE);
  for (let i = 0; i < 2; i++) t.equal((await h.collect(customEvent(acme.production, { event: 'bogus' }))).statusCode, 412);
  for (let i = 0; i < 4; i++) await send('booking_completed', T0 + 5 * MINUTE, beta.production);
  await h.compacted();
  clock.set(T0 + 3 * HOUR);

  const get = async (query: string, org = 'acme') => {
    const res = await h.admin('GET', `/admin/v1/orgs/${org}/events/activity${query}`);
    t.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const hourly = await get(`?from=${iso(T0)}&to=${iso(T0 + 3 * HOUR)}&bucket=hour`);
  t.same(hourly.times, [iso(T0), iso(T0 + HOUR), iso(T0 + 2 * HOUR)]);
  t.same(hourly.range, { from: iso(T0), to: iso(T0 + 3 * HOUR) });
  t.equal(hourly.bucket, 'hour');
  t.equal(hourly.environment, null);
  t.same(hourly.types, [
    { eventType: 'custom_booking_completed', total: 5, counts: [3, 2, 0] },
    { eventType: 'custom_page_viewed', total: 2, counts: [2, 0, 0] },
  ]);
  t.same(hourly.stored, { total: 7, counts: [5, 2, 0] });
  t.same(hourly.quarantined, { total: 2, counts: [2, 0, 0] });
  t.same(hourly.otherTypes, { types: 0, total: 0, counts: [0, 0, 0] });

  const production = await get(`?env=production&from=${iso(T0)}&to=${iso(T0 + 3 * HOUR)}&bucket=hour`);
  t.same(production.stored.counts, [5, 1, 0], 'the staging booking is not counted');
  t.equal(production.environment, 'production');

  // The default: the last 24 hours by the hour, until now; 25 buckets as 10:00 is not on a boundary… it is.
  const recent = await get('');
  t.equal(recent.bucket, 'hour');
  t.equal(recent.times.length, 24);
  t.equal(recent.range.to, iso(T0 + 3 * HOUR));
  t.equal(recent.stored.total, 7);

  // By the minute: from is inclusive, to is not; a range not on a boundary starts its first bucket earlier.
  const minutes = await get(`?from=${iso(T0 + 5 * MINUTE + 30_000)}&to=${iso(T0 + 10 * MINUTE)}`);
  t.equal(minutes.bucket, 'minute', 'a short range is counted by the minute');
  t.equal(minutes.times[0], iso(T0 + 5 * MINUTE));
  t.equal(minutes.times.length, 5);
  t.equal(minutes.stored.total, 0, '10:05:00 is before from; 10:10:00 is to, not counted');
  const around = await get(`?from=${iso(T0 + 5 * MINUTE)}&to=${iso(T0 + 10 * MINUTE + 1)}&bucket=minute`);
  t.same(around.stored.counts, [3, 0, 0, 0, 0, 2]);

  const other = await get(`?from=${iso(T0)}&to=${iso(T0 + 3 * HOUR)}&bucket=hour`, 'beta');
  t.same(other.stored.counts, [4, 0, 0], "beta counts its own, none of acme's");
  t.equal(other.quarantined.total, 0);
});

t.test('more types than the chart shows: the most frequent each, the rest summed', async (t) => {
  const clock = new ManualClock(T0);
  const h = await startTestApp(t, { clock });
  const cred = (await h.createOrg('acme')).production;
  // Type i is sent i + 1 times: t11 most, t0 least; 12 types, 8 shown.
  const events = Array.from({ length: 12 }, (_, i) => Array.from({ length: i + 1 }, (_, k) => `t${i}-${k}`)).flat();
  for (const id of events) {
    const name = id.slice(0, id.indexOf('-'));
    t.equal((await h.collect(customEvent(cred, { messageId: id, properties: { eventName: name, properties: {} } }))).statusCode, 200);
  }
  await h.compacted();
  const res = await h.admin('GET', `/admin/v1/orgs/acme/events/activity?from=${iso(T0)}&to=${iso(T0 + HOUR)}&bucket=hour`);
  const answer = res.json();
  t.same(
    answer.types.map((s: { eventType: string; total: number }) => [s.eventType, s.total]),
    [11, 10, 9, 8, 7, 6, 5, 4].map((i) => [`custom_t${i}`, i + 1]),
  );
  t.same(answer.otherTypes, { types: 4, total: 1 + 2 + 3 + 4, counts: [10] });
  t.same(answer.stored.counts, [events.length]);
});

t.test('ranges a client may send: clear 400s, never a huge answer', async (t) => {
  const h = await startTestApp(t);
  await h.createOrg('acme');
  await h.createOrg('beta');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER, 'beta');
  const created = await h.admin('POST', '/admin/v1/orgs/beta/flows', {
    id: 'f', name: 'F', category: 'triggered', entry: 'when_contact_triggers_event', trigger: 'booking_completed', message: { channel: 'outbox', template: { text: 'x' } },
  });
  t.equal(created.statusCode, 201, created.body);
  const paths = ['/admin/v1/orgs/acme/events/activity'];
  const cases: Array<[string, RegExp]> = [
    ['from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z', /from .* must be before to/],
    ['from=2026-01-01T00:00:00Z&to=2026-01-01T00:00:00Z', /must be before/],
    ['from=yesterday', /from must be an ISO 8601 date-time/],
    ['to=1', /to must be an ISO 8601/],
    ['from=2026-13-45T99:00:00Z', /from must be an ISO 8601/],
    ['bucket=week', /bucket must be one of minute, hour, day/],
    ['bucket=__proto__', /bucket must be one of/],
    ['bucket=constructor', /bucket must be one of/],
    [`from=2000-01-01T00:00:00Z&bucket=minute`, new RegExp(`at most ${MAX_BUCKETS}; ask for bucket=hour`)],
    ['from=0001-01-01T00:00:00Z&to=9999-12-31T00:00:00Z', new RegExp(`days .*at most ${MAX_BUCKETS}; ask for or a shorter range`)],
    ['from=2026-01-01T00:00:00Z&from=2026-01-02T00:00:00Z', /querystring\/from must be string/],
    ['env=prod', /env must be staging or production/],
  ];
  for (const path of paths) {
    for (const [query, detail] of cases) {
      const res = await h.admin('GET', `${path}?${query}`);
      t.equal(res.statusCode, 400, `${query}: ${res.body}`);
      t.match(res.json(), { code: 'invalid_request', detail }, query);
      t.match(res.headers['content-type'], /application\/problem\+json/);
    }
  }
  // The flow's activity takes the same range, and no other parameter.
  const flow = await h.admin('GET', '/admin/v1/orgs/beta/flows/f/activity?bucket=week');
  t.equal(flow.statusCode, 400);
  t.match(flow.json(), { code: 'invalid_request', detail: /bucket must be one of/ });
  const extra = await h.admin('GET', '/admin/v1/orgs/beta/flows/f/activity?status=x');
  t.equal(extra.statusCode, 400, extra.body);
  // Another org's flow, or an org that is not there: 404, never its counts.
  t.match((await h.admin('GET', '/admin/v1/orgs/acme/flows/f/activity')).json(), { code: 'flow_not_found' });
  t.match((await h.admin('GET', '/admin/v1/orgs/nobody/events/activity')).json(), { code: 'org_not_found' });
  t.match((await h.admin('GET', '/admin/v1/orgs/nobody/events/pending')).json(), { code: 'org_not_found' });
  // Without the admin key: 401.
  const anonymous = await h.app.inject({ method: 'GET', url: '/admin/v1/orgs/acme/events/activity' });
  t.equal(anonymous.statusCode, 401);
  // The largest range a client may ask for answers at most MAX_BUCKETS numbers per series.
  const widest = await h.admin('GET', `/admin/v1/orgs/acme/events/activity?from=${iso(Date.now() - (MAX_BUCKETS - 1) * 86_400_000)}&bucket=day`);
  t.equal(widest.statusCode, 200, widest.body);
  t.ok(widest.json().times.length <= MAX_BUCKETS);
});

t.test('events held for an identity: listed oldest first with their age, gone once identified', async (t) => {
  const clock = new ManualClock(T0);
  const h = await startTestApp(t, { clock });
  const acme = await h.createOrg('acme');
  const beta = await h.createOrg('beta');
  const anonymous = (cred: { partnerId: string; partnerSecret: string }, id: string, clientId: string, eventName = 'page_viewed') =>
    h.collect(customEvent(cred, { messageId: id, clientId, sentAt: clock.now(), traits: {}, properties: { eventName, properties: {} } }));
  t.equal((await anonymous(acme.production, 'p-1', 'anon-1')).statusCode, 200);
  clock.set(T0 + 10 * MINUTE);
  t.equal((await anonymous(acme.production, 'p-2', 'anon-2', 'cart_viewed')).statusCode, 200);
  t.equal((await anonymous(acme.staging, 'p-3', 'anon-1')).statusCode, 200);
  t.equal((await anonymous(beta.production, 'p-4', 'anon-1')).statusCode, 200);
  await h.compacted();
  clock.set(T0 + HOUR);

  const list = async (query = '', org = 'acme') => {
    const res = await h.admin('GET', `/admin/v1/orgs/${org}/events/pending${query}`);
    t.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const all = await list();
  t.equal(all.count, 3);
  t.equal(all.oldestReceivedAt, iso(T0));
  t.same(
    all.events.map((e: Record<string, unknown>) => [e.messageId, e.clientId, e.eventType, e.environment, e.ageSeconds, e.receivedAt, e.expiresAt]),
    [
      ['p-1', 'anon-1', 'custom_page_viewed', 'production', 3600, iso(T0), iso(T0 + 7 * 24 * HOUR)],
      ['p-2', 'anon-2', 'custom_cart_viewed', 'production', 3000, iso(T0 + 10 * MINUTE), iso(T0 + 10 * MINUTE + 7 * 24 * HOUR)],
      ['p-3', 'anon-1', 'custom_page_viewed', 'staging', 3000, iso(T0 + 10 * MINUTE), iso(T0 + 10 * MINUTE + 7 * 24 * HOUR)],
    ],
  );
  t.match(await list('?env=staging'), { count: 1, events: [{ messageId: 'p-3' }] });
  t.match(await list('', 'beta'), { count: 1, events: [{ messageId: 'p-4' }] }, "beta's own only");

  // A page at a time; another org's cursor is refused.
  const first = await list('?limit=1');
  t.equal(first.events.length, 1);
  t.equal(first.count, 3, 'count is over every held event, not the page');
  const second = await list(`?limit=5&cursor=${first.nextCursor}`);
  t.same(second.events.map((e: { messageId: string }) => e.messageId), ['p-2', 'p-3']);
  t.equal(second.nextCursor, null);
  const foreign = await h.admin('GET', `/admin/v1/orgs/beta/events/pending?cursor=${first.nextCursor}`);
  t.equal(foreign.statusCode, 400);
  t.match(foreign.json(), { code: 'invalid_cursor' });

  // anon-1 identifies in production: p-1 is stored, the staging one waits on.
  const identify = await h.collect({ ...customEvent(acme.production, { messageId: 'id-1', clientId: 'anon-1', sentAt: clock.now() }), type: 'identify', event: undefined, properties: undefined, traits: { email: 'ada@example.com' } });
  t.equal(identify.statusCode, 200, identify.body);
  await h.compacted();
  const after = await list();
  t.equal(after.count, 2);
  t.same(after.events.map((e: { messageId: string }) => e.messageId), ['p-2', 'p-3']);
  t.equal(after.oldestReceivedAt, iso(T0 + 10 * MINUTE));
});

t.test("a flow's sends per status over time, and its funnel", async (t) => {
  const receiver = await startReceiver([status(204), status(400), status(204), status(204), status(204)]);
  t.teardown(() => receiver.close());
  const clock = new ManualClock(T0);
  const h = await startTestApp(t, { clock });
  const cred = (await h.createOrg('acme')).production;
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  await startFlow(h, {
    id: 'welcome',
    scheduleSeconds: 3600,
    reentry: 'once',
    message: { channel: 'webhook', url: `${receiver.url}/hook`, template: { body: { to: '{{ contact.email_address }}' } } },
  });
  let n = 0;
  const book = (email: string) =>
    h.collect(customEvent(cred, { messageId: `b-${n++}`, clientId: `c-${email}`, sentAt: clock.now(), traits: { email }, properties: { eventName: 'booking_completed', properties: {} } }));
  // 10:01 three contacts book; the 10:02 run sends three webhooks, the second refused (400: failed).
  clock.set(T0 + MINUTE);
  for (const who of ['ada', 'bob', 'cy']) t.equal((await book(`${who}@example.com`)).statusCode, 200);
  clock.set(T0 + 2 * MINUTE);
  await runFlow(h, 'welcome');
  // 11:01 ada books again (re-entry once: blocked) and dee books; the 11:02 run sends one.
  clock.set(T0 + HOUR + MINUTE);
  for (const who of ['ada', 'dee']) t.equal((await book(`${who}@example.com`)).statusCode, 200);
  clock.set(T0 + HOUR + 2 * MINUTE);
  await runFlow(h, 'welcome');
  clock.set(T0 + 3 * HOUR);

  const res = await h.admin('GET', `/admin/v1/orgs/acme/flows/welcome/activity?from=${iso(T0)}&to=${iso(T0 + 3 * HOUR)}&bucket=hour`);
  t.equal(res.statusCode, 200, res.body);
  const activity = res.json();
  t.equal(activity.flowId, 'welcome');
  t.same(activity.times, [iso(T0), iso(T0 + HOUR), iso(T0 + 2 * HOUR)]);
  t.same(activity.sends, [
    { status: 'delivered', total: 3, counts: [2, 1, 0] },
    { status: 'failed', total: 1, counts: [1, 0, 0] },
  ]);
  t.same(activity.funnel, { entered: 5, decided: 4, sent: 4, delivered: 3, skipped: [{ reason: 'reentry_blocked', atStep: false, count: 1 }] });

  // The second hour alone.
  const later = (await h.admin('GET', `/admin/v1/orgs/acme/flows/welcome/activity?from=${iso(T0 + HOUR)}&to=${iso(T0 + 2 * HOUR)}`)).json();
  t.equal(later.bucket, 'minute');
  t.same(later.funnel, { entered: 2, decided: 1, sent: 1, delivered: 1, skipped: [{ reason: 'reentry_blocked', atStep: false, count: 1 }] });
  t.same(later.sends.map((s: { status: string; total: number }) => [s.status, s.total]), [['delivered', 1]]);
  t.equal(later.sends[0].counts[2], 1, 'decided at 11:02');
});

t.test('a flow with steps: a trigger row counts once, its steps’ sends and skips apart', async (t) => {
  const clock = new ManualClock(T0);
  const h = await startTestApp(t, { clock });
  const cred = (await h.createOrg('acme')).production;
  const cart = BOOKING_TRIGGER.replace('custom_booking_completed', 'custom_cart_updated');
  await putQuery(h, 'triggers', 'cart_updated', cart);
  await putQuery(h, 'triggers', 'order_completed', cart.replace('custom_cart_updated', 'custom_order_completed'));
  const outbox = (text: string) => ({ channel: 'outbox', template: { text, to: '{{ contact.email_address }}' } });
  await startFlow(h, {
    id: 'cart',
    trigger: 'cart_updated',
    steps: [{ message: outbox('first') }, { waitUntil: { event: 'custom_order_completed', timeoutSeconds: 3600 }, then: 'exit' }, { message: outbox('second') }],
  });
  const event = (email: string, name: string, id: string) =>
    h.collect(customEvent(cred, { messageId: id, clientId: `c-${email}`, sentAt: clock.now(), traits: { email }, properties: { eventName: name, properties: {} } }));
  const pass = async () => {
    await h.compacted();
    await h.app.flowsRole!.steps.pass('acme');
    await h.app.flowsRole!.dispatcher.idle();
  };
  // A trigger row whose own event id ends like a step's (#0) counts as a trigger row all the same.
  for (const [who, id] of [['ada', 'cart-ada'], ['bob', 'cart-bob'], ['cy', 'cart#0']] as const) t.equal((await event(`${who}@example.com`, 'cart_updated', id)).statusCode, 200);
  clock.set(T0 + MINUTE);
  await runFlow(h, 'cart');
  await pass();
  clock.set(T0 + 30 * MINUTE);
  t.equal((await event('bob@example.com', 'order_completed', 'order-bob')).statusCode, 200);
  await pass();
  clock.set(T0 + MINUTE + HOUR + 1);
  await pass();
  clock.set(T0 + 3 * HOUR);

  const activity = (await h.admin('GET', `/admin/v1/orgs/acme/flows/cart/activity?from=${iso(T0)}&to=${iso(T0 + 3 * HOUR)}&bucket=hour`)).json();
  t.same(
    activity.funnel,
    { entered: 3, decided: 3, sent: 5, delivered: 5, skipped: [{ reason: 'exited', atStep: true, count: 1 }] },
    'three entries; five messages: the first step for all three, the second for ada and cy; bob left on his order',
  );
  t.same(activity.sends, [{ status: 'delivered', total: 5, counts: [3, 2, 0] }]);
});
