/**
 * Answers for scripts (JSON, pretty-printed) or for people (aligned tables). JSON is the default when
 * stdout is not a terminal, so `… > file.json` and pipes into jq get JSON without a switch.
 */
import { terminalSafe } from './terminal-text.js';

export type Format = 'json' | 'table';

/** The widest a cell may be before it is cut (with …). */
const CELL_MAX = 48;

export function formatAnswer(answer: unknown, format: Format): string {
  if (format === 'json' || typeof answer !== 'object' || answer === null) return typeof answer === 'string' ? answer : JSON.stringify(answer, null, 2);
  if (Array.isArray(answer)) return rowsTable(answer);
  // A list answer: its one array of objects is the table, the other members (nextCursor, window…) lines above it.
  const entries = Object.entries(answer);
  const lists = entries.filter(([, value]) => Array.isArray(value) && value.every((item) => typeof item === 'object' && item !== null));
  if (lists.length === 1) {
    const [listName, rows] = lists[0]!;
    const rest = entries.filter(([name]) => name !== listName && name !== 'nextCursor');
    const head = rest.length > 0 ? `${keyValues(rest)}\n\n` : '';
    return `${head}${rowsTable(rows as unknown[])}`;
  }
  return keyValues(entries);
}

/** One row per item; the columns are the members of the items, in first-seen order. */
function rowsTable(rows: unknown[]): string {
  if (rows.length === 0) return '(none)';
  const columns: string[] = [];
  for (const row of rows) for (const key of Object.keys(row as object)) if (!columns.includes(key)) columns.push(key);
  const cells = rows.map((row) => columns.map((column) => cell((row as Record<string, unknown>)[column])));
  return aligned([columns.map((c) => c.toUpperCase()), ...cells]);
}

/** A single resource: `name  value` per member, nested objects flattened one level (`credentials.production`). */
function keyValues(entries: Array<[string, unknown]>): string {
  const lines: string[][] = [];
  for (const [name, value] of entries) {
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [inner, innerValue] of Object.entries(value)) lines.push([`${name}.${inner}`, cell(innerValue, Number.POSITIVE_INFINITY)]);
    } else lines.push([name, cell(value, Number.POSITIVE_INFINITY)]);
  }
  return aligned(lines);
}

function cell(value: unknown, max = CELL_MAX): string {
  const text = value === null || value === undefined ? '-' : typeof value === 'object' ? JSON.stringify(value) : String(value);
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** Escaped before measuring (terminal-text.ts), so a cell holding a control keeps its column straight. */
function aligned(raw: string[][]): string {
  const lines = raw.map((line) => line.map(terminalSafe));
  const widths: number[] = [];
  for (const line of lines) line.forEach((text, i) => (widths[i] = Math.max(widths[i] ?? 0, text.length)));
  return lines.map((line) => line.map((text, i) => (i === line.length - 1 ? text : text.padEnd(widths[i]!))).join('  ')).join('\n');
}
