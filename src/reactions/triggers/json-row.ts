/**
 * A DuckDB row as JSON: timestamps as ISO text, BIGINTs as numbers, event_raw parsed. Column names come
 * from trigger SQL, so they become keys through Object.fromEntries (own members, whatever the name).
 */
export function jsonRow(row: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(row).map(([name, value]) => [name, jsonValue(name, value)]));
}

function jsonValue(name: string, value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : String(value);
  if (name === 'event_raw' && typeof value === 'string') return parseOrKeep(value);
  return value;
}

function parseOrKeep(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
