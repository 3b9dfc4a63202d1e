/**
 * Flow results (issue 26) end to end against hand-computed numbers: a flow with a holdout and two
 * variants, a manual clock, entries on two days, and goal events inside the window, on its last second,
 * one second after it, before the entry, in staging, twice, and by a contact the flow never entered.
 * Real app, real org database, the outbox channel and a webhook receiver that refuses one send.
 */
import t from 'tap';
import { ManualClock } from '../../../src/core/context.js';
import { pickVariant } from '../../../src/reactions/flows/rules/variant.js';
import { customEvent, startTestApp } from '../../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../../helpers/flows.js';
import { startReceiver, status } from '../../helpers/http-receiver.js';

const VARIANTS = [
  { label: 'Holdout', weight: 1, holdout: true },
  { label: 'A', weight: 1 },
  { label: 'B', weight: 1 },
];
const MINUTE = 60_000;

/** `count` e-mails that the flow `exp` puts in `label` (the assignment is a hash: found, not chosen). */
function contactsIn(label: string, count: number, taken: Set<string>): string[] {
  const found: string[] = [];
  for (let i = 0; found.length < count; i++) {
    const email = `c${i}@example.com`;
    if (taken.has(email) || pickVariant('exp', email, VARIANTS).label !== label) continue;
    taken.add(email);
    found.push(email);
  }
  return found;
}

t.test('entered, sent, converted, rates, lift and p-values per variant, exact', async (t) => {
  const receiver = await startReceiver([status(400), status(204)]);
  t.teardown(() => receiver.close());
  const T0 = Date.UTC(2026, 5, 10, 10, 0);
  const clock = new ManualClock(T0);
  const h = await startTestApp(t, { clock });
  const acme = await h.createOrg('acme');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  const taken = new Set<string>();
  const [h1, h2, h3, h4, h5, h6, h7] = contactsIn('Holdout', 7, taken) as [string, string, string, string, string, string, string];
  const [a1, a2, a3, a4, a5, a6, a7, a8, a9] = contactsIn('A', 9, taken) as [string, string, string, string, string, string, string, string, string];
  const [b1, b2, b3, b4, b5] = contactsIn('B', 5, taken) as [string, string, string, string, string];
  const outsider = 'outsider@example.com';

  await startFlow(h, {
    id: 'exp',
    scheduleSeconds: 3600, realTime: false,
    goal: { event: 'custom_purchase', withinSeconds: 3600 },
    experiment: {
      variants: [
        VARIANTS[0],
        VARIANTS[1],
        // B's sends go to a receiver that refuses the first (400: failed, never retried): entered, not sent.
        { ...VARIANTS[2], message: { channel: 'webhook', url: `${receiver.url}/b`, template: { body: { to: '{{ contact.email_address }}' } } } },
      ],
    },
    message: { channel: 'outbox', template: { text: 'hi {{ contact.email_address }}' } },
  });
  let n = 0;
  const send = async (email: string, eventName: string, cred = acme.production) => {
    const res = await h.collect(customEvent(cred, { messageId: `m-${n++}`, clientId: `c-${email}`, sentAt: clock.now(), traits: { email }, properties: { eventName, properties: {} } }));
    t.equal(res.statusCode, 200, res.body);
  };

  // Day 1. Bookings at 10:01; h2 buys at 10:01:30, before the flow enters anyone; the run at 10:02 is E1.
  clock.set(T0 + MINUTE);
  for (const email of [h1, h2, h3, h4, h5, h6, a1, a2, a3, a4, a5, a6, a7, a8, b1, b2, b3, b4, b5]) await send(email, 'booking_completed');
  clock.set(T0 + 1.5 * MINUTE);
  await send(h2, 'purchase');
  const E1 = T0 + 2 * MINUTE;
  clock.set(E1);
  const day1 = await runFlow(h, 'exp');
  t.equal(day1.decisions.length, 19);
  t.equal(receiver.received.length, 5, "B's five webhooks, the first refused");

  // Inside the hour: h1, a1, a2, b1, a4 (twice), the outsider and a6 in staging (neither counts).
  clock.set(E1 + 10 * MINUTE);
  for (const email of [h1, a1, a2, b1, a4, outsider]) await send(email, 'purchase');
  await send(a6, 'purchase', acme.staging);
  clock.set(E1 + 11 * MINUTE);
  await send(a4, 'purchase');
  clock.set(E1 + 3_600_000); // the window's last instant: a3 converts
  await send(a3, 'purchase');
  clock.set(E1 + 3_601_000); // one second late: a5 does not
  await send(a5, 'purchase');
  await send(a7, 'page_liked');

  // Day 2. h7 and a9 enter, a1 enters again (re-entry every_event); a9 buys a minute later.
  const D2 = E1 + 24 * 60 * MINUTE;
  clock.set(D2 - MINUTE);
  for (const email of [h7, a9, a1]) await send(email, 'booking_completed');
  clock.set(D2);
  await runFlow(h, 'exp');
  // The flow was due by its schedule once the clock passed E1 + 1 h: the runner's own tick may have run
  // it before this run (both decide in the org's turn, never twice). Day 2's decisions, whichever run made them.
  const day2 = await h.db('acme').all<{ outcome: string }>("SELECT outcome FROM flow_decisions WHERE flow_id = 'exp' AND decided_at >= make_timestamptz($1::BIGINT * 1000)", [D2 - MINUTE]);
  t.same(day2.map((d) => d.outcome).sort(), ['holdout', 'sent', 'sent']);
  clock.set(D2 + MINUTE);
  await send(a9, 'purchase');
  await h.compacted();
  clock.set(D2 + 2 * 3_600_000);

  const res = await h.admin('GET', '/admin/v1/orgs/acme/flows/exp/results');
  t.equal(res.statusCode, 200, res.body);
  const results = res.json();
  t.same(results.goal, { event: 'custom_purchase', withinSeconds: 3600 });
  t.same(results.range, { from: new Date(E1).toISOString(), to: new Date(D2 + 2 * 3_600_000).toISOString() }, 'since the first entry, until now');
  t.same(results.method, { confidence: 0.95, rateInterval: 'wilson', liftInterval: 'log rate ratio, delta method (Katz)', test: 'two-proportion z-test, pooled variance, two-sided' });
  t.equal(results.control, 'Holdout');
  const [holdout, a, b] = results.variants;
  // Holdout: h1..h7 entered, only h1 converted (h2 bought before its entry): 1/7.
  t.match(holdout, { variant: 'Holdout', holdout: true, control: true, entered: 7, sent: 0, converted: 1, lift: null, liftInterval: null, pValue: null });
  // A: a1..a9 (a1 twice, once); a1, a2, a4 (twice, once), a3 (on the last second) and a9: 5/9; a5 one
  // second late, a6 in staging, a7 another event, a8 nothing.
  t.match(a, { variant: 'A', holdout: false, control: false, entered: 9, sent: 9, converted: 5 });
  // B: b1..b5, one send refused; b1 converted: 1/5.
  t.match(b, { variant: 'B', holdout: false, control: false, entered: 5, sent: 4, converted: 1 });

  const near = (got: number, want: number, what: string) => t.ok(Math.abs(got - want) < 5e-7, `${what}: ${got} ≈ ${want}`);
  // Rates and Wilson intervals, z = 1.959964, z² = 3.841459:
  //  1/7: centre = (1/7 + 3.841459/14) / (1 + 3.841459/7) = 0.4172696 / 1.5487799 = 0.2694205,
  //       half = 1.959964 / 1.5487799 · √(1/7 · 6/7 / 7 + 3.841459/196) = 1.2654891 · 0.1929183 = 0.2437409
  //       → [0.025680, 0.513128]
  //  5/9: centre = (0.5555556 + 0.2134144) / 1.4268288 = 0.5389364, half = 1.3736493 · 0.1979138 = 0.2722851
  //       → [0.266651, 0.811221]
  //  1/5: centre = (0.2 + 0.3841459) / 1.7682918 = 0.3303447, half = 1.1083934 · 0.2650543 = 0.2937843
  //       → [0.036224, 0.624465]
  near(holdout.rate, 1 / 7, 'holdout rate');
  near(holdout.rateInterval.low, 0.02568, 'holdout low');
  near(holdout.rateInterval.high, 0.513128, 'holdout high');
  near(a.rate, 5 / 9, 'A rate');
  near(a.rateInterval.low, 0.266651, 'A low');
  near(a.rateInterval.high, 0.811221, 'A high');
  near(b.rate, 0.2, 'B rate');
  near(b.rateInterval.low, 0.036224, 'B low');
  near(b.rateInterval.high, 0.624465, 'B high');
  // A against the holdout: lift = (5/9) / (1/7) − 1 = 35/9 − 1 = 2.888889; ln(35/9) = 1.3581235,
  // se = √(1/5 − 1/9 + 1/1 − 1/7) = √0.9460317 = 0.9726416; 1.3581235 ± 1.959964 · 0.9726416
  // = [−0.5482453, 3.2644923] → exp − 1 = [−0.422022, 25.166136]. Pooled 6/16 = 0.375,
  // se = √(0.375 · 0.625 · (1/9 + 1/7)) = 0.2439750, z = (0.5555556 − 0.1428571) / 0.2439750 = 1.6915601,
  // p = 2 · (1 − Φ(1.6915601)) = 0.0907299.
  near(a.lift, 35 / 9 - 1, 'A lift');
  near(a.liftInterval.low, -0.422022, 'A lift low');
  near(a.liftInterval.high, 25.166136, 'A lift high');
  near(a.pValue, 0.0907299, 'A p-value');
  // B against the holdout: lift = 0.2 / (1/7) − 1 = 0.4; ln 1.4 = 0.3364722, se = √(1 − 1/5 + 1 − 1/7)
  // = 1.2873006; → [−0.887701, 16.453410]. Pooled 2/12, se = √(1/6 · 5/6 · (1/5 + 1/7)) = 0.2182179,
  // z = (0.2 − 0.1428571) / 0.2182179 = 0.2618615, p = 0.7934282.
  near(b.lift, 0.4, 'B lift');
  near(b.liftInterval.low, -0.887701, 'B lift low');
  near(b.liftInterval.high, 16.45341, 'B lift high');
  near(b.pValue, 0.7934282, 'B p-value');

  t.same(results.daily, [
    { day: '2026-06-10', variant: 'A', entered: 8, sent: 8, converted: 4 },
    { day: '2026-06-10', variant: 'B', entered: 5, sent: 4, converted: 1 },
    { day: '2026-06-10', variant: 'Holdout', entered: 6, sent: 0, converted: 1 },
    { day: '2026-06-11', variant: 'A', entered: 1, sent: 1, converted: 1 },
    { day: '2026-06-11', variant: 'Holdout', entered: 1, sent: 0, converted: 0 },
  ], 'per day: first entries and first conversions (a1 entered again on day 2 and is not counted again)');

  // Day 2 only: h7; a9 and a1 (entered again: its day-1 purchase is before this entry); B none.
  const from = '2026-06-11T00:00:00.000Z';
  const second = (await h.admin('GET', `/admin/v1/orgs/acme/flows/exp/results?from=${from}`)).json();
  t.same(second.range, { from, to: new Date(D2 + 2 * 3_600_000).toISOString() });
  t.match(second.variants, [
    { variant: 'Holdout', entered: 1, converted: 0, rate: 0, lift: null, pValue: null },
    // A: 1/2 against 0/1: the control's rate is 0, so no lift; pooled 1/3, se = √(1/3 · 2/3 · (1/2 + 1))
    // = 0.5773503, z = 0.5 / 0.5773503 = 0.8660254, p = 0.3864762.
    { variant: 'A', entered: 2, sent: 2, converted: 1, rate: 0.5, lift: null, liftInterval: null },
    { variant: 'B', entered: 0, sent: 0, converted: 0, rate: null, rateInterval: null, lift: null, liftInterval: null, pValue: null },
  ]);
  near(second.variants[1].pValue, 0.3864762, 'A p-value on day 2');
  const firstDay = (await h.admin('GET', `/admin/v1/orgs/acme/flows/exp/results?to=${from}`)).json();
  t.match(firstDay.variants, [{ entered: 6, converted: 1 }, { entered: 8, converted: 4 }, { entered: 5, converted: 1 }], 'day 1 only');

  const refused = await h.admin('GET', `/admin/v1/orgs/acme/flows/exp/results?from=${from}&to=${from}`);
  t.equal(refused.statusCode, 400);
  t.equal(refused.json().code, 'invalid_request');
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/flows/exp/results?from=yesterday')).statusCode, 400);
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/flows/nope/results')).json().code, 'flow_not_found');
});

t.test('a flow without a goal or an experiment: counts, no statistics', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 5, 10, 10, 0));
  const h = await startTestApp(t, { clock });
  const acme = await h.createOrg('acme');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  await startFlow(h, { id: 'plain', message: { channel: 'outbox', template: { text: 'hi' } } });
  const empty = (await h.admin('GET', '/admin/v1/orgs/acme/flows/plain/results')).json();
  t.match(empty, { goal: null, control: null, range: { from: null }, variants: [{ variant: null, entered: 0, sent: 0, converted: null, rate: null }], daily: [] });
  clock.advance(MINUTE);
  for (const email of ['ada@example.com', 'grace@example.com']) {
    await h.collect(customEvent(acme.production, { messageId: email, clientId: email, sentAt: clock.now(), traits: { email } }));
  }
  await runFlow(h, 'plain');
  const results = (await h.admin('GET', '/admin/v1/orgs/acme/flows/plain/results')).json();
  t.same(results.variants, [{ variant: null, holdout: false, control: true, entered: 2, sent: 2, converted: null, rate: null, rateInterval: null, lift: null, liftInterval: null, pValue: null }]);
  t.same(results.daily, [{ day: '2026-06-10', variant: null, entered: 2, sent: 2, converted: null }]);
});

t.test('the goal is checked: a stored event name, a window of 1 s to 90 days', async (t) => {
  const h = await startTestApp(t);
  await h.createOrg('acme');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  const create = (goal: unknown) =>
    h.admin('POST', '/admin/v1/orgs/acme/flows', { id: 'g', name: 'g', category: 'triggered', entry: 'when_contact_triggers_event', trigger: 'booking_completed', message: { channel: 'outbox', template: {} }, goal });
  for (const goal of [{ event: 'purchase', withinSeconds: 60 }, { event: 'custom_', withinSeconds: 60 }, { event: 'complete_transaction', withinSeconds: 0 }, { event: 'complete_transaction', withinSeconds: 7_776_001 }, { event: 'complete_transaction' }]) {
    const res = await create(goal);
    t.equal(res.statusCode, 422, JSON.stringify(goal));
    t.equal(res.json().code, 'invalid_flow');
  }
  t.equal((await create({ event: 'complete_transaction', withinSeconds: 7_776_000 })).statusCode, 201);
});
