/**
 * Retention: expired rows of one org's database are deleted in small batches, each its own statement,
 * so compaction, lookups and flows reading the same database wait at most for one batch.
 *
 * - events: received more than `eventsDays` ago, or (when set) with an event time more than
 *   `eventsByEventTimeDays` ago; only events already folded into the per-contact aggregates
 *   (contact_activity, contact_orders: lifetime value, order count, first and last seen, traits), so a
 *   profile is the same before and after its old events go. Triggers see the events retained.
 * - quarantine: received more than `quarantineDays` ago.
 * - flow decisions (the "why (not)" log): decided more than `decisionsDays` ago.
 * - flow sends: the rendered content of a finished send (delivered, failed, dead) is cleared after
 *   `sendsContentDays`. The row itself stays: it is what makes a send exactly-once, what re-entry rules
 *   read, and what campaigns_received and flow_variant_membership count.
 * 0 keeps forever.
 */
import { forgetEvents } from '../events/compaction/fold-event-types.js';
import type { Database, Row, Sql } from '../db/sql.js';

export interface RetentionPolicy {
  eventsDays: number;
  eventsByEventTimeDays: number;
  quarantineDays: number;
  decisionsDays: number;
  sendsContentDays: number;
}

export type RetainedTable = 'events' | 'quarantine' | 'flow_decisions' | 'flow_sends';

/** Rows per statement: a few milliseconds of DuckDB work. */
export const RETENTION_BATCH_ROWS = 5_000;
const DAY_MS = 86_400_000;

interface Sweep {
  table: RetainedTable;
  /** Deletes (or clears) at most $2 expired rows, older than $1, returning one row per row changed. */
  sql: string;
  days: number;
  /** Runs in the transaction of each batch with the rows it returned. */
  deleted?: (c: Sql, rows: Row[]) => Promise<void>;
}

/**
 * Events older than the cut-off by `column`, among those already folded into the aggregates and into
 * event_types, whose counts go down in the same transaction.
 */
function expiredEvents(column: 'received_at' | 'event_time', days: number): Sweep {
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

function sweeps(policy: RetentionPolicy): Sweep[] {
  const list: Sweep[] = [
    expiredEvents('received_at', policy.eventsDays),
    expiredEvents('event_time', policy.eventsByEventTimeDays),
    { table: 'quarantine', days: policy.quarantineDays, sql: 'DELETE FROM quarantine WHERE rowid IN (SELECT rowid FROM quarantine WHERE received_at < $1::TIMESTAMPTZ LIMIT $2) RETURNING 1' },
    { table: 'flow_decisions', days: policy.decisionsDays, sql: 'DELETE FROM flow_decisions WHERE rowid IN (SELECT rowid FROM flow_decisions WHERE decided_at < $1::TIMESTAMPTZ LIMIT $2) RETURNING 1' },
    {
      table: 'flow_sends',
      days: policy.sendsContentDays,
      sql: `UPDATE flow_sends SET content = NULL WHERE send_id IN (
              SELECT send_id FROM flow_sends
               WHERE created_at < $1::TIMESTAMPTZ AND status IN ('delivered', 'failed', 'dead') AND content IS NOT NULL
               LIMIT $2) RETURNING 1`,
    },
  ];
  return list.filter((sweep) => sweep.days > 0);
}

/** Sweeps one org's database; returns the rows changed per table and the statements it took. */
export async function sweepExpired(db: Database, policy: RetentionPolicy, now: number, batchRows = RETENTION_BATCH_ROWS): Promise<{ rows: Partial<Record<RetainedTable, number>>; statements: number }> {
  const rows: Partial<Record<RetainedTable, number>> = {};
  let statements = 0;
  for (const sweep of sweeps(policy)) {
    const cutoff = new Date(now - sweep.days * DAY_MS).toISOString();
    for (;;) {
      const params = [cutoff, batchRows];
      const changed = sweep.deleted
        ? await db.transaction(async (c) => {
            const deleted = await c.all(sweep.sql, params);
            await sweep.deleted!(c, deleted);
            return deleted.length;
          })
        : (await db.all(sweep.sql, params)).length;
      statements++;
      rows[sweep.table] = (rows[sweep.table] ?? 0) + changed;
      if (changed < batchRows) break;
    }
  }
  return { rows, statements };
}
