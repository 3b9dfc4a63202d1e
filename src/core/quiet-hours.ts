/**
 * Quiet hours (SPEC 8): `quietHours: { start: "21:00", end: "08:00", timeZone: "contact" | <IANA zone> }` on
 * the org or a flow (the flow's own wins). An entry decided inside the window, in the contact's local time,
 * is deferred to the window's end: the first minute after it at which the local time is outside the window.
 * Local time comes from the IANA rules (Intl), so a window that spans a change of clocks ends when the wall
 * clock says so: on a night that skips an hour the window is shorter, on one that repeats it, longer; an end
 * that does not exist that night (02:30 when 02:00 becomes 03:00) ends at the first minute after it.
 * `start` < `end` is a window within a day; `start` > `end` spans midnight; equal times are refused.
 */
import type { QuietHours } from '../generated/org.js';

export type { QuietHours } from '../generated/org.js';

const MINUTE_MS = 60_000;
const TIME = /^([01]\d|2[0-3]):([0-5]\d)$/;
const formatters = new Map<string, Intl.DateTimeFormat>();

/** Whether `zone` is an IANA time zone this runtime knows. */
export function isTimeZone(zone: string): boolean {
  try {
    formatterOf(zone);
    return true;
  } catch {
    return false;
  }
}

/** What is wrong with a quietHours setting, or null: the schema checks the shape, this the values. */
export function quietHoursProblem(quiet: QuietHours): string | null {
  if (!TIME.test(quiet.start) || !TIME.test(quiet.end)) return 'start and end are HH:MM, 00:00 to 23:59';
  if (quiet.start === quiet.end) return 'start and end are the same time: there would be no quiet hours';
  if (quiet.timeZone !== 'contact' && !isTimeZone(quiet.timeZone)) return `timeZone ${JSON.stringify(quiet.timeZone)} is neither "contact" nor an IANA time zone (e.g. Europe/Lisbon)`;
  return null;
}

function formatterOf(zone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(zone);
  if (!formatter) {
    // Throws RangeError for a zone the runtime does not know.
    formatter = new Intl.DateTimeFormat('en-GB', { timeZone: zone, hourCycle: 'h23', hour: '2-digit', minute: '2-digit' });
    formatters.set(zone, formatter);
  }
  return formatter;
}

/** Minutes since local midnight in `zone` at `at` (epoch ms). */
export function localMinuteOfDay(at: number, zone: string): number {
  let hour = 0;
  let minute = 0;
  for (const part of formatterOf(zone).formatToParts(at)) {
    if (part.type === 'hour') hour = Number(part.value);
    else if (part.type === 'minute') minute = Number(part.value);
  }
  return hour * 60 + minute;
}

const minutesOf = (time: string) => Number(time.slice(0, 2)) * 60 + Number(time.slice(3, 5));

/** Whether `at` falls inside the window in `zone`. */
export function inQuietHours(at: number, quiet: Pick<QuietHours, 'start' | 'end'>, zone: string): boolean {
  const local = localMinuteOfDay(at, zone);
  const start = minutesOf(quiet.start);
  const end = minutesOf(quiet.end);
  return start < end ? local >= start && local < end : local >= start || local < end;
}

/**
 * When the window around `at` ends: `at` itself when it is outside, else the first minute boundary after
 * it whose local time is outside (zone offsets are whole minutes, so minute boundaries are exact). At most
 * a day and a changed clock away.
 */
export function quietHoursEnd(at: number, quiet: Pick<QuietHours, 'start' | 'end'>, zone: string): number {
  if (!inQuietHours(at, quiet, zone)) return at;
  let t = Math.floor(at / MINUTE_MS) * MINUTE_MS + MINUTE_MS;
  // A window of up to 23 h 59 min, lengthened by at most a few hours of clock changes.
  for (let step = 0; step < 28 * 60; step++, t += MINUTE_MS) {
    if (!inQuietHours(t, quiet, zone)) return t;
  }
  throw new Error(`quiet hours ${quiet.start}-${quiet.end} in ${zone} do not end within 28 h of ${new Date(at).toISOString()}`);
}

/**
 * For one decision time: when each contact's quiet hours end, or null when the contact is outside them
 * (or there are none). `zoneOf` gives a contact's own zone (`timeZone: "contact"`); an unknown or invalid
 * one falls back to the org's. Each zone is worked out once per decision time.
 */
export function quietUntilAt(
  now: number,
  quiet: QuietHours | undefined,
  orgZone: string,
  zoneOf: (email: string) => unknown,
): (email: string) => { at: number; zone: string } | null {
  if (!quiet) return () => null;
  const ends = new Map<string, number>();
  // Each zone a contact names is checked once (an unknown name throws inside Intl: not once per entry).
  const zones = new Map<string, string>();
  return (email) => {
    const own = quiet.timeZone === 'contact' ? zoneOf(email) : quiet.timeZone;
    let zone = orgZone;
    if (typeof own === 'string') {
      zone = zones.get(own) ?? (isTimeZone(own) ? own : orgZone);
      zones.set(own, zone);
    }
    let end = ends.get(zone);
    if (end === undefined) ends.set(zone, (end = quietHoursEnd(now, quiet, zone)));
    return end > now ? { at: end, zone } : null;
  };
}
