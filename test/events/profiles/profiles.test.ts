/** Profiles: import, traits, purchases, materialized after each compaction batch (SPEC 6.1). */
import t from 'tap';
import { emailHash } from '../../../src/events/profiles/profile-index.js';
import { importContacts, startTestApp, type TestApp } from '../../helpers/app.js';

const find = (h: TestApp, type: 'email' | 'email-hash' | 'user_id', value: string) =>
  h.app.profiles.find('acme', type, value);

t.test('CSV import upserts by normalised e-mail, keeps extra columns, reports bad rows', async (t) => {
  const h = await startTestApp(t);
  await h.createOrg('acme', { currencySymbol: '€' });
  const csv = [
    'email_address,first_name,last_name,user_id,address_city,tier',
    ' Ada@Example.com ,Ada,Lovelace,u-1,London,gold',
    'not-an-email,X,Y,,,',
    ',No,Email,,,',
    'grace@example.com,Grace,Hopper,u-2,,silver',
  ].join('\n');
  const res = await importContacts(h, 'text/csv', csv);
  t.equal(res.statusCode, 200);
  t.equal(res.json().imported, 2);
  t.same(res.json().rejected.map((r: { line: number; code: string }) => [r.line, r.code]), [[3, 'invalid_email'], [4, 'missing_email']]);
  t.notMatch(JSON.stringify(res.json()), /not-an-email/, 'rejected e-mails are not echoed');

  const ada = find(h, 'email', 'ada@example.com')!;
  t.match(ada, { email_address: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace', user_id: 'u-1', address_city: 'London', tier: 'gold' });
  t.same(ada.campaigns_received, []);
  t.same(ada.flow_variant_membership, []);
  t.equal(ada.total_lifetime_value, 0);
  t.equal(ada.total_lifetime_value_jde, '€0.00');
  t.equal(ada.order_count, 0);
  t.equal(find(h, 'user_id', 'u-2')!.first_name, 'Grace');
  t.equal(find(h, 'email-hash', emailHash('grace@example.com'))!.email_address, 'grace@example.com');

  // Re-import: an empty cell keeps the stored value; a new value replaces it; custom columns merge.
  const again = await importContacts(h, 'application/x-ndjson', '{"email_address":"ada@example.com","first_name":"Augusta","plan":"pro"}\n{"oops"\n');
  t.equal(again.json().imported, 1);
  t.same(again.json().rejected, [{ line: 2, code: 'invalid_row', message: 'not valid JSON' }]);
  t.match(find(h, 'email', 'ada@example.com'), { first_name: 'Augusta', last_name: 'Lovelace', tier: 'gold', plan: 'pro' });

  // Imported custom columns become valid content fields.
  t.equal((await h.admin('PATCH', '/admin/v1/orgs/acme', { contentFields: ['email_address', 'tier'] })).statusCode, 200);
  t.equal((await importContacts(h, 'application/json', '{}')).statusCode, 415);
});

t.test('identify traits, purchases and activity reach the profile after compaction', async (t) => {
  const h = await startTestApp(t);
  const cred = (await h.createOrg('acme')).production;
  const base = { partnerId: cred.partnerId, partnerSecret: cred.partnerSecret, clientId: 'c1', sentAt: Date.now() };
  await h.collect({ ...base, type: 'identify', traits: { email: 'ada@example.com', firstName: 'Ada', address: { city: 'Porto', country: 'PT' } } });
  const purchase = (id: string, revenue: number, timestamp: string) =>
    h.collect({ ...base, type: 'track', event: 'complete_transaction', timestamp, sentAt: Date.now(),
      properties: { transactionId: id, revenue, cartItems: [{ productId: 'p', variant: 'v', quantity: 1 }] } });
  await purchase('t1', 100.255, '2026-03-01T10:00:00Z');
  await purchase('t2', 141.3, '2026-04-02T10:00:00Z');
  await h.compacted();
  const profile = find(h, 'email', 'ada@example.com')!;
  t.match(profile, { first_name: 'Ada', address_city: 'Porto', address_country: 'PT', order_count: 2, total_lifetime_value_jde: '$241.56', last_purchase_date: '2026-04-02' });
  t.equal(profile.total_lifetime_value, 241.56);
  t.ok(profile.first_seen_at && profile.last_seen_at);

  // Latest identify wins per field; fields it does not carry are kept.
  await h.collect({ ...base, type: 'identify', traits: { email: 'ada@example.com', firstName: 'Augusta' } });
  await h.compacted();
  t.match(find(h, 'email', 'ada@example.com'), { first_name: 'Augusta', address_city: 'Porto' });

});

t.test('staging events never shape profiles', async (t) => {
  const h = await startTestApp(t);
  const cred = (await h.createOrg('acme')).staging;
  await h.collect({ ...cred, clientId: 'c1', sentAt: Date.now(), type: 'identify', traits: { email: 'ada@example.com', firstName: 'Ada' } });
  await h.compacted();
  t.equal(find(h, 'email', 'ada@example.com'), undefined);
});

t.test('a currency change re-materializes the org', async (t) => {
  const h = await startTestApp(t);
  await h.createOrg('acme');
  await importContacts(h, 'text/csv', 'email_address\nada@example.com\n');
  t.equal(find(h, 'email', 'ada@example.com')!.total_lifetime_value_jde, '$0.00');
  await h.admin('PATCH', '/admin/v1/orgs/acme', { currencySymbol: '£' });
  t.equal(find(h, 'email', 'ada@example.com')!.total_lifetime_value_jde, '£0.00');
});

t.test('profiles are rebuilt from DuckDB on restart', async (t) => {
  const dataDir = t.testdir();
  const first = await startTestApp(t, { dataDir });
  await first.createOrg('acme');
  await importContacts(first, 'text/csv', 'email_address,first_name\nada@example.com,Ada\n');
  await first.close();
  const second = await startTestApp(t, { dataDir });
  t.equal(find(second, 'email', 'ada@example.com')!.first_name, 'Ada');
});
