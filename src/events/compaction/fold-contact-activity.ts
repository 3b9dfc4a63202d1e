/**
 * Folds the events made visible since the last fold into the per-contact aggregates (contact_activity,
 * contact_orders; pipelines/profiles.sql) and moves the fold position, inside the caller's transaction.
 * Profiles combine the aggregates with the events not folded yet, so a fold only bounds how many events
 * a profile computation reads: it never changes a result.
 */
import type { DuckDBTimestampTZValue } from '@duckdb/node-api';
import { microsParam } from '../../db/database.js';
import type { Sql } from '../../db/sql.js';

/**
 * Where the fold stands, as a parameter for the macros' `folded` argument. A value rather than the
 * folded_through() subquery, so DuckDB's zone maps skip the folded events. Read it on the connection
 * and in the transaction or exclusive session of the query that uses it, so no fold runs in between.
 */
export async function foldedThrough(c: Sql): Promise<DuckDBTimestampTZValue | null> {
  const [row] = await c.all<{ us: bigint | null }>('SELECT epoch_us(folded_through()) AS us');
  return row?.us == null ? null : microsParam(row.us);
}

export async function foldContactActivity(c: Sql): Promise<void> {
  const folded = await foldedThrough(c);
  // Recombine only the contacts with unfolded events (an empty list selects none).
  await c.run(
    `INSERT OR REPLACE INTO contact_activity BY NAME
     SELECT * FROM activity_of(NULL, (SELECT coalesce(list(DISTINCT email), []) FROM event_activity($1::TIMESTAMPTZ, NULL::VARCHAR[])), $1::TIMESTAMPTZ)`,
    [folded],
  );
  await c.run('INSERT OR IGNORE INTO contact_orders BY NAME SELECT DISTINCT * FROM event_orders($1::TIMESTAMPTZ)', [folded]);
  await c.run('DELETE FROM contact_activity_folded');
  await c.run('INSERT INTO contact_activity_folded SELECT max(visible_at) FROM events HAVING max(visible_at) IS NOT NULL');
}
