/**
 * The retention sweeps of the tables compaction writes: events received (or, when set, happened) too long
 * ago, among those already folded into the aggregates and into event_types, whose counts go down in the same
 * transaction; quarantined events and tracking-plan violations received too long ago.
 */
import type { Sweep } from '../../db/sweep.js';
import { forgetEvents } from './fold-event-types.js';

function expiredEvents(column: 'received_at' | 'event_time', days: number): Sweep<'events'> {
  return {
    table: 'events',
    days,
    sql: `DELETE FROM events WHERE rowid IN (
            SELECT rowid FROM events
             WHERE ${column} < $1::TIMESTAMPTZ AND visible_at <= (SELECT max(through) FROM contact_activity_folded)
               AND visible_at <= (SELECT max(through) FROM event_types_folded)
             LIMIT $2) RETURNING environment, event_name`,
    deleted: (c, rows) => forgetEvents(c, rows as Array<{ environment: string; event_name: string }>),
  };
}

export function eventSweeps(policy: { eventsDays: number; eventsByEventTimeDays: number; quarantineDays: number }): Array<Sweep<'events' | 'quarantine' | 'plan_violations'>> {
  return [
    expiredEvents('received_at', policy.eventsDays),
    expiredEvents('event_time', policy.eventsByEventTimeDays),
    { table: 'quarantine', days: policy.quarantineDays, sql: 'DELETE FROM quarantine WHERE rowid IN (SELECT rowid FROM quarantine WHERE received_at < $1::TIMESTAMPTZ LIMIT $2) RETURNING 1' },
    { table: 'plan_violations', days: policy.quarantineDays, sql: 'DELETE FROM plan_violations WHERE rowid IN (SELECT rowid FROM plan_violations WHERE received_at < $1::TIMESTAMPTZ LIMIT $2) RETURNING 1' },
  ];
}
