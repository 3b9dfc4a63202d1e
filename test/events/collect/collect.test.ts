/** POST /http/v1/collect end to end on the embedded log and real DuckDB (SPEC 4.3, 4.4). */
import t from 'tap';
import { ManualClock } from '../../../src/core/context.js';
import { customEvent, startTestApp } from '../../helpers/app.js';

t.test('a valid event is acknowledged with its messageId and lands in DuckDB once', async (t) => {
  const h = await startTestApp(t);
  const cred = await h.createOrg('acme');
  const res = await h.collect(customEvent(cred.production, { messageId: 'm-1' }));
  t.equal(res.statusCode, 200);
  t.same(res.json(), { messageId: 'm-1' });
  t.ok(res.headers['request-id'], 'Request-Id header');
  await h.compacted();
  const rows = await h.db().all<{ message_id: string; email: string; event_name: string; environment: string; raw: string }>(
    'SELECT message_id, email, event_name, environment, raw FROM events',
  );
  t.equal(rows.length, 1);
  t.equal(rows[0]!.email, 'ada@example.com', 'e-mail normalised');
  t.equal(rows[0]!.event_name, 'custom_booking_completed');
  t.equal(rows[0]!.environment, 'production', 'the credential decides the environment');
  t.notMatch(rows[0]!.raw, /partnerSecret/, 'the secret is never stored');
});

t.test('messageId is assigned (UUIDv7) when absent', async (t) => {
  const h = await startTestApp(t);
  const cred = await h.createOrg('acme');
  const res = await h.collect(customEvent(cred.staging));
  t.equal(res.statusCode, 200);
  t.match(res.json().messageId, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});

t.test('a retry with the same messageId is answered 200 and stored once (24 h dedupe)', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 5, 1));
  const h = await startTestApp(t, { clock });
  const cred = await h.createOrg('acme');
  const event = customEvent(cred.production, { messageId: 'dup-1' });
  t.equal((await h.collect(event)).statusCode, 200);
  clock.advance(23 * 3600 * 1000);
  const again = await h.collect(event);
  t.equal(again.statusCode, 200);
  t.same(again.json(), { messageId: 'dup-1' });
  // The same messageId in the other environment is a different event.
  t.equal((await h.collect(customEvent(cred.staging, { messageId: 'dup-1' }))).statusCode, 200);
  await h.compacted();
  const rows = await h.db().all<{ environment: string }>("SELECT environment FROM events WHERE message_id = 'dup-1' ORDER BY 1");
  t.same(rows.map((r) => r.environment), ['production', 'staging']);
  // After 24 h the id may be reused.
  clock.advance(2 * 3600 * 1000);
  t.equal((await h.collect(event)).statusCode, 200);
  await h.compacted();
  const after = await h.db().all("SELECT 1 FROM events WHERE message_id = 'dup-1' AND environment = 'production'");
  t.equal(after.length, 2);
});

t.test('event time is corrected for client clock skew', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 5, 1, 12, 0, 0));
  const h = await startTestApp(t, { clock });
  const cred = await h.createOrg('acme');
  // The client's clock runs 1 h fast: it sent at 13:00 (its time) an event that happened 10 s earlier.
  const sentAt = Date.UTC(2026, 5, 1, 13, 0, 0);
  await h.collect(customEvent(cred.production, { messageId: 'skew', sentAt, timestamp: new Date(sentAt - 10_000).toISOString() }));
  await h.collect(customEvent(cred.production, { messageId: 'no-ts', sentAt }));
  await h.compacted();
  const rows = await h.db().all<{ message_id: string; received_at: Date; event_time: Date }>(
    'SELECT message_id, received_at, event_time FROM events ORDER BY message_id',
  );
  const byId = Object.fromEntries(rows.map((r) => [r.message_id, r]));
  t.equal(byId.skew!.event_time.toISOString(), '2026-06-01T11:59:50.000Z');
  t.equal(byId['no-ts']!.event_time.toISOString(), byId['no-ts']!.received_at.toISOString());
});

t.test('401: unknown partner and wrong secret get the same answer', async (t) => {
  const h = await startTestApp(t);
  const cred = await h.createOrg('acme');
  const unknown = await h.collect(customEvent({ partnerId: 'pk_nope', partnerSecret: cred.production.partnerSecret }));
  const wrong = await h.collect(customEvent({ partnerId: cred.production.partnerId, partnerSecret: 'ps_wrong' }));
  const missing = await h.collect({ clientId: 'x' });
  for (const res of [unknown, wrong, missing]) {
    t.equal(res.statusCode, 401);
    t.match(res.headers['content-type'], /^application\/problem\+json/);
  }
  const strip = (b: Record<string, unknown>) => ({ ...b, requestId: undefined });
  t.same(strip(unknown.json()), strip(wrong.json()), 'identical bodies');
  t.equal(unknown.json().code, 'invalid_credentials');
});

t.test('400 invalid JSON, 415 wrong content type, 413 over 32 KB', async (t) => {
  const h = await startTestApp(t);
  const cred = await h.createOrg('acme');
  const bad = await h.app.inject({ method: 'POST', url: '/http/v1/collect', headers: { 'content-type': 'application/json' }, payload: '{"a":' });
  t.equal(bad.statusCode, 400);
  t.equal(bad.json().code, 'invalid_json');
  t.equal(bad.json().status, 400);
  t.ok(bad.json().requestId);

  const text = await h.app.inject({ method: 'POST', url: '/http/v1/collect', headers: { 'content-type': 'text/plain' }, payload: JSON.stringify(customEvent(cred.production)) });
  t.equal(text.statusCode, 415);
  t.equal(text.json().code, 'unsupported_media_type');

  const big = customEvent(cred.production, { properties: { eventName: 'big', properties: { blob: 'x'.repeat(33 * 1024) } } });
  const large = await h.collect(big);
  t.equal(large.statusCode, 413);
  t.equal(large.json().code, 'payload_too_large');
});

t.test('412: the first reasons always, every one with context.debug; every rejected event is kept in quarantine', async (t) => {
  const h = await startTestApp(t);
  const cred = await h.createOrg('acme');
  const noDebug = await h.collect(customEvent(cred.production, { properties: { properties: {} }, sneaky: 1 }));
  t.equal(noDebug.statusCode, 412);
  t.equal(noDebug.json().code, 'schema_violation');
  const reasons = noDebug.json().errors as Array<{ path: string; message: string }>;
  t.ok(reasons.some((e) => e.path === '/sneaky') && reasons.some((e) => e.path === '/properties/eventName'), 'both reasons without debug');
  t.match(noDebug.json().detail, new RegExp(`quarantine: ${reasons[0]!.path} ${reasons[0]!.message}`), 'the first reason in the detail');
  t.match(noDebug.json().detail, /context\.debug/);
  // Many reasons: the first three without debug, all of them with it.
  const many = { sneaky1: 1, sneaky2: 2, sneaky3: 3, sneaky4: 4, sneaky5: 5 };
  const five = await h.collect(customEvent(cred.production, many));
  t.equal(five.json().errors.length, 3, 'three reasons without debug');
  t.match(five.json().detail, /5 reasons; the first 3 are in errors/);
  const allFive = await h.collect(customEvent(cred.production, { ...many, context: { debug: true } }));
  t.equal(allFive.json().errors.length, 5, 'every reason with debug');

  const debug = await h.collect(customEvent(cred.production, { context: { debug: true }, properties: { properties: {} } }));
  t.equal(debug.statusCode, 412);
  t.ok(debug.json().errors.some((e: { path: string }) => e.path === '/properties/eventName'), 'names the missing member');

  await h.compacted();
  const q = await h.admin('GET', '/admin/v1/orgs/acme/quarantine');
  t.equal(q.statusCode, 200);
  const events = q.json().events as Array<{ code: string; errors: Array<{ path: string }>; raw: Record<string, unknown>; environment: string }>;
  t.equal(events.length, 4);
  t.ok(events.every((e) => e.code === 'schema_violation' && e.environment === 'production'));
  t.ok(events.some((e) => e.errors.some((x) => x.path === '/sneaky')), 'unknown member named in quarantine');
  t.ok(events.every((e) => !('partnerSecret' in e.raw)), 'secret removed from raw');
  const stored = await h.db().all('SELECT 1 FROM events');
  t.equal(stored.length, 0, 'nothing rejected reached the events table');
});

t.test('quarantine of one org is invisible to another', async (t) => {
  const h = await startTestApp(t);
  const acme = await h.createOrg('acme');
  await h.createOrg('globex');
  await h.collect(customEvent(acme.production, { type: 'nope' }));
  await h.compacted();
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/quarantine')).json().events.length, 1);
  t.equal((await h.admin('GET', '/admin/v1/orgs/globex/quarantine')).json().events.length, 0);
});
