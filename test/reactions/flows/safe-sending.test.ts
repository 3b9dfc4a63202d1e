/**
 * Safe sending (issue 24): history never messages anyone (event time vs arrival, backfills), and a run
 * request says what it does. Real app, real storage, the outbox channel.
 */
import t from 'tap';
import { book, ADMIN_KEY, startTestApp, type TestApp, STORAGE_PROCESS } from '../../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../../helpers/flows.js';

const OUTBOX = { channel: 'outbox', template: { text: 'hi {{ contact.email_address }}' } };
const DAY_MS = 86_400_000;

async function acme(t: Parameters<typeof startTestApp>[0]) {
  const h = await startTestApp(t, { config: STORAGE_PROCESS });
  const cred = (await h.createOrg('acme')).production;
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  return { h, cred };
}

async function decisions(h: TestApp, flow: string, identity?: string) {
  const query = identity ? `?identity=${encodeURIComponent(identity)}` : '';
  const res = await h.admin('GET', `/admin/v1/orgs/acme/flows/${flow}/decisions${query}`);
  t.equal(res.statusCode, 200);
  return res.json().decisions as Array<{ eventId: string; outcome: string; reason: string | null }>;
}

t.test('an event that happened long before it arrived is decided too_old, never sent', async (t) => {
  const { h, cred } = await acme(t);
  await startFlow(h, { id: 'f1', message: OUTBOX });
  const sentAt = Date.now();
  // A replay of a 30-day-old event, sent after go-live: it arrives now, it happened a month ago.
  t.equal((await book(h, cred, 'old@example.com', 'replayed', { sentAt, timestamp: new Date(sentAt - 30 * DAY_MS).toISOString() })).statusCode, 200);
  // Two hours ago: within the default day.
  t.equal((await book(h, cred, 'recent@example.com', 'recent', { sentAt, timestamp: new Date(sentAt - 2 * 3_600_000).toISOString() })).statusCode, 200);
  const run = await runFlow(h, 'f1');
  const byEvent = Object.fromEntries(run.decisions.map((d) => [d.eventId, d.outcome]));
  t.same(byEvent, { replayed: 'too_old', recent: 'sent' });
  const [old] = await decisions(h, 'f1', 'email:old@example.com');
  t.match(old, { eventId: 'replayed', outcome: 'too_old', reason: /over maxEventAgeSeconds 86400/ });
  const sends = (await h.admin('GET', '/admin/v1/orgs/acme/flows/f1/sends')).json().sends as Array<{ eventId: string }>;
  t.same(sends.map((s) => s.eventId), ['recent'], 'only the recent event was sent');
  // The history is still there for SQL: the event is stored with its own time.
  const preview = await h.admin('POST', '/admin/v1/orgs/acme/triggers/x/preview', {
    sql: `SELECT identity, identity_type, ts, event_type, event_id, event_raw, event_time FROM event_triggers
           WHERE event_id = 'replayed' AND ts > {cursor_start_time} AND ts <= {cursor_end_time}`,
  });
  t.equal(preview.statusCode, 200, preview.body);
  t.equal(preview.json().rows.length, 1, 'stored, selectable');
});

t.test('maxEventAgeSeconds is the flow\'s own; a trigger selecting arrival time cannot make history new', async (t) => {
  const { h, cred } = await acme(t);
  // The trigger re-labels arrival as the event time: the decision reads the stored event, not the row.
  await putQuery(h, 'triggers', 'relabelled', BOOKING_TRIGGER.replace('event_raw\n', 'event_raw, ts AS event_time\n'));
  await startFlow(h, { id: 'hour', trigger: 'relabelled', maxEventAgeSeconds: 3600, message: OUTBOX });
  const sentAt = Date.now();
  await book(h, cred, 'a@example.com', 'two-hours', { sentAt, timestamp: new Date(sentAt - 2 * 3_600_000).toISOString() });
  await book(h, cred, 'b@example.com', 'ten-minutes', { sentAt, timestamp: new Date(sentAt - 600_000).toISOString() });
  const run = await runFlow(h, 'hour');
  t.same(Object.fromEntries(run.decisions.map((d) => [d.eventId, d.outcome])), { 'two-hours': 'too_old', 'ten-minutes': 'sent' });
  for (const bad of [0, -1, 1.5, '3600', 31_536_001]) {
    const res = await h.admin('PUT', '/admin/v1/orgs/acme/flows/hour', { id: 'hour', name: 'n', category: 'triggered', entry: 'when_contact_triggers_event', trigger: 'relabelled', maxEventAgeSeconds: bad, message: OUTBOX });
    t.equal(res.statusCode, 422, `maxEventAgeSeconds ${JSON.stringify(bad)} refused`);
    t.match(res.json().errors, [{ path: '/maxEventAgeSeconds' }]);
  }
});

t.test('context.backfill events are stored and counted in profiles, and decided backfill', async (t) => {
  const { h, cred } = await acme(t);
  await startFlow(h, { id: 'f1', message: OUTBOX });
  t.equal((await book(h, cred, 'hist@example.com', 'imported', { context: { backfill: true } })).statusCode, 200);
  t.equal((await book(h, cred, 'live@example.com', 'live', { context: { backfill: false } })).statusCode, 200);
  const run = await runFlow(h, 'f1');
  t.same(Object.fromEntries(run.decisions.map((d) => [d.eventId, d.outcome])), { imported: 'backfill', live: 'sent' });
  const contact = await h.admin('GET', '/admin/v1/orgs/acme/contacts?identity=email:hist@example.com');
  t.equal(contact.statusCode, 200, 'a contact known from a backfill alone has a profile');
  t.match(contact.json().contact, { email_address: 'hist@example.com', first_seen_at: String });
  const events = (await h.admin('GET', '/admin/v1/orgs/acme/events/samples?env=production')).json().events as Array<{ messageId: string }>;
  t.ok(events.some((e) => e.messageId === 'imported'), 'the backfilled event is stored');
  const bad = await book(h, cred, 'hist@example.com', 'bad-flag', { context: { backfill: 'yes' } });
  t.equal(bad.statusCode, 412, 'backfill must be a boolean');
});

t.test('POST …/run refuses members it does not know, and runs with none', async (t) => {
  const { h, cred } = await acme(t);
  await startFlow(h, { id: 'f1', message: OUTBOX });
  await book(h, cred, 'ada@example.com', 'e1');
  await h.compacted();
  const run = (payload: string) =>
    h.app.inject({ method: 'POST', url: '/admin/v1/orgs/acme/flows/f1/run', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }, payload });
  for (const [payload, member] of <Array<[string, string]>>[['{"dryRun":true}', 'dryRun'], ['{"limit":1}', 'limit'], ['{"constructor":1}', 'constructor'], ['{"dryRun":false,"x":{"y":[1]}}', 'dryRun']]) {
    const res = await run(payload);
    t.equal(res.statusCode, 400, payload);
    t.equal(res.json().code, 'invalid_request');
    t.match(res.json().errors, [{ path: `/${member}`, message: 'is not an allowed member' }], payload);
  }
  t.match((await run('{"__proto__":{"x":1}}')).json(), { status: 400, code: 'invalid_json' }, 'a prototype key is refused by the parser');
  t.equal((await h.admin('POST', '/admin/v1/orgs/acme/flows/f1/run', [])).statusCode, 400, 'an array is not a run request');
  const sends = (await h.admin('GET', '/admin/v1/orgs/acme/flows/f1/sends')).json().sends;
  t.same(sends, [], 'a refused run sent nothing');
  const ran = await run('{}');
  t.equal(ran.statusCode, 200);
  t.match(ran.json(), { rows: 1, outcomes: { sent: 1 } });
  t.equal((await h.admin('POST', '/admin/v1/orgs/acme/flows/f1/run')).statusCode, 200, 'no body at all is a run');
});

t.test('the org cap holds across flows and concurrent runs; transactional flows are neither capped nor counted', async (t) => {
  const { h, cred } = await acme(t);
  const patched = await h.admin('PATCH', '/admin/v1/orgs/acme', { frequencyCaps: [{ maxSends: 1, withinSeconds: 86_400 }] });
  t.equal(patched.statusCode, 200);
  t.same(patched.json().org.frequencyCaps, [{ maxSends: 1, withinSeconds: 86_400 }]);
  for (const id of ['f1', 'f2']) await startFlow(h, { id, scheduleSeconds: 3600, realTime: false, message: OUTBOX });
  await startFlow(h, { id: 'tx', scheduleSeconds: 3600, realTime: false, transactional: true, message: OUTBOX });
  for (let i = 0; i < 5; i++) await book(h, cred, `c${i}@example.com`, `first-${i}`);
  await book(h, cred, 'c0@example.com', 'second-0');
  await h.compacted();
  // Both marketing flows run at once, through the API: each contact gets one message from one of them.
  const runs = await Promise.all(['f1', 'f2', 'tx'].map((id) => h.admin('POST', `/admin/v1/orgs/acme/flows/${id}/run`)));
  t.same(runs.map((r) => r.statusCode), [200, 200, 200]);
  const [f1, f2, tx] = runs.map((r) => r.json().outcomes as Record<string, number>);
  t.equal((f1!.sent ?? 0) + (f2!.sent ?? 0), 5, 'one marketing send per contact');
  t.equal((f1!.frequency_capped ?? 0) + (f2!.frequency_capped ?? 0), 7, 'every other entry capped');
  t.same(tx, { sent: 6 }, 'the transactional flow sends every event and is not capped');
  const capped = (await decisions(h, 'f2', 'email:c0@example.com')).concat(await decisions(h, 'f1', 'email:c0@example.com')).filter((d) => d.outcome === 'frequency_capped');
  t.ok(capped.length >= 1);
  t.match(capped[0]!.reason, /frequencyCaps: 1 any-channel sends within 86400 s reached/);
  const metrics = await h.metrics();
  t.match(metrics, /audience_flow_decisions_total\{outcome="frequency_capped"\} 7/);
});

t.test('a channel cap caps that channel only; a flow cap counts that flow only', async (t) => {
  const { h, cred } = await acme(t);
  await h.admin('PATCH', '/admin/v1/orgs/acme', { frequencyCaps: [{ channel: 'webhook', maxSends: 1, withinSeconds: 3600 }] });
  await startFlow(h, { id: 'out', scheduleSeconds: 3600, realTime: false, frequencyCap: { maxSends: 2, withinSeconds: 3600 }, message: OUTBOX });
  await startFlow(h, { id: 'other', scheduleSeconds: 3600, realTime: false, message: OUTBOX });
  for (let i = 0; i < 4; i++) await book(h, cred, 'ada@example.com', `e${i}`);
  await h.compacted();
  t.same((await runFlow(h, 'out')).decisions.map((d) => d.outcome), ['sent', 'sent', 'frequency_capped', 'frequency_capped']);
  t.same(
    (await runFlow(h, 'other')).decisions.map((d) => d.outcome),
    ['sent', 'sent', 'sent', 'sent'],
    "the webhook cap does not count or cap outbox sends, and the other flow's cap is not this one's",
  );
  const [capped] = (await decisions(h, 'out', 'email:ada@example.com')).filter((d) => d.outcome === 'frequency_capped');
  t.match(capped!.reason, /the flow's frequencyCap: 2 sends within 3600 s reached/);
});

t.test('caps refused when malformed, with the member named', async (t) => {
  const { h } = await acme(t);
  const bad: unknown[] = [
    [{ maxSends: 0, withinSeconds: 3600 }],
    [{ maxSends: 1, withinSeconds: 59 }],
    [{ maxSends: 1 }],
    [{ maxSends: 1, withinSeconds: 3600, channel: 'sms' }],
    [{ maxSends: 1, withinSeconds: 3600, extra: 1 }],
    { maxSends: 1, withinSeconds: 3600 },
    Array.from({ length: 21 }, () => ({ maxSends: 1, withinSeconds: 3600 })),
  ];
  for (const frequencyCaps of bad) {
    const res = await h.admin('PATCH', '/admin/v1/orgs/acme', { frequencyCaps });
    t.equal(res.statusCode, 400, JSON.stringify(frequencyCaps).slice(0, 80));
    t.match(JSON.stringify(res.json().errors), /frequencyCaps/);
  }
  const flow = await h.admin('POST', '/admin/v1/orgs/acme/flows', {
    id: 'f', name: 'n', category: 'triggered', entry: 'when_contact_triggers_event', trigger: 'booking_completed', message: OUTBOX, frequencyCap: { maxSends: 1, withinSeconds: 10 },
  });
  t.equal(flow.statusCode, 422);
  t.match(flow.json().errors, [{ path: '/frequencyCap/withinSeconds' }]);
  t.same((await h.admin('PATCH', '/admin/v1/orgs/acme', { frequencyCaps: [] })).json().org.frequencyCaps, [], '[] removes every cap');
});
