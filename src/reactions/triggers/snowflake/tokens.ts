/**
 * A lexer for trigger SQL as Snowflake writes it: enough to find colon paths, `TABLE(…)` and the
 * dialect's signals without ever looking inside a literal, a quoted identifier or a comment (the same
 * rules as placeholders.ts, which the guard uses).
 */
import { skipQuotedOrComment } from '../placeholders.js';

export type TokenKind = 'word' | 'quoted' | 'string' | 'comment' | 'space' | 'punct';
export interface Token {
  kind: TokenKind;
  text: string;
}

/**
 * With `snowflakeStrings`, a single-quoted string ends as Snowflake ends it: a backslash escapes the next
 * character (`'it\'s'`), besides the doubled quote of standard SQL.
 */
export function tokenize(sql: string, snowflakeStrings = false): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < sql.length) {
    const ch = sql[i]!;
    const skipped = snowflakeStrings && ch === "'" ? closingSnowflakeQuote(sql, i) : skipQuotedOrComment(sql, i);
    if (skipped > i) {
      const kind = ch === '"' ? 'quoted' : ch === "'" || ch === '$' ? 'string' : 'comment';
      tokens.push({ kind, text: sql.slice(i, skipped) });
      i = skipped;
      continue;
    }
    const run = /^(\s+|[A-Za-z0-9_$]+)/.exec(sql.slice(i, i + 256));
    if (run) {
      tokens.push({ kind: /\s/.test(ch) ? 'space' : 'word', text: run[0] });
      i += run[0].length;
      continue;
    }
    const two = sql.slice(i, i + 2);
    const text = ['::', ':=', '=>', '||', '<=', '>=', '<>', '!='].includes(two) ? two : ch;
    tokens.push({ kind: 'punct', text });
    i += text.length;
  }
  return tokens;
}

/** The index of the next token at or after `i` that is not space or a comment. */
export function nextSignificant(tokens: Token[], i: number): number {
  while (i < tokens.length && (tokens[i]!.kind === 'space' || tokens[i]!.kind === 'comment')) i++;
  return i;
}

/** The index of the previous token before `i` that is not space or a comment, -1 if none. */
export function previousSignificant(tokens: Token[], i: number): number {
  i--;
  while (i >= 0 && (tokens[i]!.kind === 'space' || tokens[i]!.kind === 'comment')) i--;
  return i;
}

/** The text of a quoted identifier, its doubled quotes undone. */
export function unquote(token: Token): string {
  return token.text.slice(1, token.text.endsWith('"') && token.text.length > 1 ? -1 : undefined).replaceAll('""', '"');
}

/** `v:key` — a colon right after an operand and right before a key, with no space either side. */
export function isColonPath(tokens: Token[], i: number): boolean {
  const [before, colon, after] = [tokens[i - 1], tokens[i], tokens[i + 1]];
  if (colon?.text !== ':' || colon.kind !== 'punct' || !before || !after) return false;
  const operand = before.kind === 'word' || before.kind === 'quoted' || before.text === ')' || before.text === ']';
  const key = (after.kind === 'word' && /^[A-Za-z_$]/.test(after.text)) || after.kind === 'quoted';
  return operand && key;
}

function closingSnowflakeQuote(sql: string, start: number): number {
  let i = start + 1;
  while (i < sql.length) {
    if (sql[i] === '\\') i += 2;
    else if (sql[i] === "'" && sql[i + 1] === "'") i += 2;
    else if (sql[i] === "'") return i + 1;
    else i += 1;
  }
  return sql.length;
}

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f' };

/**
 * The value of a Snowflake single-quoted string: `\\` is one backslash, `\n` a newline, `\'` a quote, `\x41`
 * and `\u0041` a character, any other escaped character itself. Returned as a DuckDB literal, whose only
 * escape is the doubled quote, so the value is the same and nothing in it can end the literal.
 */
export function duckdbLiteral(snowflake: string): string {
  const body = snowflake.slice(1, snowflake.length > 1 && snowflake.endsWith("'") ? -1 : undefined);
  const value = body.replace(/''|\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|[\s\S])/g, (match, escape: string | undefined) => {
    if (escape === undefined) return "'";
    if (escape.length > 1) return String.fromCharCode(parseInt(escape.slice(1), 16));
    return ESCAPES[escape] ?? escape;
  });
  return `'${value.replaceAll("'", "''")}'`;
}
