/**
 * When the events a flow run is about happened, and whether their sender marked them as history
 * (`context.backfill: true`): what decides `too_old` and `backfill` (SPEC 8, flows never message history).
 * Read from the stored events, not from the trigger's columns, so a trigger that selects `ts` (arrival)
 * or nothing about time cannot make an old event look new.
 */
import { listValue } from '@duckdb/node-api';
import { microsParam } from '../../db/database.js';
import type { Database } from '../../db/sql.js';

export interface EventTime {
  /** The event's own time (events.event_time, corrected for clock skew), epoch ms. */
  at: number;
  /** Sent with `context.backfill: true`: stored and in profiles, never a flow's entry. */
  backfill: boolean;
}

const SELECT = `SELECT message_id, epoch_ms(event_time) AS at, coalesce(raw->>'$.context.backfill' = 'true', false) AS backfill
                  FROM events WHERE org = $1 AND environment = 'production' AND message_id IN (SELECT unnest($2::VARCHAR[]))`;

/**
 * The time of each of these events (by message id) the org stored. Looked up in the run's window first
 * (a zone-map range scan); an id a trigger took from elsewhere in history is looked up in all events.
 * An id that is no stored event (a trigger may make ids up) is absent: nothing is known of its time.
 */
export async function eventTimes(db: Database, org: string, eventIds: readonly string[], window: { start: bigint; end: bigint }): Promise<Map<string, EventTime>> {
  const times = new Map<string, EventTime>();
  if (eventIds.length === 0) return times;
  const add = (rows: Array<{ message_id: string; at: bigint; backfill: boolean }>) => {
    for (const r of rows) times.set(r.message_id, { at: Number(r.at), backfill: r.backfill });
  };
  add(await db.all(`${SELECT} AND visible_at > $3 AND visible_at <= $4`, [org, listValue([...eventIds]), microsParam(window.start), microsParam(window.end)]));
  const rest = eventIds.filter((id) => !times.has(id));
  if (rest.length > 0) add(await db.all(SELECT, [org, listValue(rest)]));
  return times;
}
