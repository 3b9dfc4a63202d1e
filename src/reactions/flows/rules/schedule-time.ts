/**
 * When scheduled and recurring flows send (issue 26): a schedule names local date-times ("2026-12-01T09:00",
 * "every monday at 09:00"), each one an occurrence, in the org's zone or in each contact's. This file turns
 * them into instants with the IANA rules (Intl), and says which occurrences a flow has around a moment.
 *
 * A local time the clocks skip that night (02:30 when 02:00 becomes 03:00) happens at the first minute after
 * the gap (03:00), as quiet hours end; a local time the clocks repeat (01:30 when 02:00 becomes 01:00)
 * happens the first time. An occurrence in the contacts' zones spans the earth's offsets: it opens when its
 * local time comes in the first zone (UTC+14) and closes when it comes in the last (UTC−12).
 */
import type { OnceSchedule, RecurringSchedule } from '../../../generated/flow.js';
import { isTimeZone } from '../../../core/quiet-hours.js';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;
/** The widest offsets any zone has (Kiribati's Line Islands +14:00, Baker Island −12:00). */
const FIRST_OFFSET_MS = 14 * HOUR_MS;
const LAST_OFFSET_MS = 12 * HOUR_MS;
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'] as const;

export type Schedule = OnceSchedule | RecurringSchedule;

/** One occurrence: its id is its local date-time, the same in every zone ("2026-12-01T09:00"). */
export interface Occurrence {
  id: string;
  /** The local date-time read as if it were UTC (epoch ms): what each zone's instant is worked out from. */
  wallMs: number;
  /** When it is due: the org zone's instant, or with contact zones when it comes in the first zone. */
  opensAt: number;
  /** When its last contact is due: opensAt in the org zone, else when it comes in the last zone. */
  closesAt: number;
}

/** "YYYY-MM-DDTHH:MM" as epoch ms read as UTC, or null when no calendar has it (2026-02-30, 24:00, year 0). */
export function wallClockMs(local: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})$/.exec(local);
  if (!m) return null;
  const [year, month, day, hour, minute] = m.slice(1).map(Number) as [number, number, number, number, number];
  if (year < 1970 || hour > 23 || minute > 59) return null;
  const ms = Date.UTC(year, month - 1, day, hour, minute);
  const back = new Date(ms);
  // Date.UTC rolls 2026-02-30 over into March: a date that does not exist is refused, not moved.
  return back.getUTCFullYear() === year && back.getUTCMonth() === month - 1 && back.getUTCDate() === day ? ms : null;
}

/** Epoch ms read as UTC, back to "YYYY-MM-DDTHH:MM". */
export function wallClockText(wallMs: number): string {
  return new Date(wallMs).toISOString().slice(0, 16);
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The wall clock in `zone` at `at`, as epoch ms read as UTC (to the minute). */
export function wallClockAt(at: number, zone: string): number {
  let formatter = formatters.get(zone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric' });
    formatters.set(zone, formatter);
  }
  const part: Record<string, number> = {};
  for (const p of formatter.formatToParts(at)) if (p.type !== 'literal') part[p.type] = Number(p.value);
  return Date.UTC(part.year!, part.month! - 1, part.day!, part.hour!, part.minute!);
}

/**
 * The first instant at which the wall clock in `zone` reads `wallMs` or later: the local time itself, the
 * first of the two in an hour the clocks repeat, the end of the gap in one they skip. Zone offsets are
 * whole minutes and change at minute boundaries, so minutes are exact.
 */
export function instantIn(wallMs: number, zone: string): number {
  const offsetAt = (at: number) => wallClockAt(at, zone) - Math.floor(at / MINUTE_MS) * MINUTE_MS;
  // The offsets a day either side: a change of clocks near the local time is between them.
  const offsets = [...new Set([offsetAt(wallMs - DAY_MS), offsetAt(wallMs), offsetAt(wallMs + DAY_MS)])];
  const exact = offsets.map((o) => wallMs - o).filter((at) => wallClockAt(at, zone) === wallMs);
  if (exact.length > 0) return Math.min(...exact);
  // In a gap: the first minute whose wall clock is past it (a gap lasts hours; Samoa's of 2011, a day).
  for (let at = wallMs - Math.max(...offsets); at <= wallMs - Math.min(...offsets); at += MINUTE_MS) {
    if (wallClockAt(at, zone) >= wallMs) return at;
  }
  throw new Error(`${wallClockText(wallMs)} has no instant in ${zone}`);
}

/** The occurrence at local date-time `wallMs`, in the org's zone or the contacts'. */
export function occurrenceAt(wallMs: number, schedule: Pick<Schedule, 'timeZone'>, orgZone: string): Occurrence {
  if (schedule.timeZone === 'org') {
    const at = instantIn(wallMs, orgZone);
    return { id: wallClockText(wallMs), wallMs, opensAt: at, closesAt: at };
  }
  return { id: wallClockText(wallMs), wallMs, opensAt: wallMs - FIRST_OFFSET_MS, closesAt: wallMs + LAST_OFFSET_MS };
}

/**
 * The schedule's occurrences that have opened by `now` and closed no earlier than `since` (oldest first):
 * the one of a scheduled flow, or a recurring flow's occurrences of the days around `now` (a day's
 * occurrence in contacts' zones opens 14 hours before that day begins in UTC and closes 12 hours after it
 * ends, so two days' may be open at once).
 */
export function occurrencesBetween(schedule: Schedule, orgZone: string, since: number, now: number): Occurrence[] {
  if ('at' in schedule) {
    const wallMs = wallClockMs(schedule.at);
    const occurrence = wallMs === null ? null : occurrenceAt(wallMs, schedule, orgZone);
    return occurrence && occurrence.opensAt <= now && occurrence.closesAt >= since ? [occurrence] : [];
  }
  const time = /^(\d{2}):(\d{2})$/.exec(schedule.time);
  if (!time) return [];
  const first = schedule.startsOn === undefined ? -Infinity : wallClockMs(`${schedule.startsOn}T00:00`) ?? Infinity;
  const last = schedule.endsOn === undefined ? Infinity : wallClockMs(`${schedule.endsOn}T23:59`) ?? -Infinity;
  const found: Occurrence[] = [];
  // Every local day whose occurrence may have opened by now and not closed before since (±14 h of offsets);
  // a year back at most, so a `since` of -Infinity walks no endless list of days.
  const fromDay = Math.floor((Math.max(since, now - 366 * DAY_MS) - LAST_OFFSET_MS - DAY_MS) / DAY_MS);
  const toDay = Math.floor((now + FIRST_OFFSET_MS + DAY_MS) / DAY_MS);
  for (let day = fromDay; day <= toDay; day++) {
    const wallMs = day * DAY_MS + Number(time[1]) * HOUR_MS + Number(time[2]) * MINUTE_MS;
    if (wallMs < first || wallMs > last) continue;
    if (schedule.every === 'week' && WEEKDAYS[new Date(wallMs).getUTCDay()] !== schedule.weekday) continue;
    const occurrence = occurrenceAt(wallMs, schedule, orgZone);
    if (occurrence.opensAt <= now && occurrence.closesAt >= since) found.push(occurrence);
  }
  return found;
}

/** What is wrong with a schedule for a flow of `category`, or null: the schema checks the shape, this the values. */
export function scheduleProblem(category: 'scheduled' | 'recurring', schedule: Schedule): { path: string; message: string } | null {
  if (category === 'scheduled') {
    if (!('at' in schedule)) return { path: '/schedule', message: 'a scheduled flow sends once: {"at": "2026-12-01T09:00", "timeZone": "org"}; every/time are for recurring flows' };
    if (wallClockMs(schedule.at) === null) return { path: '/schedule/at', message: `${schedule.at} is no date and time (YYYY-MM-DDTHH:MM, a real day, 00:00 to 23:59, from 1970)` };
    return null;
  }
  if ('at' in schedule) return { path: '/schedule', message: 'a recurring flow sends every day or week: {"every": "day", "time": "09:00", "timeZone": "org"}; at is for scheduled flows' };
  if (wallClockMs(`2000-01-01T${schedule.time}`) === null) return { path: '/schedule/time', message: `${schedule.time} is no time of day (HH:MM, 00:00 to 23:59)` };
  for (const member of ['startsOn', 'endsOn'] as const) {
    const date = schedule[member];
    if (date !== undefined && wallClockMs(`${date}T00:00`) === null) return { path: `/schedule/${member}`, message: `${date} is no date (YYYY-MM-DD, a real day, from 1970)` };
  }
  if (schedule.startsOn !== undefined && schedule.endsOn !== undefined && schedule.endsOn < schedule.startsOn) {
    return { path: '/schedule/endsOn', message: `endsOn ${schedule.endsOn} is before startsOn ${schedule.startsOn}: there would be no occurrence` };
  }
  return null;
}

/** A contact's zone for a schedule in contacts' zones: their profile's, when it is a zone, else the org's. */
export function zoneOf(own: unknown, orgZone: string): string {
  return typeof own === 'string' && isTimeZone(own) ? own : orgZone;
}
