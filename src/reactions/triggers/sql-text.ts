/**
 * Checks of the SQL text that the syntax tree cannot make, because DuckDB has already turned the
 * construct into something else by then.
 *
 * `SELECT event_raw:properties` is DuckDB's prefix alias (`alias: expression`): the tree holds a column
 * `properties` named `event_raw`, exactly as if `properties AS event_raw` had been written, and the
 * trigger silently returns the wrong event_raw. Data engineers coming from Snowflake mean a JSON path: such
 * a query is read as Snowflake SQL (snowflake/dialect.ts), and a query read as DuckDB SQL (`-- dialect:
 * duckdb`, or a colon with a space after it) is refused here with the DuckDB way, parenthesized. Colons that are not prefix aliases stay
 * allowed: `::` casts, `:=` named arguments, slices inside `[…]`, struct and map literals inside `{…}`,
 * and lambda parameters (`lambda x: x + 1`).
 */
import { skipQuotedOrComment } from './placeholders.js';
import { SqlRefused } from './sql-tree.js';

type Token = { kind: 'word' | 'quoted' | 'literal' | 'punct'; text: string };

export function checkText(sql: string): void {
  const tokens = tokenize(sql);
  let brackets = 0;
  tokens.forEach((token, i) => {
    if (token.kind !== 'punct') return;
    if (token.text === '[' || token.text === '{') brackets++;
    else if (token.text === ']' || token.text === '}') brackets = Math.max(0, brackets - 1);
    else if (token.text === ':' && brackets === 0) {
      const name = tokens[i - 1];
      if ((name?.kind === 'word' || name?.kind === 'quoted') && !isLambdaParameter(tokens, i - 1)) {
        const path = tokens[i + 1]?.text ?? '…';
        throw new SqlRefused(
          `\`${name.text}:${path}\` is DuckDB's prefix alias (it names the expression ${path} "${name.text}"), not a JSON path ` +
            `as in Snowflake. For JSON write (${name.text}->>'$.${path}') (text) or (${name.text}->'$.${path}') (JSON), in parentheses ` +
            `because -> and ->> bind more loosely than AND and comparisons, e.g. (event_raw->>'$.properties.city') = 'Lisbon'; ` +
            `or read the query as Snowflake SQL with a first line -- dialect: snowflake; for an alias write \`expression AS name\``,
        );
      }
    }
  });
}

/** The word at `index` is a parameter of `lambda a, b:`. */
function isLambdaParameter(tokens: Token[], index: number): boolean {
  for (let i = index; i >= 0; i--) {
    const token = tokens[i]!;
    if (token.kind === 'word' && token.text.toLowerCase() === 'lambda') return true;
    if (token.kind !== 'word' && token.text !== ',') return false;
  }
  return false;
}

function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < sql.length) {
    const ch = sql[i]!;
    const skipped = skipQuotedOrComment(sql, i);
    if (skipped > i) {
      if (ch === '"') tokens.push({ kind: 'quoted', text: sql.slice(i + 1, skipped - 1) });
      else if (ch === "'" || ch === '$') tokens.push({ kind: 'literal', text: sql.slice(i, skipped) });
      i = skipped;
    } else if (/\s/.test(ch)) {
      i++;
    } else if (/[A-Za-z0-9_]/.test(ch)) {
      const word = /^[A-Za-z0-9_]+/.exec(sql.slice(i))![0];
      tokens.push({ kind: 'word', text: word });
      i += word.length;
    } else {
      const two = sql.slice(i, i + 2);
      const text = two === '::' || two === ':=' ? two : ch;
      tokens.push({ kind: 'punct', text });
      i += text.length;
    }
  }
  return tokens;
}
