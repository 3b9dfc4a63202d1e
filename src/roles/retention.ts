/**
 * Retention: expired rows of one org's database are deleted in small batches, each its own statement,
 * so compaction, lookups and flows reading the same database wait at most for one batch. Each table's
 * owner declares what expires (events/compaction/expired.ts: events, only once folded into the
 * aggregates, so a profile is the same before and after; quarantine. reactions/flows/store/send-sweeps.ts:
 * decisions; the content of finished sends, never the send row). 0 days keeps forever.
 */
import type { Database } from '../db/sql.js';
import type { Sweep } from '../db/sweep.js';
import { eventSweeps } from '../events/compaction/expired.js';
import { sendSweeps } from '../reactions/flows/store/send-sweeps.js';

export interface RetentionPolicy {
  eventsDays: number;
  eventsByEventTimeDays: number;
  quarantineDays: number;
  decisionsDays: number;
  sendsContentDays: number;
}

export type RetainedTable = 'events' | 'quarantine' | 'plan_violations' | 'flow_decisions' | 'flow_sends';

/** Rows per statement: a few milliseconds of DuckDB work. */
export const RETENTION_BATCH_ROWS = 5_000;
const DAY_MS = 86_400_000;

/** Each table's owner declares its sweep: compaction for events and quarantine, the send store for the flow tables. */
function sweeps(policy: RetentionPolicy): Array<Sweep<RetainedTable>> {
  return [...eventSweeps(policy), ...sendSweeps(policy)].filter((sweep) => sweep.days > 0);
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
