/**
 * Profiles read as JSON text (profile-json.ts) are exactly the profiles read as values: the same fields in
 * the same order with the same values, for generated contacts (custom fields of any JSON, names colliding
 * with default fields, text with control characters and the separator itself, any finite revenue). A value
 * JSON cannot hold (an infinite revenue) makes the read fall back to values, and the profile is still served.
 */
import { setFlagsFromString } from 'node:v8';
import fc from 'fast-check';
import t from 'tap';
import { listValue } from '@duckdb/node-api';
import { LocalDatabase } from '../../../src/db/database.js';
import { DESCRIBE_PROFILES, parseProfiles, profileJsonSql, profileOfRow, type ProfileChunk } from '../../../src/events/profiles/profile-json.js';
import { importContacts, startTestApp, type TestApp } from '../../helpers/app.js';

const CART = [{ productId: 'p1', variant: 'v', quantity: 1 }];
const SOURCE = 'profiles_for($1::VARCHAR, NULL::VARCHAR[], NULL::TIMESTAMPTZ)';

/** Both reads of every profile of the org; `json` undefined when the JSON read declined. */
async function bothReads(h: TestApp, org: string) {
  const db = h.db(org);
  const columns = await db.all<{ column_name: string; column_type: string }>(DESCRIBE_PROFILES);
  const sql = profileJsonSql(columns, SOURCE);
  if (sql === undefined) throw new Error(`a column of profiles_for has no exact JSON: ${JSON.stringify(columns)}`);
  const byEmail = (profiles: ReturnType<typeof profileOfRow>[]) =>
    Object.fromEntries(profiles.map((p) => [p.profile.email_address as string, { ...p, profile: JSON.stringify(Object.entries(p.profile)), frozen: Object.isFrozen(p.profile) }]));
  const json = parseProfiles(await db.all<ProfileChunk>(sql, [org]));
  const rows = (await db.all(`SELECT * FROM ${SOURCE}`, [org])).map(profileOfRow);
  return { json: json && byEmail(json), rows: byEmail(rows), count: rows.length };
}

const text = fc.string({ unit: fc.oneof(fc.constantFrom('\u001e', '\u001f', '\u0000', '"', '\\', '\n', 'é', '😀', '\u2028'), fc.string({ minLength: 1, maxLength: 1, unit: 'binary' })), maxLength: 40 });
const json: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, text, fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.boolean(), fc.array(tie('value'), { maxLength: 3 }), fc.dictionary(text, tie('value'), { maxKeys: 3 })),
})).value;
const fieldName = fc.oneof(fc.stringMatching(/^[a-z][a-z0-9_]{0,63}$/), fc.constantFrom('first_name', 'order_count', 'timezone', 'email_address_x', 'constructor', 'total_lifetime_value'));
const contact = fc.record({
  custom: fc.dictionary(fieldName, json, { maxKeys: 5 }),
  firstName: text,
  city: text,
  revenue: fc.double({ noNaN: true, min: 0, max: 1e15 }),
  purchases: fc.nat({ max: 2 }),
});

t.test('generated contacts: the JSON read gives exactly the profiles the value read gives', async (t) => {
  const h = await startTestApp(t);
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(contact, { minLength: 1, maxLength: 12 }), async (contacts) => {
      const org = `o${run++}`;
      const cred = (await h.createOrg(org)).production;
      const emails = contacts.map((_, i) => `c${i}@example.com`);
      // Imported custom columns; first_name is a contact column the import takes as text, so it is left out
      // (other default field names, order_count among them, are custom columns that profiles_for shadows).
      const lines = contacts.map((c, i) => JSON.stringify({ ...Object.fromEntries(Object.entries(c.custom).filter(([k]) => k !== 'first_name')), email_address: emails[i] }));
      await importContacts(h, 'application/x-ndjson', lines.join('\n'), org);
      const base = { partnerId: cred.partnerId, partnerSecret: cred.partnerSecret, clientId: 'c1', sentAt: Date.now() };
      for (const [i, c] of contacts.entries()) {
        await h.collect({ ...base, type: 'identify', traits: { email: emails[i], firstName: c.firstName, address: { city: c.city } }, context: { timezone: 'Europe/Lisbon' } });
        for (let p = 0; p < c.purchases; p++) {
          await h.collect({ ...base, type: 'track', event: 'complete_transaction', userId: `u${i}`, traits: { email: emails[i] }, properties: { transactionId: `t${i}-${p}`, revenue: c.revenue, cartItems: CART } });
        }
      }
      await h.compacted();
      const { json: read, rows, count } = await bothReads(h, org);
      if (count !== contacts.length) throw new Error(`${count} profiles for ${contacts.length} contacts`);
      if (read === undefined) throw new Error('the JSON read declined ordinary profiles');
      t.same(read, rows, `${contacts.length} contacts of ${org}`);
      const orders = contacts.map((_, i) => h.app.profiles.find(org, 'email', emails[i]!)?.order_count);
      if (orders.some((n, i) => n !== contacts[i]!.purchases)) throw new Error(`orders ${JSON.stringify(orders)}: a purchase was not taken`);
      return JSON.stringify(read) === JSON.stringify(rows);
    }),
    { numRuns: 15, endOnFailure: true },
  );
});

t.test('generated instants from year 0 to 9999: a packed timestamp is the text the value read gives', async (t) => {
  // The packed read writes a TIMESTAMPTZ without ICU (profile-json.ts): the same text at any instant, the
  // milliseconds cut as the value read's Date cuts them (toward zero, also before 1970).
  const db = await LocalDatabase.open(':memory:');
  t.teardown(() => db.close());
  const columns = [
    { column_name: 'email_address', column_type: 'VARCHAR' },
    { column_name: 'seen_at', column_type: 'TIMESTAMP WITH TIME ZONE' },
    { column_name: 'org', column_type: 'VARCHAR' },
    { column_name: 'custom_fields', column_type: 'VARCHAR' },
  ];
  const source = `(SELECT i::VARCHAR AS email_address, make_timestamptz(us) AS seen_at, 'acme' AS org, NULL::VARCHAR AS custom_fields
                     FROM unnest($1::BIGINT[]) WITH ORDINALITY AS u(us, i))`;
  const sql = profileJsonSql(columns, source)!;
  // 0000-01-01 to 9999-12-31, where toISOString writes four-digit years; the edges around 1970 among them.
  const instant = fc.oneof(fc.bigInt({ min: -62_167_219_200_000_000n, max: 253_402_300_799_999_999n }), fc.bigInt({ min: -2_000n, max: 2_000n }));
  await fc.assert(
    fc.asyncProperty(fc.array(instant, { minLength: 1, maxLength: 200 }), async (micros) => {
      const packed = parseProfiles(await db.all<ProfileChunk>(sql, [listValue(micros)]));
      const rows = (await db.all(`SELECT * FROM ${source} ORDER BY email_address::INTEGER`, [listValue(micros)])).map(profileOfRow);
      const byRow = new Map(rows.map((r) => [r.profile.email_address, r.profile.seen_at]));
      const wrong = (packed ?? []).filter((p) => p.profile.seen_at !== byRow.get(p.profile.email_address));
      if (packed?.length !== micros.length || wrong.length > 0) throw new Error(`packed ${JSON.stringify(wrong.slice(0, 3))} against ${JSON.stringify([...byRow].slice(0, 3))}`);
      return true;
    }),
    { numRuns: 100 },
  );
  t.pass('every generated instant');
});

t.test('a revenue JSON cannot hold: the value read answers, and the profile is served', async (t) => {
  const h = await startTestApp(t);
  const cred = (await h.createOrg('acme')).production;
  const base = { partnerId: cred.partnerId, partnerSecret: cred.partnerSecret, clientId: 'c1', sentAt: Date.now() };
  await h.collect({ ...base, type: 'identify', traits: { email: 'ada@example.com', firstName: 'Ada' } });
  // JSON has no Infinity, but a sum of two of its largest numbers is one.
  for (const id of ['t1', 't2']) {
    const res = await h.collect({ ...base, type: 'track', event: 'complete_transaction', userId: 'u1', traits: { email: 'ada@example.com' }, properties: { transactionId: id, revenue: 1e308, cartItems: CART } });
    t.equal(res.statusCode, 200, 'a purchase of 1e308 is taken');
  }
  await h.compacted();
  const { json: read, rows } = await bothReads(h, 'acme');
  t.match(JSON.parse(rows['ada@example.com']!.profile), [['email_address', 'ada@example.com']], 'the value read has it');
  const found = h.app.profiles.find('acme', 'email', 'ada@example.com');
  t.equal(found?.total_lifetime_value, Number.POSITIVE_INFINITY, 'the revenue summed to Infinity');
  t.equal(read, undefined, 'the JSON read declines a profile with an infinite revenue');
  t.equal(found?.first_name, 'Ada', 'and the index serves it');
});

t.test('profiles with custom fields keep fast properties (a lookup reads them on its first answer)', async (t) => {
  setFlagsFromString('--allow-natives-syntax');
  const hasFastProperties = new Function('o', 'return %HasFastProperties(o)') as (o: object) => boolean;
  const fields = { email_address: 'ada@example.com', first_name: 'Ada', last_name: null, user_id: null, address_city: null, address_state: null, address_country: null, campaigns_received: [], flow_variant_membership: [], total_lifetime_value: 0, total_lifetime_value_jde: '$0.00', last_purchase_date: null, order_count: 0, first_seen_at: null, last_seen_at: null, timezone: null };
  const customs = [{}, { plan: 'pro' }, { plan: 'pro', tier: 3, first_name: 'shadowed' }, Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`c${i}`, i]))];
  const rows = customs.map((custom) => JSON.stringify([fields, custom, 'acme']));
  const profiles = parseProfiles([{ n: rows.length, packed: rows.join('\u001e') }])!;
  t.equal(profiles.length, customs.length);
  for (const [i, { profile }] of profiles.entries()) t.ok(hasFastProperties(profile), `${Object.keys(customs[i]!).length} custom fields: fast properties`);
});

t.test('a column whose JSON is not its value (JSON, DATE, HUGEINT) leaves no JSON read', async (t) => {
  const h = await startTestApp(t);
  await h.createOrg('acme');
  const columns = await h.db('acme').all<{ column_name: string; column_type: string }>(DESCRIBE_PROFILES);
  t.type(profileJsonSql(columns, SOURCE), 'string', "profiles_for's own columns all have one");
  for (const type of ['JSON', 'DATE', 'HUGEINT', 'TIMESTAMP']) {
    t.equal(profileJsonSql([...columns, { column_name: 'extra', column_type: type }], SOURCE), undefined, `a ${type} column: the value read`);
  }
});
