/**
 * When scheduled and recurring flows send (issue 26): local date-times to instants across changes of clocks
 * (fast-check over zones with DST, half-hour and 45-minute offsets, and Samoa's skipped day), the
 * occurrences a schedule has around a moment, and the values the schema cannot refuse.
 */
import fc from 'fast-check';
import t from 'tap';
import { instantIn, occurrencesBetween, scheduleProblem, wallClockAt, wallClockMs, zoneOf } from '../../../src/reactions/flows/rules/schedule-time.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const ZONES = ['UTC', 'Europe/Lisbon', 'America/New_York', 'America/Sao_Paulo', 'Australia/Lord_Howe', 'Asia/Kolkata', 'Pacific/Chatham', 'America/St_Johns', 'Asia/Kathmandu', 'Pacific/Apia', 'Pacific/Kiritimati', 'Etc/GMT+12'];
const iso = (ms: number) => new Date(ms).toISOString();

t.test('a local date-time is a real one or refused', async (t) => {
  t.equal(wallClockMs('2028-02-29T09:00'), Date.UTC(2028, 1, 29, 9, 0), 'a leap day');
  for (const bad of ['2026-02-29T09:00', '2026-02-30T09:00', '2026-13-01T09:00', '2026-00-10T09:00', '2026-12-00T09:00', '2026-12-01T24:00', '2026-12-01T23:60', '1969-12-31T23:59', '0099-01-01T00:00', '2026-12-01T09:00Z', '2026-12-01 09:00', '']) {
    t.equal(wallClockMs(bad), null, JSON.stringify(bad));
  }
});

t.test('instants: the local time itself, the end of a gap, the first of a repeated hour', async (t) => {
  t.equal(iso(instantIn(Date.UTC(2026, 6, 1, 9, 0), 'Europe/Lisbon')), '2026-07-01T08:00:00.000Z', 'summer time in Lisbon');
  t.equal(iso(instantIn(Date.UTC(2026, 11, 1, 9, 0), 'Asia/Kolkata')), '2026-12-01T03:30:00.000Z', 'a half-hour offset');
  t.equal(iso(instantIn(Date.UTC(2026, 11, 1, 9, 0), 'Asia/Kathmandu')), '2026-12-01T03:15:00.000Z', 'a 45-minute offset');
  // 2026-03-08, New York: 02:00 EST becomes 03:00 EDT, so 02:30 never happens: sent at 03:00 EDT.
  t.equal(iso(instantIn(Date.UTC(2026, 2, 8, 2, 30), 'America/New_York')), '2026-03-08T07:00:00.000Z');
  // 2026-11-01, New York: 01:30 happens at 05:30Z (EDT) and again at 06:30Z (EST): the first.
  t.equal(iso(instantIn(Date.UTC(2026, 10, 1, 1, 30), 'America/New_York')), '2026-11-01T05:30:00.000Z');
  // Lord Howe moves half an hour: 2026-10-04 02:00 becomes 02:30, so 02:15 is sent at 02:30 (+11:00).
  t.equal(iso(instantIn(Date.UTC(2026, 9, 4, 2, 15), 'Australia/Lord_Howe')), '2026-10-03T15:30:00.000Z');
  // Samoa skipped 2011-12-30 altogether: that day's 09:00 is sent when the 31st begins there.
  t.equal(iso(instantIn(Date.UTC(2011, 11, 30, 9, 0), 'Pacific/Apia')), '2011-12-30T10:00:00.000Z');
  t.equal(wallClockAt(Date.UTC(2011, 11, 30, 10, 0), 'Pacific/Apia'), Date.UTC(2011, 11, 31, 0, 0));
});

t.test('every instant is the first at which its zone reads that time or later (fast-check)', async (t) => {
  const wall = fc.integer({ min: Date.UTC(2020, 0, 1) / MINUTE, max: Date.UTC(2030, 0, 1) / MINUTE }).map((m) => m * MINUTE);
  fc.assert(
    fc.property(wall, fc.constantFrom(...ZONES), (w, zone) => {
      const at = instantIn(w, zone);
      // Reached at `at`, not a minute before; within the offsets any zone has (−12 h … +14 h, a gap's hours later at most).
      return wallClockAt(at, zone) >= w && wallClockAt(at - MINUTE, zone) < w && at >= w - 14 * HOUR && at <= w + 13 * HOUR;
    }),
    { numRuns: 2000 },
  );
  fc.assert(
    fc.property(fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) }), fc.constantFrom(...ZONES), (at, zone) => {
      // A time that exists: found exactly, at or before the instant it was read at (the first of a repeated hour).
      const w = wallClockAt(at, zone);
      const found = instantIn(w, zone);
      return wallClockAt(found, zone) === w && found <= at;
    }),
    { numRuns: 2000 },
  );
  t.pass('4,000 local times and instants in 12 zones');
});

t.test('occurrences: once, every day, every week, in the org zone or the contacts\'', async (t) => {
  const once = { at: '2026-12-01T09:00', timeZone: 'org' as const };
  const ny = 'America/New_York';
  t.same(occurrencesBetween(once, ny, 0, Date.UTC(2026, 11, 1, 13, 59)), [], 'not before 09:00 in New York');
  t.same(occurrencesBetween(once, ny, 0, Date.UTC(2026, 11, 1, 14, 0)), [{ id: '2026-12-01T09:00', wallMs: Date.UTC(2026, 11, 1, 9), opensAt: Date.UTC(2026, 11, 1, 14), closesAt: Date.UTC(2026, 11, 1, 14) }]);
  t.same(occurrencesBetween(once, ny, Date.UTC(2026, 11, 1, 14, 1), Date.UTC(2026, 11, 9)), [], 'closed before since');
  const contacts = occurrencesBetween({ ...once, timeZone: 'contact' }, ny, 0, Date.UTC(2026, 10, 30, 19, 0));
  t.same(contacts.map((o) => [iso(o.opensAt), iso(o.closesAt)]), [['2026-11-30T19:00:00.000Z', '2026-12-01T21:00:00.000Z']], "from the first zone's 09:00 to the last's");

  const daily = { every: 'day' as const, time: '09:00', timeZone: 'org' as const, startsOn: '2026-11-30', endsOn: '2026-12-02' };
  t.same(occurrencesBetween(daily, 'Europe/Lisbon', Date.UTC(2026, 10, 1), Date.UTC(2026, 11, 31)).map((o) => o.id), ['2026-11-30T09:00', '2026-12-01T09:00', '2026-12-02T09:00'], 'startsOn and endsOn included');
  const weekly = { every: 'week' as const, weekday: 'monday' as const, time: '18:30', timeZone: 'org' as const };
  const mondays = occurrencesBetween(weekly, 'Asia/Tokyo', Date.UTC(2026, 10, 1), Date.UTC(2026, 11, 31));
  t.equal(mondays.length, 9, "the Mondays of November and December 2026");
  t.ok(mondays.every((o) => new Date(o.wallMs).getUTCDay() === 1 && o.id.endsWith('T18:30')), 'Mondays at 18:30 local');
  t.ok(mondays.every((o, i) => i === 0 || o.wallMs - mondays[i - 1]!.wallMs === 7 * 24 * HOUR));
  // In the contacts' zones, a day's occurrence is open from 14 h before it begins in UTC to 12 h after: two at once.
  const both = occurrencesBetween({ every: 'day', time: '09:00', timeZone: 'contact' }, 'UTC', Date.UTC(2026, 11, 1, 20), Date.UTC(2026, 11, 1, 20));
  t.same(both.map((o) => o.id), ['2026-12-01T09:00', '2026-12-02T09:00']);
});

t.test('what the schema cannot refuse is refused with its path', async (t) => {
  const cases: Array<[Parameters<typeof scheduleProblem>, string | null]> = [
    [['scheduled', { at: '2026-12-01T09:00', timeZone: 'org' }], null],
    [['scheduled', { at: '2026-02-30T09:00', timeZone: 'org' }], '/schedule/at'],
    [['scheduled', { at: '2026-12-01T25:00', timeZone: 'contact' }], '/schedule/at'],
    [['scheduled', { every: 'day', time: '09:00', timeZone: 'org' }], '/schedule'],
    [['recurring', { at: '2026-12-01T09:00', timeZone: 'org' }], '/schedule'],
    [['recurring', { every: 'day', time: '24:00', timeZone: 'org' }], '/schedule/time'],
    [['recurring', { every: 'day', time: '09:00', timeZone: 'org', startsOn: '2026-02-31' }], '/schedule/startsOn'],
    [['recurring', { every: 'day', time: '09:00', timeZone: 'org', endsOn: '2026-13-01' }], '/schedule/endsOn'],
    [['recurring', { every: 'day', time: '09:00', timeZone: 'org', startsOn: '2026-12-02', endsOn: '2026-12-01' }], '/schedule/endsOn'],
    [['recurring', { every: 'week', weekday: 'sunday', time: '00:00', timeZone: 'contact', startsOn: '2026-12-01', endsOn: '2026-12-01' }], null],
  ];
  for (const [args, path] of cases) t.equal(scheduleProblem(...args)?.path ?? null, path, JSON.stringify(args[1]));
  t.equal(zoneOf('Asia/Tokyo', 'UTC'), 'Asia/Tokyo');
  for (const bad of ['Not/AZone', '../../etc/passwd', '', 42, null, { toString: () => 'UTC' }]) t.equal(zoneOf(bad, 'Europe/Lisbon'), 'Europe/Lisbon', String(bad));
});
