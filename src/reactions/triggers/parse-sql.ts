/** DuckDB's parse of one SELECT statement (json_serialize_sql), for the guard and the Snowflake translation. */
import type { Sql } from '../../db/sql.js';
import { SqlRefused } from './sql-tree.js';

/**
 * The statement's syntax tree. `query_location` members are left out: they are uint64 offsets (2^64-1
 * when unknown) that a JS number cannot hold, and json_deserialize_sql refuses them rounded.
 */
export async function parseStatement(connection: Sql, sql: string): Promise<Record<string, unknown>> {
  // json_serialize_sql takes a constant; the SQL goes in as a string literal (quotes doubled), which
  // DuckDB only parses, never runs.
  const [row] = await connection.all<{ tree: string }>(`SELECT json_serialize_sql('${sql.replaceAll("'", "''")}') AS tree`);
  const tree = JSON.parse(row!.tree, (key, value: unknown) => (key === 'query_location' ? undefined : value)) as {
    error: boolean;
    error_message?: string;
    statements?: Record<string, unknown>[];
  };
  if (tree.error) {
    const message = tree.error_message ?? 'unparseable';
    if (/only SELECT statements/i.test(message)) {
      throw new SqlRefused('only a plain SELECT statement is allowed: DDL, DML, PRAGMA, SET, ATTACH, COPY, INSTALL, LOAD and PIVOT are refused');
    }
    throw new SqlRefused(`the query does not parse: ${message}`);
  }
  const statements = tree.statements ?? [];
  if (statements.length !== 1) throw new SqlRefused(`exactly one SELECT statement is allowed, found ${statements.length}`);
  return statements[0]!;
}
