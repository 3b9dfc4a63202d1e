/** An occurrence's members and their due times (run/scheduled-sends.ts starts it with them). Pure. */
import { isEmailAddress, normalizeEmail } from '../../../core/domain.js';
import type { Row } from '../../../db/sql.js';
import { instantIn, type Occurrence, type Schedule } from './schedule-time.js';

/**
 * How late an occurrence (or a contact of it) may still be sent: a flow started a few minutes after its
 * time still sends, one started (or a service back) hours later does not send the morning's message at
 * night.
 */
export const GRACE_MS = 60 * 60 * 1000;
/**
 * The segment's rows as members: valid e-mails once each, sorted, with their due time (the occurrence's
 * instant in the org's zone, or in each contact's: `contactZone`); those due more than GRACE_MS before `now`
 * are only counted.
 */
export function membersOf(schedule: Pick<Schedule, 'timeZone'>, occurrence: Occurrence, rows: readonly Row[], contactZone: (email: string) => string, now: number): { members: Array<{ email: string; dueAt: number }>; missed: number } {
  const emails = [...new Set(rows.map((r) => normalizeEmail(String(r.email ?? ''))).filter((e) => isEmailAddress(e)))].sort();
  const dueIn = new Map<string, number>();
  const dueOf = (email: string): number => {
    if (schedule.timeZone === 'org') return occurrence.opensAt;
    const zone = contactZone(email);
    let due = dueIn.get(zone);
    if (due === undefined) dueIn.set(zone, (due = instantIn(occurrence.wallMs, zone)));
    return due;
  };
  const members: Array<{ email: string; dueAt: number }> = [];
  let missed = 0;
  for (const email of emails) {
    const dueAt = dueOf(email);
    if (dueAt < now - GRACE_MS) missed++;
    else members.push({ email, dueAt });
  }
  return { members, missed };
}
