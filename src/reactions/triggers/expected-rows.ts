/**
 * What `audiencectl trigger test` compares (issue 26, part 4): expected.json, and the rows a trigger
 * returned, as a readable diff.
 *
 * expected.json is an array of objects, or `{ "rows": [...], "ordered": true }` to compare in order. The
 * columns compared are the members the expected rows name (every row names the same ones); other columns
 * the query returns are not compared. Without `ordered`, rows compare as a multiset: the same rows, each
 * as many times, in any order. Values compare as the preview shows them (json-row.ts): `ts` as ISO text
 * with milliseconds, `event_raw` as the parsed event, numbers as numbers.
 */
import { jsonRow } from './json-row.js';

/** The columns compared when expected.json holds no row (any row returned is then unexpected). */
const DEFAULT_COLUMNS = ['identity', 'event_type'];

/** expected.json is not something this can compare against. */
export class ExpectedRefused extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'ExpectedRefused';
  }
}

export interface Expected {
  rows: Array<Record<string, unknown>>;
  columns: string[];
  ordered: boolean;
}

export interface RowDiff {
  equal: boolean;
  /** Expected, not returned (as many times as they are missing). */
  missing: string[];
  /** Returned, not expected. */
  unexpected: string[];
  /** `ordered` only: the same rows in another order: both orders, as compared. */
  order?: { expected: string[]; actual: string[] };
}

export function parseExpected(text: string): Expected {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ExpectedRefused(`not JSON: ${(error as Error).message}`);
  }
  const wrapped = isObject(value) ? value : undefined;
  if (wrapped) {
    const extra = Object.keys(wrapped).filter((k) => k !== 'rows' && k !== 'ordered');
    if (extra.length > 0) throw new ExpectedRefused(`unknown member ${extra.join(', ')}: an object holds "rows" and "ordered"`);
    if (wrapped.ordered !== undefined && typeof wrapped.ordered !== 'boolean') throw new ExpectedRefused('"ordered" is true or false');
  }
  const rows = wrapped ? wrapped.rows : value;
  if (!Array.isArray(rows) || !rows.every(isObject)) throw new ExpectedRefused('expected an array of row objects, or { "rows": [...], "ordered": true }');
  const columns = rows.length > 0 ? Object.keys(rows[0]!) : DEFAULT_COLUMNS;
  if (columns.length === 0) throw new ExpectedRefused('row 1 names no column: name the columns to compare, e.g. { "identity": "ada@example.com" }');
  for (const [i, row] of rows.entries()) {
    const names = Object.keys(row);
    if (names.length !== columns.length || !names.every((n) => columns.includes(n))) {
      throw new ExpectedRefused(`row ${i + 1} names ${names.join(', ') || 'no column'}; every row names the same columns as row 1 (${columns.join(', ')})`);
    }
  }
  return { rows, columns, ordered: wrapped?.ordered === true };
}

/** Compares the trigger's rows (as DuckDB returned them) with the expected ones, on the expected columns. */
export function compareRows(expected: Expected, returned: Array<Record<string, unknown>>): RowDiff {
  const want = expected.rows.map((row) => shown(row, expected.columns));
  const got = returned.map((row) => shown(jsonRow(row), expected.columns));
  const left = new Map<string, number>();
  for (const row of want) left.set(row, (left.get(row) ?? 0) + 1);
  const unexpected: string[] = [];
  for (const row of got) {
    const n = left.get(row) ?? 0;
    if (n > 0) left.set(row, n - 1);
    else unexpected.push(row);
  }
  const missing = [...left].flatMap(([row, n]) => Array<string>(n).fill(row));
  if (missing.length > 0 || unexpected.length > 0) return { equal: false, missing, unexpected };
  if (expected.ordered && want.some((row, i) => row !== got[i])) return { equal: false, missing, unexpected, order: { expected: want, actual: got } };
  return { equal: true, missing, unexpected };
}

/** The diff as lines: `- ` for a missing row, `+ ` for an unexpected one, as in a unified diff. */
export function formatDiff(diff: RowDiff): string[] {
  const lines = [...diff.missing.map((row) => `- ${row}    (expected, not returned)`), ...diff.unexpected.map((row) => `+ ${row}    (returned, not expected)`)];
  if (diff.order) {
    lines.push('the same rows in another order ("ordered": true); expected:');
    lines.push(...diff.order.expected.map((row, i) => `  ${i + 1}. ${row}`), 'returned:', ...diff.order.actual.map((row, i) => `  ${i + 1}. ${row}`));
  }
  return lines;
}

/** One row on the compared columns, as canonical JSON (object members sorted, so `{a,b}` equals `{b,a}`). */
function shown(row: Record<string, unknown>, columns: string[]): string {
  return JSON.stringify(Object.fromEntries(columns.map((c) => [c, Object.hasOwn(row, c) ? row[c] : null])), (_key, value: unknown) =>
    isObject(value) ? Object.fromEntries(Object.keys(value).sort().map((k) => [k, value[k]])) : value,
  );
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
