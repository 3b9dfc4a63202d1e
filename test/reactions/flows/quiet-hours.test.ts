/**
 * Quiet hours (issue 24): the window arithmetic across changes of clocks (fast-check over zones with DST,
 * half-hour and 45-minute offsets), and deferral end to end: an entry decided inside the contact's quiet
 * hours is recorded deferred_quiet_hours and sent once they end, checked again then against consent,
 * suppression and caps. A manual clock; real app, real storage, the outbox channel.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { ManualClock } from '../../../src/core/context.js';
import { inQuietHours, localMinuteOfDay, quietHoursEnd, quietHoursProblem, quietUntilAt } from '../../../src/core/quiet-hours.js';
import { customEvent, startTestApp, type TestApp } from '../../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../../helpers/flows.js';

const MINUTE = 60_000;
const ZONES = ['UTC', 'Europe/Lisbon', 'Europe/London', 'America/New_York', 'America/Sao_Paulo', 'Australia/Lord_Howe', 'Asia/Kolkata', 'Pacific/Chatham', 'America/St_Johns', 'Asia/Tokyo'];
const hhmm = fc.integer({ min: 0, max: 1439 }).map((m) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`);
const window = fc.tuple(hhmm, hhmm).filter(([a, b]) => a !== b).map(([start, end]) => ({ start, end }));
// 2020–2030, so every DST change of those years is crossed somewhere.
const instant = fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) });

t.test('the window ends at the first minute outside it, every minute before it inside (fast-check, DST zones)', async (t) => {
  fc.assert(
    fc.property(instant, window, fc.constantFrom(...ZONES), (at, quiet, zone) => {
      const end = quietHoursEnd(at, quiet, zone);
      if (!inQuietHours(at, quiet, zone)) return end === at;
      if (!(end > at) || end % MINUTE !== 0 || end - at > 26 * 60 * MINUTE) return false;
      if (inQuietHours(end, quiet, zone)) return false;
      for (let m = Math.floor(at / MINUTE) * MINUTE + MINUTE; m < end; m += MINUTE) if (!inQuietHours(m, quiet, zone)) return false;
      return true;
    }),
    { numRuns: 400 },
  );
  t.pass('400 windows, instants and zones');
});

t.test('across the nights clocks change: shorter, longer, and an end that does not exist that night', async (t) => {
  const quiet = { start: '01:00', end: '02:30' };
  // 2026-03-08, New York: 02:00 EST becomes 03:00 EDT, so 02:30 never happens; the window ends at 03:00 local.
  const springNight = Date.UTC(2026, 2, 8, 6, 15); // 01:15 EST
  const spring = quietHoursEnd(springNight, quiet, 'America/New_York');
  t.equal(new Date(spring).toISOString(), '2026-03-08T07:00:00.000Z', '03:00 EDT: the first minute after the end');
  t.equal(localMinuteOfDay(spring, 'America/New_York'), 180);
  // 2026-11-01, New York: 02:00 EDT becomes 01:00 EST, the hour repeats; an entry at the second 01:15 waits until 02:30 EST.
  const fallSecond = Date.UTC(2026, 10, 1, 6, 15); // 01:15 EST, after the change
  t.equal(new Date(quietHoursEnd(fallSecond, quiet, 'America/New_York')).toISOString(), '2026-11-01T07:30:00.000Z');
  // 21:00–08:00 across London's change of 2026-03-29: one hour shorter than the night before.
  const night = { start: '21:00', end: '08:00' };
  const before = quietHoursEnd(Date.UTC(2026, 2, 27, 21, 0), night, 'Europe/London') - Date.UTC(2026, 2, 27, 21, 0);
  const across = quietHoursEnd(Date.UTC(2026, 2, 28, 21, 0), night, 'Europe/London') - Date.UTC(2026, 2, 28, 21, 0);
  t.equal(before / MINUTE, 11 * 60);
  t.equal(across / MINUTE, 10 * 60, 'the night clocks go forward is an hour shorter');
});

t.test('settings are checked: HH:MM, not equal, a known zone', async (t) => {
  t.equal(quietHoursProblem({ start: '21:00', end: '08:00', timeZone: 'contact' }), null);
  t.equal(quietHoursProblem({ start: '21:00', end: '08:00', timeZone: 'Asia/Kathmandu' }), null);
  t.match(quietHoursProblem({ start: '08:00', end: '08:00', timeZone: 'UTC' }), /same time/);
  t.match(quietHoursProblem({ start: '24:00', end: '08:00', timeZone: 'UTC' }), /HH:MM/);
  t.match(quietHoursProblem({ start: '21:00', end: '08:00', timeZone: 'Mars/Olympus' }), /IANA/);
  t.match(quietHoursProblem({ start: '21:00', end: '08:00', timeZone: '../../etc/passwd' }), /IANA/);
  // An unknown contact zone falls back to the org's.
  const at = Date.UTC(2026, 5, 1, 23, 0);
  const until = quietUntilAt(at, { start: '22:00', end: '07:00', timeZone: 'contact' }, 'UTC', (email) => ({ a: 'Asia/Tokyo', b: 'Not/AZone' })[email]);
  t.equal(until('a'), null, 'Tokyo is at 08:00: outside');
  t.same(until('b'), { at: Date.UTC(2026, 5, 2, 7, 0), zone: 'UTC' }, 'an invalid zone: the org zone');
});

const OUTBOX = { channel: 'outbox', template: { text: 'hi {{ contact.email_address }}' } };

async function outboxIds(h: TestApp): Promise<string[]> {
  try {
    return readFileSync(join(h.dataDir, 'outbox', 'acme.jsonl'), 'utf8').trim().split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { sendId: string }).sendId);
  } catch {
    return [];
  }
}

t.test('entries inside quiet hours wait for their end, in each contact\'s zone, and are checked again then', async (t) => {
  // 2026-06-10 03:30 UTC: 23:30 in New York (quiet), 04:30 in Lisbon (quiet), 12:30 in Tokyo (not).
  const clock = new ManualClock(Date.UTC(2026, 5, 10, 3, 30));
  const h = await startTestApp(t, { clock });
  const create = await h.admin('POST', '/admin/v1/orgs', { slug: 'acme', name: 'acme', timeZone: 'Europe/Lisbon', quietHours: { start: '21:00', end: '08:00', timeZone: 'contact' } });
  t.equal(create.statusCode, 201, create.body);
  const cred = create.json().credentials.production as { partnerId: string; partnerSecret: string };
  t.match(create.json().org, { timeZone: 'Europe/Lisbon', quietHours: { start: '21:00', end: '08:00', timeZone: 'contact' } });
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  await startFlow(h, { id: 'f1', message: OUTBOX });
  const book = (email: string, id: string, context: Record<string, unknown> = {}) =>
    h.collect(customEvent(cred, { messageId: id, clientId: `c-${email}`, sentAt: clock.now(), traits: { email }, context }));
  t.equal((await book('ny@example.com', 'e-ny', { timezone: 'America/New_York' })).statusCode, 200);
  t.equal((await book('pt@example.com', 'e-pt')).statusCode, 200, 'no zone of its own: the org zone');
  t.equal((await book('jp@example.com', 'e-jp', { timezone: 'Asia/Tokyo' })).statusCode, 200);
  await h.compacted();
  t.equal(h.app.profiles.find('acme', 'email', 'ny@example.com')?.timezone, 'America/New_York', 'the profile has the zone from the event');

  const run = await runFlow(h, 'f1');
  t.same(Object.fromEntries(run.decisions.map((d) => [d.eventId, d.outcome])), { 'e-ny': 'deferred_quiet_hours', 'e-pt': 'deferred_quiet_hours', 'e-jp': 'sent' });
  const sends = async () => Object.fromEntries(((await h.admin('GET', '/admin/v1/orgs/acme/flows/f1/sends')).json().sends as Array<{ eventId: string; status: string; dueAt: string | null }>).map((s) => [s.eventId, s]));
  t.match(await sends(), { 'e-ny': { status: 'deferred', dueAt: '2026-06-10T12:00:00.000Z' }, 'e-pt': { status: 'deferred', dueAt: '2026-06-10T07:00:00.000Z' }, 'e-jp': { status: 'delivered' } });
  t.equal((await outboxIds(h)).length, 1, 'only Tokyo was sent');

  const deferred = h.app.flowsRole!.deferred;
  t.equal(await deferred.release('acme'), 0, 'nothing is due yet');
  clock.set(Date.UTC(2026, 5, 10, 7, 0)); // 08:00 in Lisbon
  t.equal(await deferred.release('acme'), 1, 'Lisbon is due');
  await h.app.flowsRole!.dispatcher.idle();
  t.equal((await sends())['e-pt']!.status, 'delivered');
  t.equal((await sends())['e-ny']!.status, 'deferred', 'New York is still at 03:00');

  // Meanwhile New York unsubscribes: at 08:00 there it is checked again and not sent.
  t.equal((await h.admin('PUT', '/admin/v1/orgs/acme/contacts/consent', { identity: 'email:ny@example.com', topic: 'all', status: 'unsubscribed' })).statusCode, 200);
  clock.set(Date.UTC(2026, 5, 10, 12, 0));
  t.equal(await deferred.release('acme'), 0);
  t.equal(await deferred.release('acme'), 0, 'a second release changes nothing');
  t.match(await sends(), { 'e-ny': { status: 'cancelled' } });
  const ny = (await h.admin('GET', '/admin/v1/orgs/acme/flows/f1/decisions?identity=email:ny@example.com')).json().decisions as Array<{ outcome: string; reason: string }>;
  t.same(ny.map((d) => d.outcome).sort(), ['deferred_quiet_hours', 'unsubscribed'], 'both decisions, explained');
  const ids = await outboxIds(h);
  t.equal(ids.length, 2, 'two messages in all');
  t.equal(new Set(ids).size, 2, 'each once');
  t.match(await h.metrics(), /audience_flow_decisions_total\{outcome="deferred_quiet_hours"\} 2/);
});

t.test('a flow\'s own quiet hours replace the org\'s; caps are checked again at release; bad settings refused', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 0, 15, 22, 0));
  const h = await startTestApp(t, { clock });
  const cred = (await h.createOrg('acme', { quietHours: { start: '09:00', end: '10:00', timeZone: 'UTC' }, frequencyCaps: [{ maxSends: 1, withinSeconds: 86_400 }] })).production;
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  await startFlow(h, { id: 'night', quietHours: { start: '21:00', end: '23:00', timeZone: 'UTC' }, message: OUTBOX });
  await h.collect(customEvent(cred, { messageId: 'n1', sentAt: clock.now(), traits: { email: 'ada@example.com' } }));
  const run = await runFlow(h, 'night');
  t.same(run.decisions.map((d) => d.outcome), ['deferred_quiet_hours'], "the flow's 21–23 window, not the org's 9–10");
  // Another flow without quiet hours of its own (the org's are not on now) sends to ada, using her daily cap.
  await startFlow(h, { id: 'day', message: OUTBOX });
  await h.collect(customEvent(cred, { messageId: 'n2', sentAt: clock.now(), traits: { email: 'ada@example.com' } }));
  clock.advance(MINUTE);
  const day = await runFlow(h, 'day');
  t.same(day.decisions.map((d) => d.outcome), ['frequency_capped'], 'the deferred send counts against the cap already');
  clock.set(Date.UTC(2026, 0, 15, 23, 0));
  t.equal(await h.app.flowsRole!.deferred.release('acme'), 1, 'released: nothing else was sent meanwhile');

  for (const [body, path] of <Array<[Record<string, unknown>, string]>>[
    [{ quietHours: { start: '21:00', end: '21:00', timeZone: 'UTC' } }, '/quietHours'],
    [{ quietHours: { start: '21:00', end: '08:00', timeZone: 'Nowhere/City' } }, '/quietHours'],
    [{ quietHours: { start: '9:00', end: '08:00', timeZone: 'UTC' } }, '/quietHours/start'],
    [{ quietHours: { start: '21:00', end: '08:00' } }, '/quietHours'],
    [{ timeZone: 'Not/Real' }, '/timeZone'],
  ]) {
    const res = await h.admin('PATCH', '/admin/v1/orgs/acme', body);
    t.equal(res.statusCode, 400, JSON.stringify(body));
    t.match(JSON.stringify(res.json().errors), path);
  }
  const flowRes = await h.admin('PUT', '/admin/v1/orgs/acme/flows/night', { id: 'night', name: 'n', category: 'triggered', entry: 'when_contact_triggers_event', trigger: 'booking_completed', quietHours: { start: '01:00', end: '01:00', timeZone: 'UTC' }, message: OUTBOX });
  t.equal(flowRes.statusCode, 422);
  t.match(flowRes.json().errors, [{ path: '/quietHours' }]);
  const removed = await h.admin('PATCH', '/admin/v1/orgs/acme', { quietHours: null });
  t.equal(removed.statusCode, 200);
  t.notOk('quietHours' in removed.json().org, 'null removes the org\'s quiet hours');
});
