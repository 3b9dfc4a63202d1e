/**
 * Retention deletes expired events, quarantine rows and decisions in small batches, only events already
 * folded into the profile aggregates, so a profile recomputed from the database afterwards has the same
 * lifetime value and order count; other orgs' rows and recent rows stay.
 */
import t from 'tap';
import { readConfig } from '../../src/core/config.js';
import { ManualClock } from '../../src/core/context.js';
import { sweepExpired } from '../../src/roles/retention.js';
import { customEvent, startTestApp } from '../helpers/app.js';

const DAY = 86_400_000;

t.test('expired events go, profile aggregates stay, recent rows and other orgs are untouched', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 0, 10));
  const h = await startTestApp(t, { clock, config: { retentionEventsDays: 30, retentionQuarantineDays: 7 } });
  const acme = (await h.createOrg('acme')).production;
  const base = { partnerId: acme.partnerId, partnerSecret: acme.partnerSecret, clientId: 'c1' };
  await h.collect({ ...base, sentAt: clock.now(), type: 'identify', traits: { email: 'ada@example.com', firstName: 'Ada' } });
  for (const [id, revenue] of [['t1', 100], ['t2', 41.5]] as const) {
    await h.collect({ ...base, sentAt: clock.now(), type: 'track', event: 'complete_transaction', properties: { transactionId: id, revenue, cartItems: [{ productId: 'p', variant: 'v', quantity: 1 }] } });
  }
  t.equal((await h.collect(customEvent(acme, { type: 'bogus' }))).statusCode, 412, 'one event to quarantine');
  await h.compacted();
  const before = h.app.profiles.find('acme', 'email', 'ada@example.com')!;
  t.match(before, { order_count: 2, total_lifetime_value: 141.5, first_name: 'Ada' });

  clock.advance(31 * DAY);
  const other = (await h.createOrg('other')).production;
  t.equal((await h.collect(customEvent(other))).statusCode, 200, "another org's recent event");
  t.equal((await h.collect(customEvent(acme, { traits: { email: 'bob@example.com' } }))).statusCode, 200, 'a recent acme event');
  await h.compacted();

  const types = async () =>
    Object.fromEntries(((await h.admin('GET', '/admin/v1/orgs/acme/events/types?env=production')).json().types as Array<{ eventType: string; count: number }>).map((x) => [x.eventType, x.count]));
  t.same(await types(), { complete_transaction: 2, custom_booking_completed: 1, identify: 1 }, 'event types before');
  await h.app.storageRole!.sweepRetention();
  t.same(await types(), { custom_booking_completed: 1 }, 'event types count the events kept; a type with none left is gone');
  const count = async (org: string, table: string) => Number((await h.db(org).all<{ n: bigint }>(`SELECT count(*) AS n FROM ${table}`))[0]!.n);
  t.equal(await count('acme', 'events'), 1, 'the three old acme events are deleted, the recent one kept');
  t.equal(await count('acme', 'quarantine'), 0, 'the quarantine row older than 7 days is deleted');
  t.equal(await count('other', 'events'), 1, "the other org's event is kept");

  await h.app.storageRole!.materializer.refreshOrg('acme');
  t.match(h.app.profiles.find('acme', 'email', 'ada@example.com'), { order_count: 2, total_lifetime_value: 141.5, first_name: 'Ada' }, 'recomputed from the database, the profile keeps its aggregates');

  const metrics = await h.metrics();
  t.match(metrics, /audience_retention_deleted_rows_total\{table="events"\} 3/);
  t.match(metrics, /audience_retention_deleted_rows_total\{table="quarantine"\} 1/);
});

t.test('events not yet folded into the aggregates are never deleted; big sweeps go in batches', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 0, 10));
  const h = await startTestApp(t, { clock });
  const acme = (await h.createOrg('acme')).production;
  for (let i = 0; i < 7; i++) await h.collect(customEvent(acme, { messageId: `m-${i}`, traits: { email: `c${i}@example.com` } }));
  await h.compacted();
  clock.advance(10_000); // the next commit folds what is visible
  await h.collect(customEvent(acme, { messageId: 'm-7' }));
  await h.compacted();
  const db = h.db('acme');
  const policy = { eventsDays: 1, eventsByEventTimeDays: 0, quarantineDays: 0, decisionsDays: 0, sendsContentDays: 0 };
  const folded = await db.all<{ through: Date }>('SELECT through FROM contact_activity_folded');
  await db.run('DELETE FROM contact_activity_folded');
  const unfolded = await sweepExpired(db, policy, clock.now() + 2 * DAY);
  t.same(unfolded.rows, { events: 0 }, 'nothing deleted while no event is folded');
  await db.run('INSERT INTO contact_activity_folded VALUES ($1::TIMESTAMPTZ)', [folded[0]!.through.toISOString()]);

  const swept = await sweepExpired(db, policy, clock.now() + 2 * DAY, 2);
  t.same(swept.rows, { events: 8 });
  t.equal(swept.statements, 5, 'eight rows, two per statement: four full statements and an empty one');
  const kept = await sweepExpired(db, { ...policy, eventsDays: 0, eventsByEventTimeDays: 0 }, clock.now() + 1000 * DAY);
  t.same(kept.rows, {}, '0 keeps forever');
  const all = await sweepExpired(db, { eventsDays: 1, eventsByEventTimeDays: 1, quarantineDays: 1, decisionsDays: 1, sendsContentDays: 1 }, clock.now() + 2 * DAY);
  t.same(all.rows, { events: 0, quarantine: 0, plan_violations: 0, flow_decisions: 0, flow_sends: 0 }, 'every sweep runs (nothing left to expire)');
});

t.test('retention settings: defaults and bad values', async (t) => {
  t.match(readConfig({}), { retentionEventsDays: 365, retentionEventsByEventTimeDays: 0, retentionQuarantineDays: 30, retentionDecisionsDays: 365, retentionSendsContentDays: 90 });
  for (const [name, value] of [['RETENTION_EVENTS_DAYS', '-1'], ['RETENTION_QUARANTINE_DAYS', '1.5'], ['RETENTION_DECISIONS_DAYS', '99999'], ['RETENTION_SENDS_CONTENT_DAYS', 'forever']]) {
    t.throws(() => readConfig({ [name!]: value! }), { message: new RegExp(`^${name}`) }, `${name}=${value}`);
  }
});

t.test("an org's own retention overrides the service's, member by member", async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 0, 10));
  const h = await startTestApp(t, { clock, config: { retentionEventsDays: 30, retentionQuarantineDays: 7 } });
  const created = await h.admin('POST', '/admin/v1/orgs', { slug: 'short', name: 'Short', retention: { eventsDays: 10, quarantineDays: 0 } });
  t.equal(created.statusCode, 201);
  t.same(created.json().org.retention, { eventsDays: 10, quarantineDays: 0 }, 'the org shows its retention');
  const short = created.json().credentials.production;
  const plain = (await h.createOrg('plain')).production;
  for (const cred of [short, plain]) {
    t.equal((await h.collect(customEvent(cred))).statusCode, 200);
    t.equal((await h.collect(customEvent(cred, { type: 'bogus' }))).statusCode, 412, 'one event to quarantine');
  }
  await h.compacted();
  clock.advance(11 * DAY);
  for (const cred of [short, plain]) await h.collect(customEvent(cred, { messageId: `recent-${cred.partnerId}`, traits: { email: 'new@example.com' } }));
  await h.compacted();

  const count = async (org: string, table: string) => Number((await h.db(org).all<{ n: bigint }>(`SELECT count(*) AS n FROM ${table}`))[0]!.n);
  await h.app.storageRole!.sweepRetention();
  t.equal(await count('short', 'events'), 1, "short: its 10 days apply, the 11-day-old event is deleted");
  t.equal(await count('short', 'quarantine'), 1, 'short: quarantineDays 0 keeps forever, over the service’s 7');
  t.equal(await count('plain', 'events'), 2, "plain: the service's 30 days apply");
  t.equal(await count('plain', 'quarantine'), 0, "plain: the service's 7 days of quarantine apply");

  t.equal((await h.admin('PATCH', '/admin/v1/orgs/plain', { retention: { eventsDays: 5 } })).statusCode, 200);
  await h.app.storageRole!.sweepRetention();
  t.equal(await count('plain', 'events'), 1, 'a retention set later applies at the next sweep');
  t.equal((await h.admin('PATCH', '/admin/v1/orgs/short', { retention: {} })).statusCode, 200);
  t.same((await h.admin('GET', '/admin/v1/orgs/short')).json().org.retention, {});
  await h.app.storageRole!.sweepRetention();
  t.equal(await count('short', 'quarantine'), 0, '{} drops the overrides: the service’s 7 days apply again');

  for (const retention of [{ eventsDays: -1 }, { eventsDays: 1.5 }, { quarantineDays: 36501 }, { eventsDays: '10' }, { forever: 1 }, JSON.parse('{"__proto__": {"eventsDays": 1}}') as object, [], null]) {
    const res = await h.admin('PATCH', '/admin/v1/orgs/plain', { retention });
    t.equal(res.statusCode, 400, `retention ${JSON.stringify(retention)}: 400`);
  }
});
