/**
 * Paging of the admin lists that grow with what partners send (event types, samples, quarantine, a
 * flow's sends and decisions, trigger versions): `limit` and an opaque `cursor` in, `nextCursor` out
 * (null on the last page). Pages are read by key (keyset), never by offset into the list, so a page
 * costs the same wherever it is, and rows arriving while a client pages never make it repeat or skip
 * a row that was there when it started: every list is ordered by a key new rows cannot take between
 * two pages read.
 *
 * A cursor is base64url JSON `[1, scope, key, ties]`: `scope` is a hash of the list, the org and the
 * filters it was made for (another org's or list's cursor is a 400, not someone else's position),
 * `key` the sort key of the last row given, and `ties` how many rows with exactly that key were given
 * (quarantine rows and decisions can be identical, so tables order equal keys by rowid). Anything
 * else — garbage, a forged shape, a huge value — is a 400 `invalid_cursor`. A forged cursor with a
 * valid shape only moves the caller within this org's own list: its values are bound parameters.
 */
import { createHash } from 'node:crypto';
import { type DuckDBValue, listValue } from '@duckdb/node-api';
import { microsParam } from './database.js';
import type { Database, Sql } from './sql.js';
import { AppError } from '../core/errors.js';
import { limitOf } from '../core/route-params.js';

/**
 * A page's items stop before their JSON passes this, whatever `limit` says (always at least one item):
 * a page relayed to the owning storage shard in NATS mode must fit one message, and nats-server's
 * max_payload is 1 MiB by default. Items are at most ~40 KB (a 32 KB event with its reasons), trigger
 * versions up to 100,000 characters of SQL.
 */
export const PAGE_BYTES = 512 * 1024;
/** Cursors the service writes are under 400 characters (keys: a timestamp and ids of at most 100). */
const MAX_CURSOR_CHARS = 2048;
const MAX_KEY_TEXT = 512;
const VERSION = 1;

/** Each list's `limit` when absent, and the most it may be. */
export const PAGE_LIMITS = {
  types: { fallback: 100, max: 1000 },
  samples: { fallback: 20, max: 500 },
  pending: { fallback: 100, max: 1000 },
  quarantine: { fallback: 100, max: 1000 },
  sends: { fallback: 100, max: 1000 },
  decisions: { fallback: 100, max: 1000 },
  versions: { fallback: 100, max: 1000 },
  occurrences: { fallback: 100, max: 1000 },
} as const;

/** Query-string members of a paged list (strings: the checks are limitOf's and the cursor's own). */
export const pageQuerySchema = { limit: { type: 'string' }, cursor: { type: 'string' } } as const;

export interface SortColumn {
  /** A column of the list's FROM, NOT NULL. */
  sql: string;
  /** micros: a TIMESTAMPTZ (the cursor keeps its microseconds); integer: an INTEGER or BIGINT. */
  kind: 'micros' | 'integer' | 'text';
  desc: boolean;
}

export interface Keyset {
  columns: readonly SortColumn[];
  /** A table's rowid: it orders rows of equal keys (identical rows exist), and pages read by it. */
  rowid?: string;
}

export interface PageRequest {
  limit: number;
  after: { key: string[]; ties: number } | null;
  scope: string;
}

/** `limit` (1–max, `fallback` when absent) and the position after `cursor` (null: the first page). */
export function pageRequest(
  query: { limit?: string; cursor?: string },
  limits: { fallback: number; max: number },
  scope: readonly string[],
  keyset: Keyset,
): PageRequest {
  const scopeTag = createHash('sha256').update(scope.join('\u0000')).digest('base64url').slice(0, 16);
  const limit = limitOf(query.limit, limits.fallback, limits.max);
  return { limit, scope: scopeTag, after: query.cursor === undefined ? null : decodeCursor(query.cursor, scopeTag, keyset) };
}

function decodeCursor(raw: string, scope: string, keyset: Keyset): { key: string[]; ties: number } {
  const invalid = (why: string): never => {
    throw new AppError('invalid_cursor', `cursor ${why}: pass the nextCursor of the previous page of this list, with the same filters, or omit cursor to start from the first page`);
  };
  if (raw.length === 0 || raw.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(raw)) invalid('is not one this service wrote');
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    invalid('is not one this service wrote');
  }
  if (!Array.isArray(value) || value.length !== 4 || value[0] !== VERSION) return invalid('is not one this service wrote');
  const [, tag, key, ties] = value as unknown[];
  if (tag !== scope) invalid('belongs to another list, org or filter');
  if (!Array.isArray(key) || key.length !== keyset.columns.length) return invalid('does not fit this list');
  keyset.columns.forEach((column, i) => {
    const part = key[i];
    const ok = typeof part === 'string' && (column.kind === 'text' ? part.length <= MAX_KEY_TEXT : /^-?\d{1,18}$/.test(part));
    if (!ok) invalid('does not fit this list');
  });
  if (!Number.isSafeInteger(ties) || (ties as number) < 0) invalid('does not fit this list');
  return { key: key as string[], ties: ties as number };
}

function encodeCursor(scope: string, key: string[], ties: number): string {
  return Buffer.from(JSON.stringify([VERSION, scope, key, ties])).toString('base64url');
}

/** A key part as a bound parameter. */
function keyParam(column: SortColumn, value: string): DuckDBValue {
  if (column.kind === 'micros') return microsParam(BigInt(value));
  return column.kind === 'integer' ? BigInt(value) : value;
}

/** `c0 < $a OR (c0 = $a AND (c1 < $b OR …))` (`>` for ascending columns): rows after the key. */
function afterKey(columns: readonly SortColumn[], first: number): string {
  const [column, ...rest] = columns;
  if (!column) return 'false';
  const beyond = `${column.sql} ${column.desc ? '<' : '>'} $${first}`;
  if (rest.length === 0) return beyond;
  return `(${beyond} OR (${column.sql} = $${first} AND ${afterKey(rest, first + 1)}))`;
}

/** The key of each row as k0, k1, … (timestamps as epoch microseconds), and its rowid as `tie`. */
function keySelect(keyset: Keyset): string {
  const keys = keyset.columns.map((c, i) => `${c.kind === 'micros' ? `epoch_us(${c.sql})` : c.sql} AS k${i}`);
  return [...keys, ...(keyset.rowid ? [`${keyset.rowid} AS tie`] : [])].join(', ');
}

function orderBy(keyset: Keyset, byAlias: boolean): string {
  const keys = keyset.columns.map((c, i) => `${byAlias ? `k${i}` : c.sql} ${c.desc ? 'DESC' : 'ASC'}`);
  return [...keys, ...(keyset.rowid ? [byAlias ? 'tie' : keyset.rowid] : [])].join(', ');
}

export interface ListQuery {
  /** The answer's columns, e.g. `message_id, raw` (no trailing comma). */
  select: string;
  from: string;
  /** The list's filters over $1…$n of `params` ('true' for none). */
  where: string;
  params: DuckDBValue[];
  keyset: Keyset;
}

/** The page's rows in key order, with `columns`: at most `limit` + 1 (the extra one says there is more). */
function pageSql(list: ListQuery, page: PageRequest, columns: string): { sql: string; params: DuckDBValue[] } {
  const { keyset } = list;
  const n = list.params.length;
  if (!page.after) {
    return { sql: `SELECT ${columns} FROM ${list.from} WHERE ${list.where} ORDER BY ${orderBy(keyset, false)} LIMIT $${n + 1}`, params: [...list.params, page.limit + 1] };
  }
  const limit = `$${n + keyset.columns.length + 1}`;
  const params = [...list.params, ...keyset.columns.map((column, i) => keyParam(column, page.after!.key[i]!)), page.limit + 1];
  const after = `SELECT ${columns} FROM ${list.from} WHERE (${list.where}) AND ${afterKey(keyset.columns, n + 1)} ORDER BY ${orderBy(keyset, false)} LIMIT ${limit}`;
  if (!keyset.rowid) return { sql: after, params };
  // Rows equal to the key that were not given yet: the same key, after the first `ties` in rowid order.
  const equal = keyset.columns.map((column, i) => `${column.sql} = $${n + 1 + i}`).join(' AND ');
  const rest = `SELECT ${columns} FROM ${list.from} WHERE (${list.where}) AND ${equal} ORDER BY ${keyset.rowid} LIMIT ${limit} OFFSET $${n + keyset.columns.length + 2}`;
  return { sql: `SELECT * FROM ((${rest}) UNION ALL (${after})) ORDER BY ${orderBy(keyset, true)} LIMIT ${limit}`, params: [...params, page.after.ties] };
}

/**
 * One page of a list after the cursor, in key order, with one row more than the page when there is
 * more. The cursor's position is found by comparing key columns, which zone maps prune. With a rowid,
 * the page's rowids are found first from the key and filter columns only, then only those rows are
 * read: DuckDB would otherwise read every selected column (events' raw JSON) of every row the filters
 * keep before picking the page (decisions of one contact among 1 M: 1.0 s, against 0.15 s).
 * Both reads are one session of the database, so rowids do not move in between.
 */
export function readPage<T>(db: Pick<Database, 'exclusive'>, list: ListQuery, page: PageRequest): Promise<Array<T & Keyed>> {
  return db.exclusive((c) => readPageIn<T>(c, list, page));
}

/** readPage in a session the caller holds. */
export async function readPageIn<T>(c: Pick<Sql, 'all'>, list: ListQuery, page: PageRequest): Promise<Array<T & Keyed>> {
  const { rowid } = list.keyset;
  if (!rowid) {
    const { sql, params } = pageSql(list, page, `${list.select}, ${keySelect(list.keyset)}`);
    return c.all<T & Keyed>(sql, params);
  }
  const { sql, params } = pageSql(list, page, keySelect(list.keyset));
  const keys = await c.all<Keyed & { tie: bigint }>(sql, params);
  if (keys.length === 0) return [];
  const rows = await c.all<T & { tie: bigint }>(`SELECT ${list.select}, ${rowid} AS tie FROM ${list.from} WHERE ${rowid} IN (SELECT unnest($1::BIGINT[]))`, [
    listValue(keys.map((k) => k.tie)),
  ]);
  const byRowid = new Map(rows.map((row) => [row.tie, row]));
  return keys.flatMap((key) => {
    const row = byRowid.get(key.tie);
    return row ? [{ ...row, ...key }] : [];
  });
}

/** The key members readPage adds to each row. */
export type Keyed = Record<`k${number}`, unknown>;

/** A row without the members readPage added. */
export function withoutKey(row: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(row).filter(([name]) => name !== 'tie' && !/^k\d+$/.test(name)));
}

/**
 * The answer's items and the cursor after the last one: at most `limit` items, fewer when their JSON
 * would pass PAGE_BYTES. `rows` are in key order with one more than a page when there is more.
 */
export function pageOf<R extends Keyed, I>(rows: readonly R[], page: PageRequest, item: (row: R) => I, keyset: Keyset): { items: I[]; nextCursor: string | null } {
  const items: I[] = [];
  let bytes = 0;
  for (const row of rows.slice(0, page.limit)) {
    const next = item(row);
    bytes += Buffer.byteLength(JSON.stringify(next) ?? '') + 1;
    if (items.length > 0 && bytes > PAGE_BYTES) break;
    items.push(next);
  }
  if (items.length === rows.length) return { items, nextCursor: null };
  const keyOf = (row: R) => keyset.columns.map((_, i) => String(row[`k${i}`]));
  const last = keyOf(rows[items.length - 1]!);
  const same = (row: R) => keyOf(row).every((part, i) => part === last[i]);
  let ties = 0;
  for (let i = items.length - 1; i >= 0 && same(rows[i]!); i--) ties++;
  // A page that began inside a run of equal keys continues that run's count.
  if (page.after && page.after.key.every((part, i) => part === last[i])) ties += page.after.ties;
  return { items, nextCursor: encodeCursor(page.scope, last, ties) };
}
