/**
 * Which dialect a trigger or segment is written in. A directive in the comments before the query says
 * it (`-- dialect: snowflake` or `-- dialect: duckdb`); without one, the query is Snowflake SQL when it
 * uses a construct that DuckDB refuses and Snowflake means: a colon path (`event_raw:properties`, which
 * DuckDB reads as a prefix alias and the guard refuses), `CURRENT_TIMESTAMP()`, a call of a function
 * only Snowflake has (SNOWFLAKE_ONLY: none of them exists in DuckDB, which a test checks), a bare
 * unit in DATEDIFF/DATE_TRUNC/DATE_PART (`DATEDIFF(day, …)`), `::number`, `TABLE(FLATTEN(…))` /
 * `LATERAL FLATTEN(…)`, or a bracket path on event_raw or properties (`properties['city']`, which
 * DuckDB runs and gets wrong: the value keeps its JSON quotes). So a query DuckDB already accepts is never read as Snowflake SQL without the
 * directive, and keeps its meaning (the bracket path's meaning was the silently wrong one).
 */
import { isColonPath, nextSignificant, previousSignificant, type Token, tokenize } from './tokens.js';

export type Dialect = 'duckdb' | 'snowflake';

/** Snowflake functions DuckDB does not have (test/reactions/triggers/snowflake-translate.test.ts checks the catalog). */
export const SNOWFLAKE_ONLY = new Set([
  'iff', 'nvl', 'nvl2', 'zeroifnull', 'nullifzero', 'dateadd', 'timeadd', 'timestampadd', 'timestampdiff', 'timediff',
  'to_varchar', 'to_char', 'to_date', 'to_timestamp_ntz', 'to_timestamp_ltz', 'to_timestamp_tz', 'to_number', 'to_decimal',
  'to_numeric', 'to_double', 'to_boolean', 'try_to_number', 'try_to_decimal', 'try_to_numeric', 'try_to_double',
  'try_to_date', 'try_to_timestamp', 'try_to_timestamp_ntz', 'try_to_boolean', 'parse_json', 'try_parse_json',
  'array_size', 'get_path', 'regexp_like', 'equal_null', 'convert_timezone', 'sysdate', 'getdate', 'startswith',
  'endswith', 'charindex', 'div0', 'is_null_value', 'strip_null_value', 'boolor_agg', 'booland_agg', 'dayofweekiso',
  'regexp_substr', 'regexp_count', 'array_construct', 'object_keys', 'date_from_parts', 'add_months', 'initcap',
]);

const UNIT_FIRST = new Set(['datediff', 'date_diff', 'date_trunc', 'datetrunc', 'date_part', 'datepart']);
const UNITS = /^(years?|y|yy|yyyy|yr|yrs|quarters?|q|qtrs?|months?|mm|mon|mons|weeks?|w|wk|days?|d|dd|hours?|h|hh|hr|hrs|minutes?|mi|min|mins|seconds?|s|sec|secs|milliseconds?|ms|msec|microseconds?|us|usec)$/i;
/** `properties['city']`: DuckDB reads it as JSON with the quotes kept, so `= 'Lisbon'` matches nothing. */
const JSON_COLUMN = /^(event_raw|properties)$/i;
const DIRECTIVE = /^--\s*dialect\s*:\s*(\w+)/i;

export function dialectOf(source: string): Dialect {
  const tokens = tokenize(source);
  for (const token of tokens) {
    if (token.kind === 'space') continue;
    if (token.kind !== 'comment') break;
    const directive = DIRECTIVE.exec(token.text);
    if (directive) return directive[1]!.toLowerCase() === 'snowflake' ? 'snowflake' : 'duckdb';
  }
  return tokens.some((_, i) => snowflakeSignal(tokens, i)) ? 'snowflake' : 'duckdb';
}

function snowflakeSignal(tokens: Token[], i: number): boolean {
  const token = tokens[i]!;
  if (isColonPath(tokens, i)) return true;
  if (token.text === '[' && JSON_COLUMN.test(tokens[i - 1]?.text ?? '') && tokens[i + 1]?.kind === 'string') return true;
  if (token.text === '::') return /^number$/i.test(tokens[i + 1]?.text ?? '');
  if (token.kind !== 'word') return false;
  const open = nextSignificant(tokens, i + 1);
  if (tokens[open]?.text !== '(') return false;
  const name = token.text.toLowerCase();
  if (SNOWFLAKE_ONLY.has(name)) return true;
  if (name === 'current_timestamp') return true;
  if (name === 'flatten') return isTableFlatten(tokens, i);
  if (UNIT_FIRST.has(name)) {
    const unit = tokens[nextSignificant(tokens, open + 1)];
    return unit?.kind === 'word' && UNITS.test(unit.text) && tokens[nextSignificant(tokens, open + 2)]?.text === ',';
  }
  return false;
}

/** `LATERAL FLATTEN(` or `TABLE(FLATTEN(`: DuckDB's own flatten is a scalar function, never a table. */
function isTableFlatten(tokens: Token[], i: number): boolean {
  const before = previousSignificant(tokens, i);
  if (/^lateral$/i.test(tokens[before]?.text ?? '')) return true;
  return tokens[before]?.text === '(' && /^table$/i.test(tokens[previousSignificant(tokens, before)]?.text ?? '');
}
