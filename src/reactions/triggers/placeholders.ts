/**
 * `{cursor_start_time}` and `{cursor_end_time}` in trigger SQL become the named parameters
 * `$cursor_start_time` / `$cursor_end_time`, so the window is bound, never spliced (SPEC 7).
 * Text inside string literals, quoted identifiers and comments is left alone.
 */
export const CURSOR_PARAMETERS = ['cursor_start_time', 'cursor_end_time'] as const;
export type CursorParameter = (typeof CURSOR_PARAMETERS)[number];

const PLACEHOLDER = /^\{(cursor_start_time|cursor_end_time)\}/;

export function bindPlaceholders(sql: string): string {
  let out = '';
  let i = 0;
  while (i < sql.length) {
    const skipped = skipQuotedOrComment(sql, i);
    if (skipped > i) {
      out += sql.slice(i, skipped);
      i = skipped;
      continue;
    }
    const match = PLACEHOLDER.exec(sql.slice(i, i + 20));
    if (match) {
      out += '$' + match[1];
      i += match[0].length;
      continue;
    }
    out += sql[i];
    i += 1;
  }
  return out;
}

/** The index after a literal, quoted identifier or comment starting at `i`, or `i` when none starts there. */
export function skipQuotedOrComment(sql: string, i: number): number {
  const ch = sql[i];
  if (ch === "'" || ch === '"') return closingQuote(sql, i, ch);
  if (sql.startsWith('--', i)) {
    const end = sql.indexOf('\n', i);
    return end === -1 ? sql.length : end;
  }
  if (sql.startsWith('/*', i)) {
    const end = sql.indexOf('*/', i + 2);
    return end === -1 ? sql.length : end + 2;
  }
  const dollar = /^\$([A-Za-z_]*)\$/.exec(sql.slice(i, i + 64));
  if (dollar) {
    const end = sql.indexOf(dollar[0], i + dollar[0].length);
    return end === -1 ? sql.length : end + dollar[0].length;
  }
  return i;
}

/** A quote is escaped by doubling it ('it''s'), as in standard SQL. */
function closingQuote(sql: string, start: number, quote: string): number {
  let i = start + 1;
  while (i < sql.length) {
    if (sql[i] === quote) {
      if (sql[i + 1] === quote) i += 2;
      else return i + 1;
    } else i += 1;
  }
  return sql.length;
}
