/**
 * The static half of the sandbox (SPEC 7): trigger and segment SQL is untrusted, so it is parsed and
 * checked before anything runs. DuckDB parses it (json_serialize_sql gives the syntax tree of SELECT
 * statements only), and this module walks the tree:
 * - exactly one statement, and a SELECT (anything else does not serialize);
 * - relations: only event_triggers and profiles, unqualified or as `<org>.<name>`, plus the query's own
 *   CTEs in scope. So no other org, no service table, no file read through a replacement scan;
 * - table functions: an allow-list of pure ones (read_csv, glob, query, duckdb_settings… are refused);
 * - scalar functions: a deny-list of those that reveal the environment or touch state (getenv…);
 * - parameters: only $cursor_start_time and $cursor_end_time.
 * Then DuckDB prepares it against the org's views, which checks names and types and gives the columns.
 * The instance-wide settings in db/database.ts are the second wall: even a check missed here cannot read
 * files, load extensions or change configuration.
 */
import type { Sql } from '../db/sql.js';
import { bindOrgRelations, ORG_RELATIONS, unbindOrgRelations } from './org-relations.js';
import { bindPlaceholders, CURSOR_PARAMETERS } from './placeholders.js';

export type QueryKind = 'trigger' | 'segment';

/** The columns a trigger returns first, in this order (SPEC 7); more may follow. */
export const TRIGGER_COLUMNS = ['identity', 'identity_type', 'ts', 'event_type', 'event_id', 'event_raw'] as const;

const ALLOWED_TABLE_FUNCTIONS = new Set(['unnest', 'range', 'generate_series', 'json_each', 'json_tree']);

const DENIED_FUNCTIONS = new Set([
  'getenv',
  'current_setting',
  'nextval',
  'currval',
  'setseed',
  'json_execute_serialized_sql',
  'query',
  'query_table',
  'read_text',
  'read_blob',
  'glob',
  'sniff_csv',
]);
const DENIED_FUNCTION_PREFIXES = ['read_', 'duckdb_', 'pragma_', 'parquet_', 'iceberg_', 'delta_', 'sqlite_', 'postgres_', 'mysql_'];

/** Trigger SQL refused before running, with the reason a data engineer reads. */
export class SqlRefused extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'SqlRefused';
  }
}

export interface CheckedSql {
  /** The SQL with placeholders turned into named parameters, as it will run. */
  sql: string;
  /** The cursor parameters it uses (named parameters must all be given, and only those). */
  parameters: string[];
  columns: string[];
}

/** Checks untrusted SQL for `org`. The caller holds the connection (Database.exclusive). Throws SqlRefused. */
export async function checkSql(connection: Sql, source: string, org: string, kind: QueryKind): Promise<CheckedSql> {
  const sql = bindPlaceholders(source).trim().replace(/;\s*$/, '');
  if (sql === '') throw new SqlRefused('the query is empty');
  const parameters = checkTree(await parse(connection, sql), org);
  const columns = await prepareColumns(connection, sql, org);
  checkColumns(columns, kind);
  return { sql, parameters, columns };
}

async function parse(connection: Sql, sql: string): Promise<unknown[]> {
  // json_serialize_sql takes a constant; the SQL goes in as a string literal (quotes doubled), which
  // DuckDB only parses, never runs.
  const [row] = await connection.all<{ tree: string }>(`SELECT json_serialize_sql('${sql.replaceAll("'", "''")}') AS tree`);
  const tree = JSON.parse(row!.tree) as { error: boolean; error_message?: string; statements?: unknown[] };
  if (tree.error) {
    const message = tree.error_message ?? 'unparseable';
    if (/only SELECT statements/i.test(message)) {
      throw new SqlRefused('only a SELECT statement is allowed: DDL, DML, PRAGMA, SET, ATTACH, COPY, INSTALL and LOAD are refused');
    }
    throw new SqlRefused(`the query does not parse: ${message}`);
  }
  const statements = tree.statements ?? [];
  if (statements.length !== 1) throw new SqlRefused(`exactly one SELECT statement is allowed, found ${statements.length}`);
  return statements;
}

type Node = Record<string, unknown>;

/** Walks the whole tree; returns the parameters used. */
function checkTree(statements: unknown[], org: string): string[] {
  const parameters = new Set<string>();
  const visit = (value: unknown, ctes: ReadonlySet<string>): void => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item, ctes);
      return;
    }
    if (value === null || typeof value !== 'object') return;
    const node = value as Node;
    const scope = visitCtes(node, ctes, visit);
    checkNode(node, scope, org, parameters);
    for (const [key, child] of Object.entries(node)) if (key !== 'cte_map') visit(child, scope);
  };
  visit(statements, new Set());
  return [...parameters];
}

/** CTEs are visible to later CTEs of the same WITH (and to themselves, for recursive ones) and to the body. */
function visitCtes(node: Node, outer: ReadonlySet<string>, visit: (value: unknown, ctes: ReadonlySet<string>) => void): ReadonlySet<string> {
  const entries = (node.cte_map as { map?: { key: string; value: unknown }[] } | undefined)?.map;
  if (!entries || entries.length === 0) return outer;
  const scope = new Set(outer);
  for (const entry of entries) {
    scope.add(entry.key.toLowerCase());
    visit(entry.value, new Set(scope));
  }
  return scope;
}

function checkNode(node: Node, ctes: ReadonlySet<string>, org: string, parameters: Set<string>): void {
  if (node.type === 'BASE_TABLE') checkRelation(node, ctes, org);
  else if (node.type === 'TABLE_FUNCTION') {
    const name = functionName(node.function);
    if (!ALLOWED_TABLE_FUNCTIONS.has(name)) {
      throw new SqlRefused(`table function ${name} is not allowed (allowed: ${[...ALLOWED_TABLE_FUNCTIONS].join(', ')})`);
    }
  } else if (node.class === 'FUNCTION') {
    const name = functionName(node);
    if (DENIED_FUNCTIONS.has(name) || DENIED_FUNCTION_PREFIXES.some((prefix) => name.startsWith(prefix))) {
      throw new SqlRefused(`function ${name} is not allowed in trigger SQL`);
    }
  } else if (node.class === 'PARAMETER') {
    const name = String(node.identifier);
    if (!(CURSOR_PARAMETERS as readonly string[]).includes(name)) {
      throw new SqlRefused(`parameter $${name} is unknown: only {cursor_start_time} and {cursor_end_time} are bound`);
    }
    parameters.add(name);
  }
}

function checkRelation(node: Node, ctes: ReadonlySet<string>, org: string): void {
  const catalog = String(node.catalog_name ?? '');
  const schema = String(node.schema_name ?? '').toLowerCase();
  const table = String(node.table_name ?? '').toLowerCase();
  const shown = [catalog, schema, table].filter(Boolean).join('.');
  if (catalog === '' && schema === '' && ctes.has(table)) return;
  if (catalog === '' && (schema === '' || schema === org) && (ORG_RELATIONS as readonly string[]).includes(table)) return;
  if (catalog === '' && schema !== '' && schema !== org && (ORG_RELATIONS as readonly string[]).includes(table)) {
    throw new SqlRefused(`relation ${shown} belongs to another org: trigger SQL reads only its own org`);
  }
  throw new SqlRefused(`relation ${shown} is not readable: use event_triggers or profiles (or ${org}.event_triggers, ${org}.profiles)`);
}

function functionName(node: unknown): string {
  return String((node as Node | undefined)?.function_name ?? '').toLowerCase();
}

async function prepareColumns(connection: Sql, sql: string, org: string): Promise<string[]> {
  await bindOrgRelations(connection, org);
  try {
    return await connection.columnNames(sql);
  } catch (error) {
    throw new SqlRefused(`the query does not bind: ${(error as Error).message.split('\n')[0]}`);
  } finally {
    await unbindOrgRelations(connection);
  }
}

function checkColumns(columns: string[], kind: QueryKind): void {
  // Rows become JS objects keyed by column name (in the DuckDB client already), where `__proto__`
  // is no key but the prototype: such a column would vanish or give the row inherited members.
  if (columns.includes('__proto__')) throw new SqlRefused('a column named __proto__ cannot be returned; give it another name (AS …)');
  switch (kind) {
    case 'trigger': {
      const first = columns.slice(0, TRIGGER_COLUMNS.length);
      if (first.join(',') !== TRIGGER_COLUMNS.join(',')) {
        throw new SqlRefused(`a trigger returns ${TRIGGER_COLUMNS.join(', ')} first, in this order; this one returns ${columns.join(', ')}`);
      }
      return;
    }
    case 'segment':
      if (!columns.includes('email')) throw new SqlRefused(`a segment returns a column named email; this one returns ${columns.join(', ')}`);
      return;
  }
}
