/**
 * Keys partners and data engineers choose (event properties, traits, cart items, imported columns,
 * trigger columns) named like Object.prototype members never break an answer or pollute a prototype.
 */
import t from 'tap';
import { addPropertyKey, parsePropertyTypes, propertiesAnswer, propertyTypesJson } from '../../../src/events/compaction/property-types.js';
import { importContacts, customEvent, startTestApp } from '../../helpers/app.js';
import { putQuery } from '../../helpers/flows.js';

const HOSTILE_KEYS = ['constructor', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf', '__defineGetter__'];


t.test('events/types and samples answer 200 for properties, traits and cart items named like prototype members', async (t) => {
  const h = await startTestApp(t);
  const cred = await h.createOrg('acme');
  const hostile = Object.fromEntries(HOSTILE_KEYS.map((k, i) => [k, i % 2 ? i : `v${i}`]));
  const custom = await h.collect(customEvent(cred.production, { messageId: 'c1', properties: { eventName: 'booking_completed', properties: { ...hostile, nested: { constructor: 'n' } } } }));
  t.equal(custom.statusCode, 200, custom.body);
  const identify = await h.collect({ ...cred.production, clientId: 'c', sentAt: Date.now(), type: 'identify', messageId: 'i1', traits: { email: 'ada@example.com', ...hostile } });
  t.equal(identify.statusCode, 200, identify.body);
  const purchase = await h.collect({
    ...cred.production, clientId: 'c', sentAt: Date.now(), type: 'track', event: 'complete_transaction', messageId: 't1', traits: { email: 'ada@example.com' },
    properties: { transactionId: 'tx', revenue: 5, constructor: 'x', cartItems: [{ productId: 'p', variant: 'v', quantity: 1, price: 5, ...hostile }] },
  });
  t.equal(purchase.statusCode, 200, purchase.body);
  await h.compacted();

  const res = await h.admin('GET', '/admin/v1/orgs/acme/events/types');
  t.equal(res.statusCode, 200, res.body);
  const types = res.json().types as Array<{ eventType: string; properties: Record<string, string> }>;
  const props = (name: string) => types.find((x) => x.eventType === name)?.properties ?? {};
  t.same(props('custom_booking_completed'), {
    constructor: 'string', toString: 'integer', hasOwnProperty: 'string', valueOf: 'integer', isPrototypeOf: 'string', __defineGetter__: 'integer', nested: 'object',
  });
  t.match(props('identify'), { email: 'string', constructor: 'string', toString: 'integer', valueOf: 'integer' });
  t.match(props('complete_transaction'), { constructor: 'string', cartItems: 'array' });

  const samples = await h.admin('GET', '/admin/v1/orgs/acme/events/samples?eventType=identify');
  t.equal(samples.statusCode, 200);
  t.same(samples.json().events[0].raw.traits, { email: 'ada@example.com', ...hostile });
  t.equal(({} as Record<string, unknown>).polluted, undefined);

  const profile = (await h.admin('GET', '/admin/v1/orgs/acme/events/types')).statusCode;
  t.equal(profile, 200, 'the org keeps answering');
});

t.test('__proto__ as a property key in the log: events/types reports it as an own key and pollutes nothing', async (t) => {
  // The collector's JSON parser refuses "__proto__" keys, but the log is the source of truth: a record
  // another collector (or an older version) wrote is compacted and inspected all the same.
  const h = await startTestApp(t);
  const cred = await h.createOrg('acme');
  const body = JSON.stringify(customEvent(cred.production, { messageId: 'p1', partnerSecret: undefined })).replace(
    '"properties":{"city"',
    '"properties":{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}},"city"',
  );
  t.match(body, /"__proto__":\{"polluted"/);
  await h.app.committer!.commitEntries([
    { kind: 'event', org: 'acme', environment: 'production', messageId: 'p1', receivedAt: Date.now(), body, code: null, errors: null, facts: null },
  ]);
  await h.compacted();
  const res = await h.admin('GET', '/admin/v1/orgs/acme/events/types');
  t.equal(res.statusCode, 200, res.body);
  const props = res.json().types[0].properties;
  t.ok(Object.hasOwn(props, '__proto__'), '__proto__ listed');
  t.same(JSON.parse(res.body).types[0].properties, JSON.parse('{"__proto__":"object","city":"string","constructor":"object","nights":"integer"}'));
  const samples = await h.admin('GET', '/admin/v1/orgs/acme/events/samples');
  t.equal(samples.statusCode, 200);
  t.match(samples.body, /"__proto__":\{"polluted":"yes"\}/, 'the raw event is shown as sent');
  t.equal(({} as Record<string, unknown>).polluted, undefined);
});

t.test('property types: __proto__ becomes an own key, in the answer and stored; several types are joined', async (t) => {
  const types = parsePropertyTypes(null, false);
  for (const [key, type] of [['__proto__', 'OBJECT'], ['__proto__', 'NULL'], ['constructor', 'BIGINT'], ['toString', 'VARCHAR']] as const) addPropertyKey(types, { key, type });
  const props = propertiesAnswer(types);
  t.ok(Object.hasOwn(props, '__proto__'), '__proto__ is an own key');
  t.equal(Object.getPrototypeOf(props), Object.prototype, 'the prototype is untouched');
  t.equal(JSON.stringify(props), '{"__proto__":"object|null","constructor":"integer","toString":"string"}');
  const stored = propertyTypesJson(types);
  t.equal(stored, '{"__proto__":["object","null"],"constructor":["integer"],"toString":["string"]}');
  t.equal(JSON.stringify(propertiesAnswer(parsePropertyTypes(stored, false))), JSON.stringify(props), 'read back from the stored form');
  t.equal(({} as Record<string, unknown>).polluted, undefined);
});

t.test('imported columns named like prototype members: imported, served as own fields, null when absent', async (t) => {
  const h = await startTestApp(t);
  await h.createOrg('acme', { audienceApi: true });
  const csv = await importContacts(h, 'text/csv', 'email_address,first_name,constructor,valueof,tostring\nada@example.com,Ada,c1,v1,t1\ngrace@example.com,Grace,,,\n');
  t.equal(csv.statusCode, 200, csv.body);
  t.same(csv.json(), { imported: 2, rejected: [] });
  const ndjson = await importContacts(
    h,
    'application/x-ndjson',
    [
      '{"email_address":"linus@example.com","__proto__":{"polluted":"yes"}}',
      '{"email_address":"ken@example.com","toString":"x"}',
      '{"email_address":"dennis@example.com","constructor":{"prototype":{"polluted":"yes"}}}',
    ].join('\n'),
  );
  t.equal(ndjson.statusCode, 200, ndjson.body);
  const protoHeader = await importContacts(h, 'text/csv', 'email_address,__proto__\nalan@example.com,x\n');
  t.equal(protoHeader.statusCode, 200, protoHeader.body);
  t.match(protoHeader.json(), { imported: 0, rejected: [{ line: 2, code: 'invalid_field_name', message: /__proto__/ }] }, 'a __proto__ column is reported, not dropped');
  t.match(ndjson.json(), { imported: 1, rejected: [{ line: 1, code: 'invalid_field_name' }, { line: 2, code: 'invalid_field_name' }] });
  t.equal(({} as Record<string, unknown>).polluted, undefined);

  const patch = await h.admin('PATCH', '/admin/v1/orgs/acme', { contentFields: ['email_address', 'first_name', 'constructor', 'valueof', 'tostring'] });
  t.equal(patch.statusCode, 200, patch.body);
  const token = (await h.admin('POST', '/admin/v1/orgs/acme/tokens', { createdBy: 'ops@example.com' })).json().token as string;
  const lookup = (email: string, fields = '') =>
    h.app.inject({ url: `/audience/v2/contacts?identity=email:${email}${fields}`, headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });

  const ada = await lookup('ada@example.com');
  t.equal(ada.statusCode, 200, ada.body);
  t.same(ada.json().contact, { email_address: 'ada@example.com', first_name: 'Ada', constructor: 'c1', valueof: 'v1', tostring: 't1' });
  const grace = await lookup('grace@example.com');
  t.equal(grace.statusCode, 200, grace.body);
  t.same(grace.json().contact, { email_address: 'grace@example.com', first_name: 'Grace', constructor: null, valueof: null, tostring: null }, 'absent custom fields are null, not inherited');
  const dennis = await lookup('dennis@example.com', '&fields=constructor');
  t.same(dennis.json().contact, { constructor: { prototype: { polluted: 'yes' } } }, 'an object value is data');
  t.equal(({} as Record<string, unknown>).polluted, undefined);
});

t.test('trigger columns named like prototype members come back as columns; __proto__ is refused with a reason', async (t) => {
  const h = await startTestApp(t);
  const cred = await h.createOrg('acme');
  await h.collect(customEvent(cred.production, { messageId: 'b1', properties: { eventName: 'booking_completed', properties: { constructor: 'c', toString: 't' } } }));
  await h.compacted();
  const sql = `SELECT identity, identity_type, ts, event_type, event_id, event_raw,
      event_raw->>'$.properties.properties.constructor' AS "constructor",
      event_raw->>'$.properties.properties.toString' AS "toString",
      1 AS "hasOwnProperty", 2 AS "valueOf"
    FROM event_triggers WHERE event_type = 'custom_booking_completed' AND ts > {cursor_start_time} AND ts <= {cursor_end_time}`;
  await putQuery(h, 'triggers', 'booking_completed', sql);
  const preview = await h.admin('POST', '/admin/v1/orgs/acme/triggers/booking_completed/preview', {});
  t.equal(preview.statusCode, 200, preview.body);
  t.match(preview.json().rows, [{ event_id: 'b1', constructor: 'c', toString: 't', hasOwnProperty: 1, valueOf: 2 }]);

  for (const column of [`{'polluted': 'yes'} AS "__proto__"`, `'x' AS "__proto__"`]) {
    const refused = await h.admin('POST', '/admin/v1/orgs/acme/triggers/booking_completed/preview', {
      sql: `SELECT identity, identity_type, ts, event_type, event_id, event_raw, ${column} FROM event_triggers WHERE ts > {cursor_start_time} AND ts <= {cursor_end_time}`,
    });
    t.equal(refused.statusCode, 422, column);
    t.match(refused.json(), { code: 'invalid_trigger', reason: /__proto__/ }, column);
  }
  const segment = await h.admin('PUT', '/admin/v1/orgs/acme/segments/s1', { sql: `SELECT email, 1 AS "__proto__" FROM profiles` });
  t.equal(segment.statusCode, 422);
  t.equal(({} as Record<string, unknown>).polluted, undefined);
});
