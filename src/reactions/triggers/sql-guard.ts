/**
 * The static half of the sandbox (SPEC 7): trigger and segment SQL is untrusted, so it is checked before
 * anything runs. Snowflake SQL (issue 25; snowflake/dialect.ts says when a query is) is first translated
 * into DuckDB SQL (snowflake/translate.ts), and what it becomes is what is checked and run. In order:
 * - the text (sql-text.ts): constructs DuckDB reads differently from what a data engineer means;
 * - DuckDB parses it (json_serialize_sql gives the syntax tree of SELECT statements only): exactly one
 *   statement, and a SELECT;
 * - the tree (sql-tree.ts), deny by default: only known node types, only the org's relations and CTEs in
 *   scope, only allowed functions (function-rules.ts), only the two cursor parameters;
 * - a trigger uses both cursor placeholders, so every run and preview reads exactly its window;
 * - DuckDB prepares it against the org's views, which checks names and types and gives the columns.
 * The caller runs this on an untrusted connection of the org's own database with a deadline
 * (Database.untrusted): preparing folds constant expressions, which can take as long as the query
 * author likes. The second wall holds alone: that database holds nothing of another org or of the control
 * plane, and its instance reads no files, loads no extensions and has its configuration locked.
 */
import type { Sql } from '../../db/sql.js';
import type { ColumnType } from '../../events/profiles/profiles-view.js';
import { DEFAULT_PROFILE_FIELDS, OPTIONAL_PROFILE_FIELDS } from '../../core/profile-fields.js';
import { functionRules } from './function-rules.js';
import { parseStatement } from './parse-sql.js';
import { bindPlaceholders, CURSOR_PARAMETERS } from './placeholders.js';
import { type Dialect, dialectOf, translateSnowflake } from './snowflake/translate.js';
import { checkText } from './sql-text.js';
import { checkTree, type QueryBudget, SqlRefused } from './sql-tree.js';

export { type QueryBudget, SqlRefused };

export const QUERY_KINDS = ['trigger', 'segment', 'trait'] as const;
export type QueryKind = (typeof QUERY_KINDS)[number];


/** The columns a trigger returns first, in this order (SPEC 7); more may follow. */
export const TRIGGER_COLUMNS = ['identity', 'identity_type', 'ts', 'event_type', 'event_id', 'event_raw'] as const;

export interface CheckedSql {
  /** The SQL with placeholders turned into named parameters, as it will run (translated from Snowflake SQL). */
  sql: string;
  /** The dialect the source was read in. */
  dialect: Dialect;
  /** The cursor parameters it uses (named parameters must all be given, and only those). */
  parameters: string[];
  columns: string[];
  /** A trait's: the type of its value, as a column of `profiles` (profiles-view.ts). */
  valueType?: ColumnType;
}

/** Checks untrusted SQL for `org` on an untrusted connection. Throws SqlRefused. */
export async function checkSql(connection: Sql, source: string, org: string, kind: QueryKind): Promise<CheckedSql> {
  const dialect = dialectOf(source);
  const duckdb = dialect === 'snowflake' ? await translateSnowflake(connection, source) : source;
  checkText(duckdb);
  const sql = bindPlaceholders(duckdb).trim().replace(/;\s*$/, '');
  if (sql === '') throw new SqlRefused('the query is empty');
  const statement = await parseStatement(connection, sql);
  const { parameters } = checkTree(statement, org, await functionRules(connection));
  const missing = CURSOR_PARAMETERS.filter((name) => !parameters.includes(name));
  if (kind === 'trigger' && missing.length > 0) {
    throw new SqlRefused(
      `a trigger reads its run's window: add ${missing.map((m) => `{${m}}`).join(' and ')}, ` +
        'e.g. WHERE ts > {cursor_start_time} AND ts <= {cursor_end_time}',
    );
  }
  if (kind === 'trait' && parameters.length > 0) {
    throw new SqlRefused('a trait is a value per contact now, not over a window: remove {cursor_start_time} and {cursor_end_time}');
  }
  const columns = await prepareColumns(connection, sql, dialect);
  checkColumns(columns, kind);
  if (kind !== 'trait') return { sql, dialect, parameters, columns };
  return { sql, dialect, parameters, columns, valueType: await traitType(connection, sql) };
}

async function prepareColumns(connection: Sql, sql: string, dialect: Dialect): Promise<string[]> {
  try {
    return await connection.columnNames(sql);
  } catch (error) {
    const read = dialect === 'snowflake' ? ' (read as Snowflake SQL: docs/data-engineers.md, "Snowflake SQL", lists what is translated)' : '';
    throw new SqlRefused(`the query does not bind: ${(error as Error).message.split('\n')[0]}${read}`);
  }
}

/** Column names compare case-insensitively, as DuckDB's identifiers do. */
function checkColumns(columns: string[], kind: QueryKind): void {
  // Rows become JS objects keyed by column name (in the DuckDB client already), where `__proto__`
  // is no key but the prototype: such a column would vanish or give the row inherited members.
  if (columns.includes('__proto__')) throw new SqlRefused('a column named __proto__ cannot be returned; give it another name (AS …)');
  const lower = columns.map((c) => c.toLowerCase());
  switch (kind) {
    case 'trigger': {
      if (lower.slice(0, TRIGGER_COLUMNS.length).join(',') !== TRIGGER_COLUMNS.join(',')) {
        throw new SqlRefused(`a trigger returns ${TRIGGER_COLUMNS.join(', ')} first, in this order; this one returns ${columns.join(', ')}`);
      }
      return;
    }
    case 'segment':
      if (!lower.includes('email')) throw new SqlRefused(`a segment returns a column named email; this one returns ${columns.join(', ')}`);
      return;
    case 'trait':
      if (lower.length !== 2 || !lower.includes('email') || !lower.includes('value')) {
        throw new SqlRefused(`a trait returns two columns, email and value (one row per contact); this one returns ${columns.join(', ')}`);
      }
      return;
  }
}

/** Names a profile has already: a trait so named would be hidden by (or hide) the profile's own field. */
const PROFILE_OWN = new Set<string>([...DEFAULT_PROFILE_FIELDS, ...OPTIONAL_PROFILE_FIELDS, 'email', 'custom_fields']);

/** A trait is the profile field of its name: not one the profile has already. Throws SqlRefused. */
export function checkTraitName(name: string): void {
  if (PROFILE_OWN.has(name)) throw new SqlRefused(`${name} is a field every profile has; give the trait another name (e.g. computed_${name})`);
}

/**
 * The column type of a trait's value: numbers are DOUBLE, times text (ISO 8601), nested values refused
 * (a field of `profiles` compares as one value). The query is wrapped on lines of its own: a trailing
 * line comment cannot swallow the closing parenthesis.
 */
async function traitType(connection: Sql, sql: string): Promise<ColumnType> {
  const [row] = await connection.all<{ column_type: string }>(`SELECT column_type FROM (DESCRIBE SELECT value FROM (\n${sql}\n) AS trait)`);
  const type = row?.column_type ?? 'VARCHAR';
  if (type === 'BOOLEAN') return 'BOOLEAN';
  if (/^(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|REAL|DECIMAL.*)$/.test(type)) return 'DOUBLE';
  if (/^(VARCHAR|DATE|TIME.*|UUID|ENUM.*)$/.test(type)) return 'VARCHAR';
  throw new SqlRefused(`a trait's value is text, a number, a boolean or a time; this one is ${type} (turn it into one, e.g. to_json(value)::VARCHAR)`);
}
