/**
 * The running half of the sandbox: checked SQL runs in the org's own database (where only its data
 * exists) against its views, on an untrusted connection
 * with a deadline (Database.untrusted), returning at most `maxRows` rows, streamed (a query returning 20
 * million rows once took the whole process down while its result was being turned into JS objects).
 * Memory is capped instance-wide (DUCKDB_MEMORY_LIMIT): a query over it fails alone with DuckDB's
 * out-of-memory error.
 */
import type { DuckDBValue } from '@duckdb/node-api';
import { microsParam } from '../../db/database.js';
import { type Database, type RowPage, type Sql, rowsOf } from '../../db/sql.js';
import { QueryTimeout } from '../../db/untrusted.js';
import { StorageUnavailable } from '../../core/unavailable.js';
import { type CheckedSql, type QueryBudget, TRIGGER_COLUMNS } from './sql-guard.js';

/** DuckDB's words when an allocation fails: the org's memory share (or the process's address space) ran out. */
export const OUT_OF_MEMORY = /Out of Memory/i;

/**
 * A checked query that failed while running: interrupted at its deadline or out of memory (`budget`: it
 * used up what it may use, a verdict on the query), or a runtime error.
 */
export class QueryFailed extends Error {
  constructor(
    readonly reason: string,
    readonly budget?: QueryBudget,
  ) {
    super(reason);
    this.name = 'QueryFailed';
  }
}

export type Window = Record<'cursor_start_time' | 'cursor_end_time', DuckDBValue>;

/** The half-open window (start, end] in epoch microseconds, as the placeholders' values. */
export function windowOf(start: bigint, end: bigint): Window {
  return { cursor_start_time: microsParam(start), cursor_end_time: microsParam(end) };
}

export async function runSandboxed(connection: Sql, query: CheckedSql, window: Window, maxRows: number): Promise<RowPage> {
  // Named parameters must be given exactly: pass only those the query uses.
  const params = Object.fromEntries(query.parameters.map((name) => [name, window[name as keyof Window]]));
  try {
    const page = await connection.read(query.sql, params, maxRows);
    return { rows: rowsOf({ names: canonicalNames(page.names, query.columns), columns: page.columns }), truncated: page.truncated };
  } catch (error) {
    // The storage process ended under it (killed for another org's query, say): nothing about this query.
    if (error instanceof StorageUnavailable) throw error;
    const message = (error as Error).message.split('\n')[0]!;
    throw new QueryFailed(`the query failed: ${message}`, OUT_OF_MEMORY.test(message) ? 'memory' : undefined);
  }
}

/**
 * Runs `work` on an untrusted connection within `timeoutMs`; an overrun becomes QueryFailed. No capacity
 * (SandboxBusy), a paused org (SandboxPaused) and a restarting storage process pass through: nothing ran,
 * which is not the query's failure (a preview answers 503; a flow run is tried again on its schedule).
 */
export async function withSandbox<T>(db: Database, timeoutMs: number, work: (c: Sql) => Promise<T>): Promise<T> {
  try {
    return await db.untrusted(timeoutMs, work);
  } catch (error) {
    if (error instanceof QueryTimeout) {
      throw new QueryFailed(`the query ran longer than ${timeoutMs} ms and was interrupted (TRIGGER_TIMEOUT_MS)`, 'time');
    }
    throw error;
  }
}

/** `AS IDENTITY` and `AS identity` are one column: rows carry the names the rest of the service reads. */
function canonicalNames(names: string[], columns: string[]): string[] {
  const renames = columns.filter((c) => c !== c.toLowerCase() && ([...TRIGGER_COLUMNS, 'email'] as string[]).includes(c.toLowerCase()));
  return renames.length === 0 ? names : names.map((name) => (renames.includes(name) ? name.toLowerCase() : name));
}
