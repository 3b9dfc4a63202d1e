/**
 * Which functions untrusted SQL may call, derived from DuckDB's own catalog so that a function DuckDB or
 * the service adds later is judged by what it is, not missed by a list written today:
 * - table functions (FROM …): an allow-list of pure generators;
 * - scalar, aggregate and window functions: everything built in, except those that reveal the
 *   environment or touch state (a short list), the built-in macros whose body reads a table (the
 *   pg_catalog ones and the like), and every function the service itself defines (its profile macros).
 */
import type { Sql } from '../../db/sql.js';
import type { FunctionRules } from './sql-tree.js';

const TABLE_FUNCTIONS = new Set(['unnest', 'range', 'generate_series', 'json_each', 'json_tree']);

const DENIED = ['getenv', 'current_setting', 'nextval', 'currval', 'setseed', 'json_execute_serialized_sql', 'query', 'query_table', 'read_text', 'read_blob', 'glob', 'sniff_csv'];
const DENIED_PREFIXES = ['read_', 'duckdb_', 'pragma_', 'parquet_', 'iceberg_', 'delta_', 'sqlite_', 'postgres_', 'mysql_'];
/** A macro body that reads a relation. */
const READS_RELATIONS = /\b(select|from)\b|duckdb_|pragma_/i;

let cached: Promise<FunctionRules> | undefined;

export function functionRules(c: Sql): Promise<FunctionRules> {
  cached ??= load(c).catch((error: unknown) => {
    cached = undefined;
    throw error;
  });
  return cached;
}

async function load(c: Sql): Promise<FunctionRules> {
  const rows = await c.all<{ name: string; type: string; internal: boolean; schema: string; body: string | null }>(
    `SELECT DISTINCT lower(function_name) AS name, function_type AS type, internal, schema_name AS schema,
            macro_definition AS body
       FROM duckdb_functions() WHERE function_type IN ('scalar', 'aggregate', 'macro')`,
  );
  const denied = new Set(DENIED);
  for (const row of rows) {
    const impureMacro = row.type === 'macro' && (row.schema !== 'main' || READS_RELATIONS.test(row.body ?? ''));
    if (!row.internal || impureMacro || DENIED_PREFIXES.some((prefix) => row.name.startsWith(prefix))) denied.add(row.name);
  }
  return { tableFunctions: TABLE_FUNCTIONS, deniedFunctions: denied };
}
