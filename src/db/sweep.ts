/** A batched delete (or clear) of expired rows, declared by the owner of the table it changes (roles/retention.ts runs them). */
import type { Row, Sql } from './sql.js';

export interface Sweep<Table extends string = string> {
  table: Table;
  /** Deletes (or clears) at most $2 expired rows, older than $1, returning one row per row changed. */
  sql: string;
  /** Rows older than this many days expire; 0 keeps forever. */
  days: number;
  /** Runs in the transaction of each batch with the rows it returned. */
  deleted?: (c: Sql, rows: Row[]) => Promise<void>;
}
