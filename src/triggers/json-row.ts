/** A DuckDB row as JSON: timestamps as ISO text, BIGINTs as numbers, event_raw parsed. */
export function jsonRow(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(row)) {
    if (value instanceof Date) out[name] = value.toISOString();
    else if (typeof value === 'bigint') out[name] = Number.isSafeInteger(Number(value)) ? Number(value) : String(value);
    else if (name === 'event_raw' && typeof value === 'string') out[name] = parseOrKeep(value);
    else out[name] = value;
  }
  return out;
}

function parseOrKeep(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
