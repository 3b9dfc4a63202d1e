/**
 * The running half of the sandbox: checked SQL runs against one org's views with a time limit.
 * DuckDB has no per-query timeout, so a timer interrupts the connection; the caller holds the
 * connection exclusively, so the interrupt can only hit this query. Memory is capped instance-wide
 * (DUCKDB_MEMORY_LIMIT): a query over it fails alone with DuckDB's out-of-memory error.
 */
import type { DuckDBValue } from '@duckdb/node-api';
import type { Row, Sql } from '../db/sql.js';
import { bindOrgRelations, unbindOrgRelations } from './org-relations.js';
import type { CheckedSql } from './sql-guard.js';

/** A checked query that failed while running: interrupted, out of memory, or a runtime error. */
export class QueryFailed extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'QueryFailed';
  }
}

export async function runSandboxed(
  connection: Sql,
  org: string,
  query: CheckedSql,
  window: Record<string, DuckDBValue>,
  timeoutMs: number,
): Promise<Row[]> {
  // Named parameters must be given exactly: pass only those the query uses.
  const params = Object.fromEntries(query.parameters.map((name) => [name, window[name]!]));
  await bindOrgRelations(connection, org);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    connection.interrupt();
  }, timeoutMs);
  try {
    return await connection.all(query.sql, params);
  } catch (error) {
    if (timedOut) throw new QueryFailed(`the query ran longer than ${timeoutMs} ms and was interrupted (TRIGGER_TIMEOUT_MS)`);
    throw new QueryFailed(`the query failed: ${(error as Error).message.split('\n')[0]}`);
  } finally {
    clearTimeout(timer);
    await unbindOrgRelations(connection);
  }
}
