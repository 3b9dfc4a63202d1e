/**
 * Erasure is final (issue 37): after an erasure with suppress, no other path writes the address again —
 * CSV and NDJSON imports, events on every ingestion route (collect, batch, the Segment-compatible API;
 * identify, track, consent in traits), and flows of every source: triggered (marketing and transactional),
 * steps, a scheduled send and a release after quiet hours. Each source decides `suppressed`, and its
 * decision names the contact by its hash only. Imports and an identify race the erasure. Generated
 * addresses up to 254 characters in mixed case and 40-character org slugs; a manual clock.
 */
import fc from 'fast-check';
import t from 'tap';
import { ManualClock } from '../../src/core/context.js';
import { emailHash, normalizeEmail } from '../../src/core/domain.js';
import { customEvent, startTestApp, type TestApp } from '../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../helpers/flows.js';
import { addressArb, clientIdOf, copiesOf, freshOrg, importContacts, orgSlugArb, orgWithToken, requestErasure } from './erasure-probes.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const OUTBOX = { channel: 'outbox', template: { to: '{{ contact.email_address }}', text: 'hello' } };
/**
 * Bob's referral names the contact, `@` written ` at ` so that Bob's own event does not hold the address
 * (the scan would find it there, and it is Bob's data): the trigger and the segment spell it out again.
 */
const REFERRED = "replace(properties->>'$.r', ' at ', '@')";
const REFERRAL_TRIGGER = `SELECT ${REFERRED} AS identity, 'email' AS identity_type, ts, event_type, event_id, event_raw
FROM event_triggers WHERE event_type = 'custom_refer' AND ts > {cursor_start_time} AND ts <= {cursor_end_time}`;
const REFERRED_SEGMENT = `SELECT ${REFERRED} AS email FROM event_triggers WHERE event_type = 'custom_refer'`;
const TRIGGERED = ['marketing', 'receipts', 'steps'] as const;

t.test('after an erasure with suppress nothing writes the address again: imports, events, flows of every source', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 11, 1, 8, 0));
  const h = await startTestApp(t, { clock });
  // Scheduled sends start when the test ticks them, at the clock's time.
  await h.app.flowsRole!.scheduled.close();
  await fc.assert(
    fc.asyncProperty(orgSlugArb, addressArb, async (generated, address) => {
      const org = freshOrg(generated);
      const email = normalizeEmail(address);
      // Each case on a day of its own, from 08:00 UTC.
      const day = Math.floor(clock.now() / DAY) * DAY + DAY;
      clock.set(day + 8 * HOUR);
      const { cred, token } = await orgWithToken(h, org, { timeZone: 'UTC' });
      const collect = (body: Record<string, unknown>) => expectOk(h.collect(customEvent(cred, { clientId: clientIdOf(address), sentAt: clock.now(), ...body })));
      const identify = (messageId: string, traits: Record<string, unknown>, userId?: string) =>
        expectOk(h.collect({ partnerId: cred.partnerId, partnerSecret: cred.partnerSecret, clientId: clientIdOf(address), sentAt: clock.now(), type: 'identify', messageId, traits, ...(userId ? { userId } : {}) }));
      const referral = (messageId: string) =>
        collect({ messageId, clientId: 'bob', traits: { email: 'bob@example.com' }, properties: { eventName: 'refer', properties: { r: address.replace('@', ' at ') } } });
      await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER, org);
      await putQuery(h, 'triggers', 'referral', REFERRAL_TRIGGER, org);
      await putQuery(h, 'segments', 'referred', REFERRED_SEGMENT, org);
      // Quiet all day: a booking's message waits for the night to end.
      await startFlow(h, { id: 'quiet', message: OUTBOX, quietHours: { start: '00:00', end: '23:59', timeZone: 'UTC' } }, org);
      await startFlow(h, { id: 'marketing', trigger: 'referral', message: OUTBOX }, org);
      await startFlow(h, { id: 'receipts', trigger: 'referral', transactional: true, message: OUTBOX }, org);
      await startFlow(h, { id: 'steps', trigger: 'referral', steps: [{ message: OUTBOX }, { wait: { seconds: 3600 } }, { message: OUTBOX }] }, org);
      // Tomorrow 09:00 in each contact's zone: it starts at 09:00 in the first zone (19:00 UTC today), when
      // its members are stored with their due time (the contact's, UTC: 09:00 UTC tomorrow).
      await scheduledSend(h, org, day + DAY + 9 * HOUR);

      // The contact as it was: an identify, a booking waiting for quiet hours, a referral sent by every flow, an import, consent.
      await identify('id-1', { email: address, firstName: 'Ada' }, `u-${org}`);
      await collect({ messageId: 'book-1', traits: { email: address } });
      await referral('ref-1');
      t.same((await runFlow(h, 'quiet', org)).decisions.map((d) => d.outcome), ['deferred_quiet_hours']);
      for (const id of TRIGGERED) t.same((await runFlow(h, id, org)).decisions.map((d) => d.outcome), [id === 'steps' ? 'entered' : 'sent'], id);
      await h.app.flowsRole!.steps.pass(org);
      t.equal((await importContacts(h, org, 'csv', [{ email: address, first_name: 'Ada' }])).statusCode, 200);
      t.equal((await h.admin('PUT', `/admin/v1/orgs/${org}/contacts/consent`, { identity: `email:${address}`, topic: 'all', status: 'subscribed' })).statusCode, 200);
      await h.compacted();

      // The erasure, raced by an import and an identify.
      const [erasure] = await Promise.all([
        requestErasure(h, org, `email:${address}`, true),
        importContacts(h, org, 'ndjson', [{ email: address.toUpperCase(), first_name: 'Racing' }]),
        identify('id-race', { email: address.toLowerCase() }),
      ]);
      await erasure.done;

      // Everything that could write it back.
      for (const format of ['csv', 'ndjson'] as const) {
        const res = await importContacts(h, org, format, [{ email: address, first_name: 'Ada' }, { email: address.toUpperCase(), first_name: 'ADA' }, { email: 'carol@example.com', first_name: 'Carol' }]);
        t.equal(res.statusCode, 200, `${format} import answered`);
      }
      await identify('id-2', { email: address.toUpperCase(), firstName: 'Ada' }, `u-${org}`);
      await collect({ messageId: 'book-2', traits: { email: address, subscriptions: { all: 'subscribed' } } });
      await collect({ messageId: 'book-3', userId: `u-${org}`, traits: {} });
      const member = { clientId: clientIdOf(address), sentAt: clock.now(), type: 'track', event: 'product_view', properties: { productId: 'p1' }, traits: { email: address.toUpperCase() }, messageId: 'batch-1' };
      const batch = await h.batch({ partnerId: cred.partnerId, partnerSecret: cred.partnerSecret, batch: [member] });
      t.equal(batch.statusCode, 200, batch.body);
      const segment = await h.app.inject({ method: 'POST', url: '/v1/identify', headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${cred.writeKey}:`).toString('base64')}` }, payload: JSON.stringify({ userId: `u-${org}`, messageId: 'seg-1', traits: { email: address } }) });
      t.equal(segment.statusCode, 200, segment.body);
      await referral('ref-2');
      for (const id of TRIGGERED) t.same((await runFlow(h, id, org)).decisions.map((d) => d.outcome), ['suppressed'], `${id} decides suppressed`);
      await h.app.flowsRole!.steps.pass(org);
      clock.set(day + 19 * HOUR + 60_000);
      await h.app.flowsRole!.scheduled.sendDue();
      t.same(await copiesOf(h, org, address, token), [], 'no member row of the scheduled send holds it');
      const [occurrence] = (await h.admin('GET', `/admin/v1/orgs/${org}/flows/news/occurrences`)).json().occurrences as Array<{ members: number; outcomes: Record<string, number> }>;
      t.match(occurrence, { members: 1, outcomes: { suppressed: 1 } }, 'the scheduled send decides it suppressed at its start');
      clock.set(day + DAY);
      t.equal(await h.app.flowsRole!.deferred.release(org), 0, 'the message waiting for quiet hours to end was dropped with the contact');
      clock.set(day + DAY + 9 * HOUR + 60_000);
      await h.app.flowsRole!.scheduled.sendDue();
      await h.app.flowsRole!.dispatcher.idle();
      await h.compacted();

      const decisions = (await h.admin('GET', `/admin/v1/orgs/${org}/flows/marketing/decisions?identity=${encodeURIComponent(`email:${address}`)}`)).json().decisions as Array<Record<string, unknown>>;
      t.match(decisions, [{ outcome: 'suppressed', email: null, identity: emailHash(email), identityType: 'email-hash' }], 'found by its address, naming it by its hash');
      t.same(await copiesOf(h, org, address, token), [], `no copy of ${address}`);
    }),
    { numRuns: 4, endOnFailure: true },
  );
});

async function expectOk(answer: Promise<{ statusCode: number; body: string }>): Promise<void> {
  const res = await answer;
  if (res.statusCode !== 200) throw new Error(`collect: ${res.statusCode} ${res.body}`);
}

/** A scheduled flow sending to the segment `referred` once, at the local time `at` (as epoch ms in UTC) in each contact's zone. */
async function scheduledSend(h: TestApp, org: string, at: number): Promise<void> {
  const local = new Date(at).toISOString().slice(0, 16);
  const created = await h.admin('POST', `/admin/v1/orgs/${org}/flows`, { id: 'news', name: 'News', category: 'scheduled', audience: { segment: 'referred' }, schedule: { at: local, timeZone: 'contact' }, message: OUTBOX });
  if (created.statusCode !== 201) throw new Error(`scheduled flow: ${created.statusCode} ${created.body}`);
  const started = await h.admin('POST', `/admin/v1/orgs/${org}/flows/news/start`);
  if (started.statusCode !== 200) throw new Error(`start: ${started.statusCode} ${started.body}`);
}
