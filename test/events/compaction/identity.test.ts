/** Identity rules of SPEC 4.5 across the 7-day windows, with a manual clock. */
import t, { type Test as Tap } from 'tap';
import { ManualClock } from '../../../src/core/context.js';
import { customEvent, startTestApp, waitFor, type TestApp } from '../../helpers/app.js';

const DAY = 24 * 3600 * 1000;

async function setup(t: Tap) {
  const clock = new ManualClock(Date.UTC(2026, 2, 1));
  const h = await startTestApp(t, { clock });
  const cred = (await h.createOrg('acme')).production;
  const track = (clientId: string, messageId: string, extra: Record<string, unknown> = {}) =>
    h.collect(customEvent(cred, { clientId, messageId, traits: {}, sentAt: clock.now(), ...extra }));
  const identify = (clientId: string, email: string, messageId: string) =>
    h.collect({ partnerId: cred.partnerId, partnerSecret: cred.partnerSecret, clientId, sentAt: clock.now(), type: 'identify', messageId, traits: { email } });
  return { clock, h, cred, track, identify };
}

function emailsOf(h: TestApp) {
  return h.db()
    .all<{ message_id: string; email: string | null }>("SELECT message_id, email FROM events WHERE event_type = 'track' ORDER BY message_id")
    .then((rows) => Object.fromEntries(rows.map((r) => [r.message_id, r.email])));
}

t.test('an identify maps its clientId to the e-mail for 7 days', async (t) => {
  const { clock, h, track, identify } = await setup(t);
  t.equal((await identify('c1', 'Grace@Example.COM', 'i1')).statusCode, 200);
  clock.advance(7 * DAY - 1);
  await track('c1', 'e-within');
  clock.advance(2);
  await track('c1', 'e-after');
  await h.compacted();
  const emails = await emailsOf(h);
  t.equal(emails['e-within'], 'grace@example.com', 'resolved within 7 days');
  t.notOk('e-after' in emails, 'after 7 days the event waits for a new identify');
  const pending = await h.db().all("SELECT message_id FROM pending_identity");
  t.same(pending, [{ message_id: 'e-after' }]);
});

t.test('the latest identify for a clientId wins', async (t) => {
  const { clock, h, track, identify } = await setup(t);
  await identify('c1', 'first@example.com', 'i1');
  clock.advance(1000);
  await identify('c1', 'second@example.com', 'i2');
  clock.advance(1000);
  await track('c1', 'e1');
  await h.compacted();
  t.equal((await emailsOf(h)).e1, 'second@example.com');
});

t.test('a pending event is released by an identify within 7 days of it', async (t) => {
  const { clock, h, track, identify } = await setup(t);
  await track('c2', 'p1');
  await h.compacted();
  t.same(await emailsOf(h), {}, 'held back while unidentified');
  clock.advance(6 * DAY);
  await identify('c2', 'late@example.com', 'i1');
  await h.compacted();
  t.equal((await emailsOf(h)).p1, 'late@example.com', 'released with the identify e-mail');
  t.same(await h.db().all('SELECT 1 FROM pending_identity'), []);
  const [row] = await h.db().all<{ visible_at: Date; received_at: Date }>(
    "SELECT visible_at, received_at FROM events WHERE message_id = 'p1'",
  );
  t.ok(row!.visible_at.getTime() > row!.received_at.getTime(), 'visible only from its release');
});

t.test('an event with no identity for 7 days is quarantined as identity_unresolved', async (t) => {
  const { clock, h, track, identify } = await setup(t);
  await track('c3', 'lost');
  await h.compacted();
  clock.advance(7 * DAY + 1);
  const events = await waitFor(async () => {
    const q = (await h.admin('GET', '/admin/v1/orgs/acme/quarantine')).json().events as Array<{ code: string; raw: { messageId: string } }>;
    return q.length > 0 ? q : undefined;
  });
  t.equal(events[0]!.code, 'identity_unresolved');
  t.equal(events[0]!.raw.messageId, 'lost');
  // An identify now is too late for it.
  await identify('c3', 'tooLate@example.com', 'i1');
  await h.compacted();
  t.same(await emailsOf(h), {});
});

t.test('requiresIdentity: false is stored without identity', async (t) => {
  const { h, track } = await setup(t);
  await track('anon', 'free', { properties: { eventName: 'page_ping', requiresIdentity: false, properties: { k: 1 } } });
  await h.compacted();
  const emails = await emailsOf(h);
  t.ok('free' in emails);
  t.equal(emails.free, null);
});

t.test('a batch of 1,200 identifies maps every clientId and releases their pending events (several statements)', async (t) => {
  const { clock, h, cred, track } = await setup(t);
  const clients = Array.from({ length: 1200 }, (_, i) => `bulk-${i}`);
  const send = (batch: object[]) => h.batch({ partnerId: cred.partnerId, partnerSecret: cred.partnerSecret, batch });
  const anonymous = clients.map((clientId, i) => {
    const event = customEvent(cred, { clientId, messageId: `p-${i}`, traits: {}, sentAt: clock.now() });
    const { partnerId: _id, partnerSecret: _secret, ...member } = event;
    return member;
  });
  t.equal((await send(anonymous)).statusCode, 200);
  await h.compacted();
  const [pending] = await h.db().all<{ n: bigint }>('SELECT count(*) AS n FROM pending_identity');
  t.equal(pending!.n, 1200n, 'held back while unidentified');

  clock.advance(1000);
  const identifies = clients.map((clientId, i) => ({
    clientId,
    sentAt: clock.now(),
    type: 'identify',
    messageId: `i-${i}`,
    traits: { email: `${clientId}@example.com` },
  }));
  t.equal((await send(identifies)).statusCode, 200);
  clock.advance(1000);
  await track('bulk-0', 'e-first');
  await track('bulk-1199', 'e-last');
  await h.compacted();
  const [mapped] = await h.db().all<{ n: bigint }>("SELECT count(*) AS n FROM identify_mappings WHERE client_id LIKE 'bulk-%'");
  t.equal(mapped!.n, 1200n);
  const emails = await emailsOf(h);
  t.equal(emails['e-first'], 'bulk-0@example.com');
  t.equal(emails['e-last'], 'bulk-1199@example.com');
  const released = clients.filter((clientId, i) => emails[`p-${i}`] === `${clientId}@example.com`);
  t.equal(released.length, 1200, 'every pending event released with its own identify e-mail');
  t.same(await h.db().all('SELECT 1 FROM pending_identity'), []);
});
