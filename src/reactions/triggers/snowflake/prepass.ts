/**
 * The lexical half of the Snowflake translation: what DuckDB's parser cannot read is rewritten into
 * what it can, before the tree is rewritten (rewrite.ts).
 * - Colon paths become bracket steps: `e.event_raw:properties.city` → `e.event_raw['properties']['city']`,
 *   `v:"First Name"` → `v['First Name']`. A key becomes a string literal with its quotes doubled, so
 *   no key can end the literal (`v:"a'); select …"` is the key `a'); select …`).
 * - `TABLE(FLATTEN(…))` loses its `TABLE(…)`; `::array` and `::decimal` without a precision name
 *   Snowflake's types (DuckDB reads the first as a syntax error, the second as DECIMAL(18,3)).
 * - Strings lose Snowflake's backslash escapes (`'\\.'` is `\.` there, two backslashes in DuckDB).
 * - Constructs DuckDB cannot parse and Snowflake has are refused here with a form that works.
 * A comment inside a block comment is refused: DuckDB nests block comments and Snowflake does not, so
 * the two would read different queries.
 */
import { SqlRefused } from '../sql-tree.js';
import { duckdbLiteral, isColonPath, nextSignificant, previousSignificant, type Token, tokenize, unquote } from './tokens.js';

const UNSUPPORTED: Array<[RegExp, string]> = [
  [/^(rlike|regexp)$/i, '`a RLIKE pattern` is not translated: write REGEXP_LIKE(a, pattern)'],
  [/^minus$/i, '`MINUS` is not translated: write EXCEPT'],
  [/^connect$/i, '`CONNECT BY` is not translated: write WITH RECURSIVE'],
  [/^match_recognize$/i, '`MATCH_RECOGNIZE` is not translated: write window functions (LAG, LEAD) with QUALIFY'],
];

export function prepass(sql: string): string {
  const tokens = tokenize(sql, true);
  const closers = matchingParens(tokens);
  const dropped = new Set<number>();
  let out = '';
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (dropped.has(i)) continue;
    if (token.kind === 'comment' && token.text.startsWith('/*') && token.text.indexOf('/*', 2) !== -1) {
      throw new SqlRefused('a block comment inside a block comment is refused (DuckDB nests them, Snowflake does not): close the first comment before opening another');
    }
    refuseUnsupported(tokens, i);
    if (token.kind === 'string' && token.text.startsWith("'")) {
      out += duckdbLiteral(token.text);
      continue;
    }
    if (isColonPath(tokens, i)) {
      const [steps, next] = pathSteps(tokens, i);
      out += steps;
      i = next - 1;
      continue;
    }
    if (token.text === ':' && token.kind === 'punct' && /^(word|quoted)$/.test(tokens[previousSignificant(tokens, i)]?.kind ?? '') && !insideBrackets(tokens, i)) {
      // DuckDB would read `name: expr` as a prefix alias (`expr AS name`), silently.
      throw new SqlRefused(`\`${tokens[previousSignificant(tokens, i)]!.text}:\` followed by a space is not a path: write the path with no spaces, v:key.sub`);
    }
    if (token.kind === 'word' && /^table$/i.test(token.text) && isTableFunctionWrapper(tokens, i)) {
      const open = nextSignificant(tokens, i + 1);
      dropped.add(open).add(closers.get(open)!);
      continue;
    }
    if (token.text === '::') {
      const type = tokens[i + 1];
      if (type && /^array$/i.test(type.text)) {
        out += '::"array"';
        i++;
        continue;
      }
      if (type && /^(decimal|numeric)$/i.test(type.text) && tokens[nextSignificant(tokens, i + 2)]?.text !== '(') {
        out += '::number';
        i++;
        continue;
      }
    }
    out += token.text;
  }
  return out;
}

/** The bracket steps of the colon path starting at tokens[i] (the colon), and the index after it. */
function pathSteps(tokens: Token[], i: number): [string, number] {
  let out = '';
  let at = i;
  for (;;) {
    const sep = tokens[at]?.text;
    const key = tokens[at + 1];
    if ((sep === ':' || sep === '.') && key && (key.kind === 'word' || key.kind === 'quoted') && (sep === '.' || isColonPath(tokens, at))) {
      out += `[${literal(key.kind === 'quoted' ? unquote(key) : key.text)}]`;
      at += 2;
      continue;
    }
    if (sep === '[') {
      // An index or a quoted key: copied through its closing bracket; the path goes on after it.
      const close = closingBracket(tokens, at);
      for (let j = at; j <= close; j++) out += tokens[j]!.text;
      at = close + 1;
      continue;
    }
    return [out, at];
  }
}

function literal(key: string): string {
  if (key === '') throw new SqlRefused('an empty path key (`v:""`) is not translated: name the key');
  return `'${key.replaceAll("'", "''")}'`;
}

function closingBracket(tokens: Token[], open: number): number {
  let depth = 0;
  for (let j = open; j < tokens.length; j++) {
    if (tokens[j]!.text === '[') depth++;
    else if (tokens[j]!.text === ']' && --depth === 0) return j;
  }
  throw new SqlRefused('a `[` in a path is never closed');
}

function matchingParens(tokens: Token[]): Map<number, number> {
  const closers = new Map<number, number>();
  const open: number[] = [];
  tokens.forEach((token, i) => {
    if (token.text === '(') open.push(i);
    else if (token.text === ')' && open.length > 0) closers.set(open.pop()!, i);
  });
  return closers;
}

/** `FROM TABLE(FLATTEN(…))`, `, TABLE(…)`, `JOIN TABLE(…)`: the wrapper DuckDB does not know. */
function isTableFunctionWrapper(tokens: Token[], i: number): boolean {
  const before = tokens[previousSignificant(tokens, i)]?.text ?? '';
  const open = nextSignificant(tokens, i + 1);
  return tokens[open]?.text === '(' && /^(from|join|lateral|,)$/i.test(before);
}

function refuseUnsupported(tokens: Token[], i: number): void {
  const token = tokens[i]!;
  if (token.kind !== 'word') return;
  for (const [word, message] of UNSUPPORTED) if (word.test(token.text)) throw new SqlRefused(message);
  if (/^i?like$/i.test(token.text) && /^(any|all)$/i.test(tokens[nextSignificant(tokens, i + 1)]?.text ?? '')) {
    throw new SqlRefused(`\`${token.text.toUpperCase()} ANY (…)\` is not translated: write (a ${token.text.toUpperCase()} 'x%' OR a ${token.text.toUpperCase()} 'y%')`);
  }
  if (/^top$/i.test(token.text) && /^select$/i.test(tokens[previousSignificant(tokens, i)]?.text ?? '')) {
    throw new SqlRefused('`SELECT TOP n` is not translated: write LIMIT n at the end');
  }
}

function insideBrackets(tokens: Token[], i: number): boolean {
  let depth = 0;
  for (let j = 0; j < i; j++) {
    const text = tokens[j]!.text;
    if (text === '[' || text === '{') depth++;
    else if ((text === ']' || text === '}') && depth > 0) depth--;
  }
  return depth > 0;
}
