/**
 * A batch is stored as it arrived (issue 39, design 5; src/events/collect/batch-text.ts): its text, the
 * secret cut out, once for all members, each member's body made when the record is read. The properties:
 * every member's body as read is the one the collector would have stored member by member, for any
 * members, context, secret and formatting; the partner's secret is never in the record; a member over the
 * limit is refused exactly when its stored body is over it.
 */
import t, { type Test } from 'tap';
import fc from 'fast-check';
import Fastify from 'fastify';
import { KEEP_JSON_TEXT, registerJsonBodyParser } from '../../../src/http/json-body.js';
import { createValidateBatchStep } from '../../../src/events/collect/validate-batch-step.js';
import { decodeRecord, encodeRecord } from '../../../src/events/log/record-codec.js';
import { type Body, batchMemberEvent, storedBody } from '../../../src/events/collect/to-log-entry.js';
import type { Outcome } from '../../../src/events/collect/outcome.js';
import type { Accepted } from '../../../src/events/collect/accepted.js';

const who = { org: 'acme', environment: 'production' as const };
const LIMIT = 4096;
const VERSION_2 = 0x01;
const VERSION_3 = 0x03;

/** A Fastify app with the service's JSON parser, whose one route runs the batch step on what it parsed. */
async function batchApp(t: Test, limit: number) {
  const app = Fastify();
  registerJsonBodyParser(app);
  const step = createValidateBatchStep(limit);
  let outcome: Outcome<Accepted> | undefined;
  app.post('/batch', { bodyLimit: 1024 * 1024, config: KEEP_JSON_TEXT }, async (request) => {
    outcome = step({ body: request.body as Body, who, receivedAt: 1_767_225_600_000 });
    return {};
  });
  await app.ready();
  t.teardown(() => app.close());
  return async (text: string): Promise<Outcome<Accepted>> => {
    outcome = undefined;
    const res = await app.inject({ method: 'POST', url: '/batch', headers: { 'content-type': 'application/json' }, payload: text });
    if (res.statusCode !== 200 || !outcome) throw new Error(`the route answered ${res.statusCode}: ${res.body}`);
    return outcome;
  };
}

const anyText = fc.oneof(fc.string(), fc.string({ unit: 'grapheme', maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 60 }), fc.constant(''));
const anyJson = fc.jsonValue({ maxDepth: 3 });
const someText = fc.oneof(fc.string({ minLength: 1, maxLength: 60 }), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }));
const member = fc.record(
  {
    clientId: someText,
    sentAt: fc.integer({ min: 946_684_800_000, max: 4_102_444_800_000 }),
    type: fc.constant('track'),
    event: fc.constant('product_view'),
    properties: fc.record({ productId: someText, extra: anyJson, numbers: fc.array(fc.double(), { maxLength: 4 }) }),
    traits: fc.record({ email: fc.oneof(fc.emailAddress(), fc.constant(`${'a'.repeat(64)}@${'b'.repeat(185)}.com`)), name: anyText }, { requiredKeys: [] }),
    messageId: fc.oneof(fc.uuid(), someText),
    context: fc.dictionary(anyText, anyJson, { maxKeys: 3 }),
  },
  { requiredKeys: ['clientId', 'sentAt', 'type', 'event', 'properties'] },
);
/** Secrets as partners have them, and ones with characters JSON escapes. */
const secret = fc.oneof(fc.stringMatching(/^[A-Za-z0-9_-]{12,64}$/), fc.string({ minLength: 12, maxLength: 40 }), fc.string({ unit: 'binary', minLength: 12, maxLength: 20 }));
const envelope = fc.record(
  {
    partnerId: fc.stringMatching(/^p_[a-z0-9]{4,20}$/),
    partnerSecret: secret,
    context: fc.dictionary(anyText, anyJson, { maxKeys: 4 }),
    batch: fc.array(member, { minLength: 1, maxLength: 8 }),
  },
  { requiredKeys: ['partnerId', 'partnerSecret', 'batch'] },
  // The parser refuses these keys before any step sees the body (http/json-body.ts, proto poisoning).
).filter((body) => !/"(__proto__|constructor)"/.test(JSON.stringify(body)));
/** The same body written as clients do: compact, indented, with spaces after colons. */
const layout = fc.constantFrom<(body: Body) => string>(
  (body) => JSON.stringify(body),
  (body) => JSON.stringify(body, null, 2),
  (body) => JSON.stringify(body).replaceAll('":', '": '),
);

/** What the collector stores member by member: the reference every read body must equal. */
function expectedBodies(body: Body, messageIds: string[]): string[] {
  return (body.batch as Body[]).map((m, i) => storedBody(batchMemberEvent(body, m), messageIds[i]!));
}

t.test('every member reads back as the collector would store it, and the secret is never in the record', async (t) => {
  const post = await batchApp(t, 1024 * 1024);
  let asArrived = 0;
  await fc.assert(
    fc.asyncProperty(envelope, layout, async (generated, write) => {
      const text = write(generated);
      // What was sent (the spaced layout may touch a string's text too).
      const body = JSON.parse(text) as Body;
      const outcome = await post(text);
      if (outcome.kind !== 'ok') throw new Error(`refused: ${JSON.stringify(outcome)}`);
      const { entries, answer } = outcome.value;
      const record = encodeRecord(entries);
      const decoded = decodeRecord(record);
      t.same(decoded.map((e) => e.body), expectedBodies(body, (answer as { messageIds: string[] }).messageIds));
      t.same(decoded.map((e) => e.facts), entries.map((e) => e.facts));
      // The secret as any JSON text would hold it (its raw bytes, NULs say, are in any Avro record).
      t.notOk(Buffer.from(record).includes(Buffer.from(JSON.stringify(body.partnerSecret).slice(1, -1))), 'no secret in the record');
      // A compact text without escapes, with a partner's usual secret that no other value holds, is stored as it arrived.
      const plain = /^[A-Za-z0-9_-]+$/.test(body.partnerSecret as string) && !text.includes('\\u') && !text.includes('": ') && text.split(body.partnerSecret as string).length === 2;
      if (plain) t.equal(record[0], VERSION_3, 'stored as it arrived');
      if (record[0] === VERSION_3) asArrived++;
    }),
    { numRuns: 300 },
  );
  t.ok(asArrived > 20, `batches were stored as they arrived (${asArrived} of 300)`);
});

t.test('a batch whose secret could be written another way is stored member by member', async (t) => {
  const post = await batchApp(t, 1024 * 1024);
  const secret = 'sk_0123456789abcdef';
  const members = [{ clientId: 'c1', sentAt: 1_767_225_600_000, type: 'track', event: 'product_view', properties: { productId: 'p' }, messageId: 'm-1' }];
  const plain = JSON.stringify({ partnerId: 'p_1', partnerSecret: secret, batch: members });
  const cases: Array<[string, string]> = [
    ['the key escaped', plain.replace('"partnerSecret"', '"partner\\u0053ecret"')],
    ['the secret escaped', plain.replace(secret, `sk\\u005f${secret.slice(3)}`)],
    ['an escape anywhere', plain.replace('"p"', '"\\u0070"')],
    ['the key twice', plain.replace('{', `{"partnerSecret":"other-${secret}",`)],
    ['the secret in a member too', plain.replace('"p"', `"${secret}"`)],
    ['a space before the value', plain.replace('"partnerSecret":', '"partnerSecret": ')],
    ['a writeKey', plain.replace('{', '{"writeKey":"wk_1",')],
  ];
  for (const [name, text] of cases) {
    const outcome = await post(text);
    t.equal(outcome.kind, 'ok', name);
    if (outcome.kind !== 'ok') continue;
    const record = encodeRecord(outcome.value.entries);
    t.equal(record[0], VERSION_2, `${name}: member by member`);
    const [entry] = decodeRecord(record);
    t.notMatch(entry!.body, /partnerSecret|writeKey/, `${name}: no credential in the body`);
  }
  const record = encodeRecord(((await post(plain)) as { value: Accepted }).value.entries);
  t.equal(record[0], VERSION_3, 'the plain batch is stored as it arrived');
  t.notOk(Buffer.from(record).includes(secret));
});

t.test('a member is refused exactly when its stored body is over the limit', async (t) => {
  const post = await batchApp(t, LIMIT);
  const near = fc.record({
    pad: fc.integer({ min: LIMIT - 400, max: LIMIT + 50 }),
    fill: fc.constantFrom('x', 'é', '😀', '"', '\u0001'),
    numbers: fc.array(fc.constantFrom(1e20, -1e-7, 0.1, 123456789.123), { maxLength: 40 }),
  });
  let refused = 0;
  await fc.assert(
    fc.asyncProperty(near, async ({ pad, fill, numbers }) => {
      const m = { clientId: 'c1', sentAt: 1_767_225_600_000, type: 'track', event: 'product_view', properties: { productId: fill.repeat(Math.floor(pad / 6)), numbers }, messageId: 'm-1' };
      const body = { partnerId: 'p_1', partnerSecret: 'sk_0123456789abcdef', batch: [m, { ...m, messageId: 'm-2', properties: { productId: 'p' } }] };
      const over = storedBody(batchMemberEvent(body, m), 'm-1').length > LIMIT;
      const outcome = await post(JSON.stringify(body));
      t.equal(outcome.kind === 'stop', over, `stored ${storedBody(batchMemberEvent(body, m), 'm-1').length} characters`);
      if (over) refused++;
    }),
    { numRuns: 200 },
  );
  t.ok(refused > 0 && refused < 200, `both sides of the limit were tried (${refused} refused)`);
});

t.test('a batch with prototype keys is refused by the parser before its text is kept or its step runs', async (t) => {
  const app = Fastify();
  registerJsonBodyParser(app);
  let ran = 0;
  app.post('/batch', { config: KEEP_JSON_TEXT }, async () => (ran++, {}));
  await app.ready();
  t.teardown(() => app.close());
  const member = '{"clientId":"c1","sentAt":1767225600000,"type":"track","event":"product_view","properties":{"productId":"p"}}';
  const poisoned = [
    `{"partnerId":"p_1","partnerSecret":"sk_0123456789abcdef","batch":[${member.replace('{"clientId"', '{"__proto__":{"x":1},"clientId"')}]}`,
    `{"partnerId":"p_1","partnerSecret":"sk_0123456789abcdef","batch":[${member.replace('{"clientId"', '{"constructor":{"prototype":{"x":1}},"clientId"')}]}`,
    `{"__proto__":{"partnerSecret":"x"},"partnerId":"p_1","partnerSecret":"sk_0123456789abcdef","batch":[${member}]}`,
  ];
  for (const payload of poisoned) {
    const res = await app.inject({ method: 'POST', url: '/batch', headers: { 'content-type': 'application/json' }, payload });
    t.equal(res.statusCode, 400, payload.slice(0, 80));
  }
  t.equal(ran, 0, 'the route never ran');
  t.equal(({} as Record<string, unknown>).x, undefined, 'no prototype was touched');
});
