/**
 * Collection under hostile input (issue 12): deeply nested JSON, bodies that are not objects, sentAt
 * values that cannot be epoch milliseconds, and clock skews too large to apply. None may answer 500,
 * and none may store an event with an implausible time.
 */
import t from 'tap';
import { storedBody } from '../../../src/events/collect/to-log-entry.js';
import { ManualClock } from '../../../src/core/context.js';
import { MAX_JSON_DEPTH } from '../../../src/http/json-body.js';
import { ADMIN_KEY, customEvent, startTestApp, type TestApp } from '../../helpers/app.js';

/** `[[…[]…]]`: `depth` arrays nested, as JSON text (2 bytes a level, so 6,000 levels fit in 32 KB). */
const nestedText = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);
/** An event whose free-form properties nest so that the whole body is `depth` levels deep. */
const deepEventText = (cred: { partnerId: string; partnerSecret: string }, depth: number): string => {
  // Body (1) → properties (2) → properties.properties (3) → the nested value from level 4 on.
  const event = customEvent(cred, { properties: { eventName: 'deep', properties: { n: '__N__' } } });
  return JSON.stringify(event).replace('"__N__"', nestedText(depth - 3));
};
const postText = (h: TestApp, url: string, payload: string, headers: Record<string, string> = {}) =>
  h.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...headers }, payload });

async function storedCounts(h: TestApp): Promise<{ events: number; quarantine: number }> {
  await h.compacted();
  const [row] = await h.db().all<{ events: bigint; quarantine: bigint }>(
    'SELECT (SELECT count(*) FROM events) AS events, (SELECT count(*) FROM quarantine) AS quarantine',
  );
  return { events: Number(row!.events), quarantine: Number(row!.quarantine) };
}

t.test('JSON nested deeper than the limit is refused with 400 json_too_deep on every route, never 500', async (t) => {
  const h = await startTestApp(t);
  const cred = (await h.createOrg('acme')).production;

  const atLimit = await postText(h, '/http/v1/collect', deepEventText(cred, MAX_JSON_DEPTH));
  t.equal(atLimit.statusCode, 200, `an event ${MAX_JSON_DEPTH} levels deep is accepted`);
  const overLimit = await postText(h, '/http/v1/collect', deepEventText(cred, MAX_JSON_DEPTH + 1));
  t.equal(overLimit.statusCode, 400, `${MAX_JSON_DEPTH + 1} levels are refused`);
  t.match(overLimit.json(), { code: 'json_too_deep', status: 400, detail: new RegExp(`more than ${MAX_JSON_DEPTH} levels`) });
  t.match(overLimit.headers['content-type'], /^application\/problem\+json/);

  // The issue's case: ~6,000 levels overflowed JSON.stringify when storing the event (500).
  const issue = await postText(h, '/http/v1/collect', deepEventText(cred, 6_000));
  t.equal(issue.statusCode, 400, '6,000 levels: 400, not 500');
  t.equal(issue.json().code, 'json_too_deep');
  // As deep as the 32 KB limit allows, made of arrays.
  const arrays = await postText(h, '/http/v1/collect', '['.repeat(16_000) + ']'.repeat(16_000));
  t.equal(arrays.json().code, 'json_too_deep', '16,000 nested arrays');

  const member = { clientId: 'c', sentAt: Date.now(), type: 'track', event: 'custom', messageId: 'deep-member' };
  const batchText = JSON.stringify({ ...cred, batch: [{ ...member, properties: { eventName: 'x', properties: { n: '__N__' } } }] })
    .replace('"__N__"', nestedText(6_000));
  const batch = await postText(h, '/http/v1/batch', batchText);
  t.equal(batch.statusCode, 400, 'a batch member nested 6,000 levels');
  t.equal(batch.json().code, 'json_too_deep');

  // Admin routes accept 10 MB bodies: a million levels.
  const admin = await postText(h, '/admin/v1/orgs', '{"slug":'.repeat(1_000_000) + '1' + '}'.repeat(1_000_000), {
    authorization: `Bearer ${ADMIN_KEY}`,
  });
  t.equal(admin.statusCode, 400, 'an admin body nested a million levels');
  t.equal(admin.json().code, 'json_too_deep');
  // Before authentication too: the depth is checked as the body is parsed.
  const unauthenticated = await postText(h, '/http/v1/collect', nestedText(100));
  t.equal(unauthenticated.json().code, 'json_too_deep', 'refused before anything else is looked at');

  t.same(await storedCounts(h), { events: 1, quarantine: 0 }, 'only the event at the limit is stored; the refused ones are not');
  t.equal((await h.collect(customEvent(cred))).statusCode, 200, 'the service still answers');
});

t.test('storedBody cannot overflow the stack, whatever it is given', async (t) => {
  let deep: Record<string, unknown> = { n: 1 };
  for (let i = 0; i < 100_000; i++) deep = { n: deep };
  t.throws(() => storedBody({ clientId: 'c', properties: deep }, 'm'), { name: 'AppError', code: 'json_too_deep' }, 'json_too_deep, not a RangeError');
  t.equal(storedBody({ clientId: 'c', partnerSecret: 's' }, 'm'), '{"clientId":"c","messageId":"m"}');
});

t.test('a body that is not a JSON object: 400 invalid_request saying what the body must be, not 401', async (t) => {
  const h = await startTestApp(t);
  const cred = (await h.createOrg('acme')).production;
  const { partnerId: _p, partnerSecret: _s, ...member } = customEvent(cred);

  const bare = await h.batch([member, member]);
  t.equal(bare.statusCode, 400, 'a batch sent as a bare array');
  t.equal(bare.json().code, 'invalid_request');
  t.match(bare.json().detail, /must be a JSON object with partnerId, partnerSecret and batch.*got an array/);

  for (const [name, body] of [['an array', [customEvent(cred)]], ['a string', 'event'], ['a number', 42], ['null', null], ['a boolean', true]] as const) {
    const res = await h.collect(body);
    t.equal(res.statusCode, 400, `collect: ${name}`);
    t.equal(res.json().code, 'invalid_request', `collect: ${name} is invalid_request`);
    t.match(res.json().detail, new RegExp(`must be a JSON object with partnerId, partnerSecret.*got ${name}`), `collect: ${name} is named`);
    t.equal((await h.batch(body)).json().code, 'invalid_request', `batch: ${name}`);
  }
  t.equal((await h.collect({ clientId: 'x' })).statusCode, 401, 'an object without credentials is still 401');
  t.same(await storedCounts(h), { events: 0, quarantine: 0 }, 'nothing stored');
});

t.test('sentAt in seconds is refused with a reason that says milliseconds; the year-2083 event is not stored', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  const h = await startTestApp(t, { clock });
  const cred = (await h.createOrg('acme')).production;
  const seconds = Math.floor(clock.now() / 1000);

  const debug = await h.collect(customEvent(cred, { sentAt: seconds, context: { debug: true } }));
  t.equal(debug.statusCode, 412);
  t.same(debug.json().errors, [
    { path: '/sentAt', message: 'must be epoch milliseconds, at least 946684800000 (2000-01-01); a value in seconds is too small' },
  ]);
  // The issue's case: seconds with a timestamp made an event time in the 2080s.
  const withTimestamp = await h.collect(
    customEvent(cred, { messageId: 'y2083', sentAt: seconds, timestamp: new Date(clock.now() - 5_000).toISOString() }),
  );
  t.equal(withTimestamp.statusCode, 412, 'refused');
  const batch = await h.batch({ ...cred, context: { debug: true }, batch: [{ clientId: 'c', sentAt: seconds, type: 'identify', traits: { email: 'a@example.com' } }] });
  t.equal(batch.statusCode, 412, 'in a batch too');
  t.match(batch.json().errors, [{ path: '/batch/0/sentAt', message: /epoch milliseconds/ }]);
  const micros = await h.collect(customEvent(cred, { sentAt: clock.now() * 1000, context: { debug: true } }));
  t.match(micros.json().errors, [{ path: '/sentAt', message: /^must be epoch milliseconds, at most 4102444800000/ }], 'microseconds too');

  t.same(await storedCounts(h), { events: 0, quarantine: 4 }, 'no event stored; each kept in quarantine');
  const [q] = await h.db().all<{ errors: string }>("SELECT errors FROM quarantine WHERE raw->>'messageId' = 'y2083'");
  t.match(JSON.parse(q!.errors), [{ path: '/sentAt', message: /milliseconds/ }], 'the quarantine row says why');
});

t.test('a clock skew over 24 h is recorded and not applied; a smaller one is corrected as before', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  const h = await startTestApp(t, { clock });
  const cred = (await h.createOrg('acme')).production;
  const day = 24 * 3600 * 1000;
  const event = (messageId: string, skew: number, timestamp?: number) =>
    customEvent(cred, {
      messageId,
      sentAt: clock.now() + skew,
      ...(timestamp === undefined ? {} : { timestamp: new Date(timestamp).toISOString() }),
    });
  // A client clock 30 years ahead, with a timestamp by the same clock: the event time stays receivedAt.
  const far = 30 * 365 * day;
  for (const res of [
    await h.collect(event('far-ahead', far, clock.now() + far - 10_000)),
    await h.collect(event('far-behind', -3 * day, clock.now() - 3 * day - 10_000)),
    await h.collect(event('far-no-ts', 2 * day)),
    await h.collect(event('hour-ahead', 3600_000, clock.now() + 3600_000 - 10_000)),
    await h.collect(event('day-exactly', day, clock.now() + day - 10_000)),
  ]) t.equal(res.statusCode, 200);
  await h.compacted();
  const rows = await h.db().all<{ message_id: string; received_at: Date; event_time: Date; clock_skew_ms: bigint | null }>(
    'SELECT message_id, received_at, event_time, clock_skew_ms FROM events ORDER BY message_id',
  );
  const byId = Object.fromEntries(rows.map((r) => [r.message_id, r]));
  const received = new Date(clock.now()).toISOString();
  t.equal(byId['far-ahead']!.event_time.toISOString(), received, '30 years ahead: event time is receivedAt');
  t.equal(Number(byId['far-ahead']!.clock_skew_ms), far, 'and the skew is recorded');
  t.equal(byId['far-behind']!.event_time.toISOString(), received, '3 days behind: event time is receivedAt');
  t.equal(Number(byId['far-behind']!.clock_skew_ms), -3 * day);
  t.equal(Number(byId['far-no-ts']!.clock_skew_ms), 2 * day, 'recorded without a timestamp too');
  t.equal(byId['hour-ahead']!.event_time.toISOString(), '2026-06-01T11:59:50.000Z', 'one hour: corrected');
  t.equal(byId['hour-ahead']!.clock_skew_ms, null, 'and nothing recorded');
  t.equal(byId['day-exactly']!.event_time.toISOString(), '2026-06-01T11:59:50.000Z', '24 h exactly is still corrected');
  t.equal(byId['day-exactly']!.clock_skew_ms, null);
});
