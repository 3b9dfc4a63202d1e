/**
 * Snowflake trigger and segment SQL as DuckDB SQL (issue 25): the pre-pass makes it parseable
 * (prepass.ts), DuckDB parses it, the tree is rewritten (rewrite.ts) and json_deserialize_sql prints it
 * back. What comes out is ordinary DuckDB SQL that the guard then checks like any other (sql-guard.ts):
 * the translation never needs a check of its own, and adds no function the guard does not already allow.
 */
import type { Sql } from '../../../db/sql.js';
import { parseStatement } from '../parse-sql.js';
import { bindPlaceholders } from '../placeholders.js';
import { prepass } from './prepass.js';
import { SnowflakeRewriter } from './rewrite.js';

export { dialectOf, type Dialect } from './dialect.js';

export async function translateSnowflake(connection: Sql, source: string): Promise<string> {
  // Strings are read the Snowflake way first; the placeholders are then found outside DuckDB's literals.
  const sql = bindPlaceholders(prepass(source)).trim().replace(/;\s*$/, '');
  const statement = await parseStatement(connection, sql);
  const tree = JSON.stringify({ error: false, statements: [new SnowflakeRewriter().statement(statement)] });
  const [row] = await connection.all<{ sql: string }>(`SELECT json_deserialize_sql('${tree.replaceAll("'", "''")}') AS sql`);
  return row!.sql;
}
