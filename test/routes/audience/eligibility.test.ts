/**
 * GET /audience/v2/contacts/eligibility (issue 41): for generated contacts in every situation a run tells
 * apart — plain (a variant or the holdout), in the excluded segment, entered before (re-entry once), capped
 * by another flow's send, unsubscribed from the flow's topic — the lookup's outcome and variant equal what
 * the run records once each contact triggers the flow, every contact; the lookups themselves record and
 * count nothing (asked twice each, nobody is capped by them). Only flows with exposeEligibility answer:
 * another flow, an archived one, another org's, or another org's token are the same 404.
 */
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { ManualClock } from '../../../src/core/context.js';
import { ADMIN_KEY, customEvent, startTestApp, type TestApp } from '../../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../../helpers/flows.js';

const T0 = Date.UTC(2026, 5, 10, 12);
const SITUATIONS = ['plain', 'vip', 'entered', 'capped', 'unsubscribed'] as const;
type Situation = (typeof SITUATIONS)[number];
const EXPECTED: Record<Situation, readonly string[]> = {
  plain: ['sent', 'holdout'],
  vip: ['excluded_by_segment'],
  entered: ['reentry_blocked'],
  // The holdout is drawn before the caps are counted.
  capped: ['frequency_capped', 'holdout'],
  unsubscribed: ['unsubscribed'],
};

async function token(h: TestApp, slug: string): Promise<string> {
  const res = await h.admin('POST', `/admin/v1/orgs/${slug}/tokens`, { createdBy: 'ops@example.com' });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json().token;
}

function eligibility(h: TestApp, bearer: string, identity: string, flow: string) {
  return h.app.inject({
    method: 'GET',
    url: `/audience/v2/contacts/eligibility?identity=${encodeURIComponent(identity)}&flow=${encodeURIComponent(flow)}`,
    headers: { authorization: `Bearer ${bearer}`, accept: 'application/json' },
  });
}

async function setup(t: Test) {
  const clock = new ManualClock(T0);
  const h = await startTestApp(t, { clock });
  const acme = await h.createOrg('acme', { audienceApi: true, rateLimit: 100_000, frequencyCaps: [{ maxSends: 1, withinSeconds: 86_400 }] });
  await h.createOrg('beta', { audienceApi: true, rateLimit: 100_000 });
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  await putQuery(h, 'triggers', 'signed_up', BOOKING_TRIGGER.replace('custom_booking_completed', 'custom_signed_up'));
  await putQuery(h, 'segments', 'vip', "SELECT email_address AS email FROM profiles WHERE first_name = 'VIP'");
  const topic = await h.admin('PUT', '/admin/v1/orgs/acme/topics/news', { name: 'News', default: 'subscribed' });
  if (topic.statusCode >= 300) throw new Error(topic.body);
  await startFlow(h, {
    id: 'exp',
    exposeEligibility: true,
    topic: 'news',
    reentry: 'once',
    segmentFilter: { segment: 'vip', mode: 'exclude' },
    experiment: { variants: [{ label: 'A', weight: 45 }, { label: 'B', weight: 45 }, { label: 'Holdout', weight: 10, holdout: true }] },
    message: { channel: 'outbox', template: { text: 'hi {{ contact.first_name }}' } },
  });
  await startFlow(h, { id: 'other', trigger: 'signed_up', message: { channel: 'outbox', template: { text: 'welcome' } } });
  let n = 0;
  const send = async (email: string, eventName: string) => {
    const messageId = `m-${n++}`;
    const res = await h.collect(customEvent(acme.production, { messageId, clientId: `c-${email}`, sentAt: clock.now(), traits: { email }, properties: { eventName, properties: {} } }));
    if (res.statusCode !== 200) throw new Error(res.body);
    return messageId;
  };
  return { h, clock, send, acme: await token(h, 'acme'), beta: await token(h, 'beta') };
}

t.test('generated contacts: the lookup says what the run then records, outcome and variant, and records nothing', async (t) => {
  const { h, clock, send, acme } = await setup(t);
  // The check is 1,000 contacts (CONTACTS=1000: 1000/1000 here, ~2.5 min); the suite asks 300.
  const count = Number(process.env.CONTACTS ?? 300);
  const seed = Number(process.env.SEED ?? Date.now() % 2 ** 31);
  t.comment(`seed ${seed} (SEED=${seed} to repeat)`);
  const [situations] = fc.sample(fc.array(fc.constantFrom(...SITUATIONS), { minLength: count, maxLength: count }), { numRuns: 1, seed });
  const people = situations!.map((situation, i) => ({ email: `p${i}-${situation}@example.com`, situation }));
  const csv = people.map((p) => `${p.email},${p.situation === 'vip' ? 'VIP' : 'Pat'}`).join('\n');
  const imported = await h.app.inject({ method: 'POST', url: '/admin/v1/orgs/acme/contacts/import', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'text/csv' }, payload: `email_address,first_name\n${csv}\n` });
  t.equal(imported.statusCode, 200, imported.body);
  for (const p of people.filter((p) => p.situation === 'unsubscribed')) {
    const res = await h.admin('PUT', '/admin/v1/orgs/acme/contacts/consent', { identity: `email:${p.email}`, topic: 'news', status: 'unsubscribed' });
    if (res.statusCode !== 200) throw new Error(res.body);
  }
  clock.advance(60_000);
  for (const p of people.filter((p) => p.situation === 'entered')) await send(p.email, 'booking_completed');
  for (const p of people.filter((p) => p.situation === 'capped')) await send(p.email, 'signed_up');
  clock.advance(60_000);
  await runFlow(h, 'exp');
  await runFlow(h, 'other');
  clock.advance(60_000);

  const recorded = async () => (await h.db().all<{ n: bigint }>("SELECT count(*) AS n FROM flow_decisions"))[0]!.n;
  const sends = async () => (await h.db().all<{ n: bigint }>('SELECT count(*) AS n FROM flow_sends'))[0]!.n;
  const before = { decisions: await recorded(), sends: await sends() };
  const answered = new Map<string, { eligible: boolean; outcome: string; variant: string | null }>();
  // Asked twice (the first 50 again): the same answer, and no count moved.
  for (const round of [1, 2]) {
    for (const p of round === 1 ? people : people.slice(0, 50)) {
      const res = await eligibility(h, acme, `email:${p.email}`, 'exp');
      if (res.statusCode !== 200) throw new Error(`${p.email}: ${res.statusCode} ${res.body}`);
      const { eligible, outcome, variant, meta } = res.json();
      if (!EXPECTED[p.situation].includes(outcome)) throw new Error(`${p.email} (${p.situation}): ${outcome}`);
      if (eligible !== (outcome === 'sent')) throw new Error(`${p.email}: eligible ${eligible} with ${outcome}`);
      if (typeof meta?.computedAt !== 'string') throw new Error(`${p.email}: no meta`);
      const earlier = answered.get(p.email);
      if (round === 2 && JSON.stringify(earlier) !== JSON.stringify({ eligible, outcome, variant })) throw new Error(`${p.email}: asked again, answered differently`);
      answered.set(p.email, { eligible, outcome, variant });
    }
  }
  t.same({ decisions: await recorded(), sends: await sends() }, before, 'the lookups recorded no decision and no send');

  // Every contact now triggers the flow: the run records what the lookups said.
  const events = new Map<string, string>();
  for (const p of people) events.set(await send(p.email, 'booking_completed'), p.email);
  clock.advance(60_000);
  await runFlow(h, 'exp');
  const rows = await h.db().all<{ email: string; event_id: string; outcome: string; variant: string | null }>("SELECT email, event_id, outcome, variant FROM flow_decisions WHERE flow_id = 'exp'");
  let same = 0;
  const differ: string[] = [];
  for (const row of rows) {
    if (!events.has(row.event_id)) continue;
    const said = answered.get(row.email)!;
    if (said.outcome === row.outcome && said.variant === row.variant) same++;
    else differ.push(`${row.email}: said ${said.outcome}/${said.variant}, run ${row.outcome}/${row.variant}`);
  }
  t.same(differ, [], 'no contact decided otherwise');
  t.equal(same, people.length, `${same}/${people.length} decisions as the lookup said`);
  const seen = new Set([...answered.values()].map((a) => a.outcome));
  t.ok(['sent', 'holdout', 'excluded_by_segment', 'reentry_blocked', 'frequency_capped', 'unsubscribed'].every((o) => seen.has(o) || count < 100), `every outcome met: ${[...seen].join(', ')}`);
});

t.test('only flows with exposeEligibility, of the token\'s org: anything else is the same 404', async (t) => {
  const { h, acme, beta } = await setup(t);
  const res = await h.app.inject({ method: 'POST', url: '/admin/v1/orgs/acme/contacts/import', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'text/csv' }, payload: 'email_address,first_name\nada@example.com,Ada\n' });
  t.equal(res.statusCode, 200);
  const ok = await eligibility(h, acme, 'email:ada@example.com', 'exp');
  t.equal(ok.statusCode, 200, ok.body);
  t.match(ok.json(), { status: 'success', flow: 'exp', eligible: Boolean, outcome: /^(sent|holdout)$/, reason: null });

  const notFound = async (bearer: string, identity: string, flow: string, why: string) => {
    const r = await eligibility(h, bearer, identity, flow);
    t.equal(r.statusCode, 404, why);
    t.equal(r.json().code, 'flow_not_found', why);
    return r.json().detail as string;
  };
  const details = new Set([
    (await notFound(acme, 'email:ada@example.com', 'other', 'a flow without exposeEligibility')).replace('"other"', '"X"'),
    (await notFound(acme, 'email:ada@example.com', 'nope', 'an unknown flow')).replace('"nope"', '"X"'),
    (await notFound(beta, 'email:ada@example.com', 'exp', "another org's token")).replace('"exp"', '"X"'),
  ]);
  t.equal(details.size, 1, 'the same words each time: nothing says which flows exist');
  t.equal((await h.admin('DELETE', '/admin/v1/orgs/acme/flows/exp')).statusCode, 200);
  await notFound(acme, 'email:ada@example.com', 'exp', 'an archived flow');

  t.equal((await eligibility(h, acme, 'email:nobody@example.com', 'other')).json().code, 'flow_not_found', 'the flow is checked before the contact');
  t.equal((await eligibility(h, acme, 'fax:1', 'exp')).json().code, 'invalid_identity');
  const twice = await h.app.inject({ method: 'GET', url: '/audience/v2/contacts/eligibility?identity=email:ada@example.com&flow=a&flow=b', headers: { authorization: `Bearer ${acme}` } });
  t.equal(twice.json().code, 'invalid_request', 'one flow');
  t.equal((await h.app.inject({ method: 'GET', url: '/audience/v2/contacts/eligibility?identity=email:ada@example.com&flow=exp' })).statusCode, 401, 'a token is needed');
});
