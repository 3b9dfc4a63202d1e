/** visible_at, the trigger cursor column (written by write-batch.ts): reading it back. */
import type { Sql } from '../../db/sql.js';

/** The newest visible_at (epoch µs), NULL when nothing is stored: a scalar subquery for a statement that reads more beside it. */
export const NEWEST_VISIBLE_AT = '(SELECT epoch_us(max(visible_at)) FROM events)';

/** The newest visible_at (epoch µs) in this statement's or transaction's snapshot; 0 when nothing is stored. */
export async function newestVisibleAt(c: Pick<Sql, 'all'>): Promise<bigint> {
  const [row] = await c.all<{ newest: bigint | null }>(`SELECT ${NEWEST_VISIBLE_AT} AS newest`);
  return row?.newest ?? 0n;
}

/** ISO 8601 with the microseconds visible_at has (Date keeps only milliseconds). */
export function microsToIso(micros: bigint): string {
  const ms = micros / 1000n;
  const rest = String(micros % 1000n).padStart(3, '0');
  return new Date(Number(ms)).toISOString().replace('Z', `${rest}Z`);
}
