/**
 * Snowflake functions without a DuckDB function of the same meaning, each as built-in DuckDB (no
 * macro: the translation only ever produces calls the guard already allows). Functions DuckDB has with
 * another meaning are here too: ARRAY_CONTAINS (arguments the other way round), DECODE (a blob
 * function in DuckDB), CONCAT, GREATEST and LEAST (DuckDB skips NULLs), SPLIT (a 1-based list),
 * LISTAGG (DuckDB's default separator is a comma), REGEXP_REPLACE (DuckDB replaces the first match only).
 */
import { CONVERSIONS } from './conversions.js';
import { DATE_FUNCTIONS } from './date-functions.js';
import { arity, type Handler, refuse } from './handler.js';
import { asBool, asJsonContainer, asJsonValue, asNumber, asText, coercePair, kindOfAll, pathOn, type Rewriter, typed, type Typed, unify } from './kinds.js';
import { caseWhen, coalesceOf, compare, fn, integer, integerOf, type Node, nullConstant, op, operator, or, text, textOf } from './nodes.js';
import { parseSnowflakePath } from './paths.js';

const isArray = (a: Node) => compare('COMPARE_EQUAL', fn('json_type', a), text('ARRAY'));

const coalesce = (name: string, min: number, max: number): Handler => (args, r) => {
  arity(name, args, min, max);
  const branches = unify(args.map((a) => r.expr(a)));
  return typed(coalesceOf(...branches.map((b) => b.node)), kindOfAll(branches));
};

const iff: Handler = (args, r) => {
  arity('IFF', args, 3, 3, 'IFF(condition, then, else)');
  const [then, otherwise] = unify([r.expr(args[1]!), r.expr(args[2]!)]);
  return typed(caseWhen([[asBool(r.expr(args[0]!)).node, then!.node]], otherwise!.node), kindOfAll([then!, otherwise!]));
};

const nvl2: Handler = (args, r) => {
  arity('NVL2', args, 3);
  const [then, otherwise] = unify([r.expr(args[1]!), r.expr(args[2]!)]);
  return typed(caseWhen([[operator('OPERATOR_IS_NOT_NULL', r.expr(args[0]!).node), then!.node]], otherwise!.node), kindOfAll([then!, otherwise!]));
};

/** DECODE(x, search1, result1, …, default): a NULL search matches a NULL x, as in Snowflake. */
const decode: Handler = (args, r) => {
  arity('DECODE', args, 3, 255, 'DECODE(x, search, result, …, default)');
  const subject = r.expr(args[0]!);
  const checks: Array<[Node, Typed]> = [];
  for (let i = 1; i + 1 < args.length; i += 2) {
    const [left, right] = coercePair(subject, r.expr(args[i]!));
    checks.push([compare('COMPARE_NOT_DISTINCT_FROM', left.node, right.node), r.expr(args[i + 1]!)]);
  }
  const otherwise = args.length % 2 === 0 ? r.expr(args[args.length - 1]!) : typed(nullConstant(), 'other');
  const results = unify([...checks.map(([, result]) => result), otherwise]);
  return typed(caseWhen(checks.map(([when], i) => [when, results[i]!.node]), results[results.length - 1]!.node), kindOfAll(results));
};

const equalNull: Handler = (args, r) => {
  arity('EQUAL_NULL', args, 2);
  const [a, b] = coercePair(r.expr(args[0]!), r.expr(args[1]!));
  return typed(compare('COMPARE_NOT_DISTINCT_FROM', a.node, b.node), 'bool');
};

/** NULL when any argument is NULL, as Snowflake's GREATEST and LEAST are. */
const extreme = (name: 'greatest' | 'least'): Handler => (args, r) => {
  const values = unify(args.map((a) => r.expr(a)));
  const anyNull = or(...values.map((v) => operator('OPERATOR_IS_NULL', v.node)));
  return typed(caseWhen([[anyNull, nullConstant()]], fn(name, ...values.map((v) => v.node))), kindOfAll(values));
};

/** CONCAT is NULL when an argument is NULL in Snowflake; DuckDB's || is, its concat is not. */
const concat: Handler = (args, r) => {
  arity('CONCAT', args, 1, 255);
  const parts = args.map((a) => asText(r.expr(a)).node);
  return typed(parts.slice(1).reduce((acc, part) => op('||', acc, part), parts[0]!), 'text');
};

const arraySize: Handler = (args, r) => {
  arity('ARRAY_SIZE', args, 1);
  const a = asJsonContainer(r.expr(args[0]!)).node;
  return typed(caseWhen([[isArray(a), fn('json_array_length', a)]]), 'number');
};

/** ARRAY_CONTAINS(value, array): the value first, compared as a variant. */
const arrayContains: Handler = (args, r) => {
  arity('ARRAY_CONTAINS', args, 2, 2, "ARRAY_CONTAINS('x'::variant, array)");
  const value = asJsonValue(r.expr(args[0]!)).node;
  const array = asJsonContainer(r.expr(args[1]!)).node;
  return typed(caseWhen([[isArray(array), fn('list_contains', { ...fn('json_transform', array, text('["JSON"]')) }, value)]]), 'bool');
};

const getPath: Handler = (args, r) => {
  arity('GET_PATH', args, 2, 2, "GET_PATH(v, 'a.b[0]')");
  const path = textOf(args[1]);
  if (path === undefined) refuse('GET_PATH with a computed path', "write the path as a constant, GET_PATH(v, 'a.b[0]'), or v:a.b[0]");
  return pathOn(asJsonContainer(r.expr(args[0]!)), parseSnowflakePath(path));
};

const get: Handler = (args, r) => {
  arity('GET', args, 2, 2, "GET(v, 'key') or GET(v, 0)");
  const key = textOf(args[1]) ?? integerOf(args[1]);
  if (key === undefined) refuse('GET with a computed key or index', "write a constant: GET(v, 'key'), GET(v, 0)");
  return pathOn(asJsonContainer(r.expr(args[0]!)), [typeof key === 'string' ? { key } : { index: key }]);
};

const jsonExtractPathText: Handler = (args, r) => {
  arity('JSON_EXTRACT_PATH_TEXT', args, 2);
  const path = textOf(args[1]);
  if (path === undefined) refuse('JSON_EXTRACT_PATH_TEXT with a computed path', "write the path as a constant: JSON_EXTRACT_PATH_TEXT(s, 'a.b')");
  return asText(pathOn(asJsonContainer(r.expr(args[0]!)), parseSnowflakePath(path)));
};

/** REGEXP_LIKE matches the whole string (Snowflake anchors it); the parameters i, c, m and s carry over. */
const regexpLike: Handler = (args, r) => {
  arity('REGEXP_LIKE', args, 2, 3, "REGEXP_LIKE(s, 'pattern') or REGEXP_LIKE(s, 'pattern', 'i')");
  const options = args[2] === undefined ? [] : [regexOptions(args[2])];
  return typed(fn('regexp_full_match', asText(r.expr(args[0]!)).node, asText(r.expr(args[1]!)).node, ...options), 'bool');
};

function regexOptions(node: Node): Node {
  const written = textOf(node);
  if (written === undefined || !/^[icms]*$/.test(written)) refuse(`regular expression parameters ${written === undefined ? '(computed)' : `'${written}'`}`, "use 'i', 'c', 'm' or 's' as a constant");
  return text(written);
}

const regexpSubstr: Handler = (args, r) => {
  arity('REGEXP_SUBSTR', args, 2, 2, "REGEXP_SUBSTR(s, 'pattern'); for a group write regexp_extract(s, 'pattern', 1)");
  const [s, p] = [asText(r.expr(args[0]!)).node, asText(r.expr(args[1]!)).node];
  return typed(caseWhen([[fn('regexp_matches', s, p), fn('regexp_extract', s, p)]]), 'text');
};

const regexpReplace: Handler = (args, r) => {
  arity('REGEXP_REPLACE', args, 2, 3, "REGEXP_REPLACE(s, 'pattern', 'replacement')");
  const replacement = args[2] === undefined ? text('') : asText(r.expr(args[2])).node;
  return typed(fn('regexp_replace', asText(r.expr(args[0]!)).node, asText(r.expr(args[1]!)).node, replacement, text('g')), 'text');
};

const regexpCount: Handler = (args, r) => {
  arity('REGEXP_COUNT', args, 2);
  return typed(fn('len', fn('regexp_extract_all', asText(r.expr(args[0]!)).node, asText(r.expr(args[1]!)).node)), 'number');
};

const renamed = (duck: string, kind: Typed['kind'], n: number): Handler => (args, r) => {
  arity(duck, args, n);
  return typed(fn(duck, ...args.map((a) => asText(r.expr(a)).node)), kind);
};

/** SUBSTR counts a start of 0 as 1 in Snowflake; DuckDB would give one character fewer. */
const substr: Handler = (args, r, call) => {
  arity(String(call.function_name).toUpperCase(), args, 2, 3);
  const [s, ...rest] = args.map((a, i) => (i === 0 ? asText(r.expr(a)) : asNumber(r.expr(a))).node);
  const start = integerOf(rest[0]) === 0 ? integer(1) : rest[0]!;
  return typed(fn('substr', s!, start, ...rest.slice(1)), 'text');
};

const split: Handler = (args, r) => {
  arity('SPLIT', args, 2);
  return typed(fn('to_json', fn('string_split', asText(r.expr(args[0]!)).node, asText(r.expr(args[1]!)).node)), 'json');
};

const arrayToString: Handler = (args, r) => {
  arity('ARRAY_TO_STRING', args, 2);
  const array = asJsonContainer(r.expr(args[0]!)).node;
  return typed(fn('array_to_string', fn('json_transform', array, text('["VARCHAR"]')), asText(r.expr(args[1]!)).node), 'text');
};

/** ARRAY_AGG leaves NULLs out and gives an ARRAY (a variant): DuckDB's list keeps them. */
const arrayAgg: Handler = (args, r, call) => {
  arity('ARRAY_AGG', args, 1);
  const value = r.expr(args[0]!).node;
  const list = { ...fn('list', value), distinct: call.distinct === true, filter: operator('OPERATOR_IS_NOT_NULL', value) };
  return typed(fn('to_json', list), 'json');
};

const listagg: Handler = (args, r, call) => {
  arity('LISTAGG', args, 1, 2, "LISTAGG(x, ', ')");
  const separator = args[1] === undefined ? text('') : asText(r.expr(args[1])).node;
  return typed({ ...fn('string_agg', asText(r.expr(args[0]!)).node, separator), distinct: call.distinct === true }, 'text');
};

const div0: Handler = (args, r) => {
  arity('DIV0', args, 2);
  const [a, b] = args.map((x) => asNumber(r.expr(x)).node);
  return typed(caseWhen([[compare('COMPARE_EQUAL', b!, integer(0)), integer(0)]], op('/', a!, b!)), 'number');
};

const jsonOnly = (name: string, build: (v: Node) => Node, kind: Typed['kind']): Handler => (args, r) => {
  arity(name, args, 1);
  return typed(build(asJsonContainer(r.expr(args[0]!)).node), kind);
};

const charindex: Handler = (args, r) => {
  arity('CHARINDEX', args, 2, 2, 'CHARINDEX(needle, haystack)');
  return typed(fn('strpos', asText(r.expr(args[1]!)).node, asText(r.expr(args[0]!)).node), 'number');
};

export const FUNCTIONS: Record<string, Handler> = {
  ...DATE_FUNCTIONS,
  ...CONVERSIONS,
  iff, nvl2, decode, equal_null: equalNull,
  nvl: coalesce('NVL', 2, 2), ifnull: coalesce('IFNULL', 2, 2), coalesce: coalesce('COALESCE', 1, 255),
  zeroifnull: (args, r) => (arity('ZEROIFNULL', args, 1), typed(coalesceOf(asNumber(r.expr(args[0]!)).node, integer(0)), 'number')),
  nullifzero: (args, r) => (arity('NULLIFZERO', args, 1), typed(fn('nullif', asNumber(r.expr(args[0]!)).node, integer(0)), 'number')),
  greatest: extreme('greatest'), least: extreme('least'), concat, div0,
  array_size: arraySize, array_contains: arrayContains, get_path: getPath, get, json_extract_path_text: jsonExtractPathText,
  array_to_string: arrayToString, array_agg: arrayAgg, listagg, split,
  is_null_value: jsonOnly('IS_NULL_VALUE', (v) => compare('COMPARE_EQUAL', fn('json_type', v), text('NULL')), 'bool'),
  strip_null_value: jsonOnly('STRIP_NULL_VALUE', (v) => caseWhen([[compare('COMPARE_NOTEQUAL', fn('json_type', v), text('NULL')), v]]), 'json'),
  object_keys: jsonOnly('OBJECT_KEYS', (v) => fn('to_json', fn('json_keys', v)), 'json'),
  array_construct: (args, r) => typed(fn('json_array', ...args.map((a) => asJsonValue(r.expr(a)).node)), 'json'),
  regexp_like: regexpLike, rlike: regexpLike, regexp_substr: regexpSubstr, regexp_replace: regexpReplace, regexp_count: regexpCount,
  startswith: renamed('starts_with', 'bool', 2), endswith: renamed('ends_with', 'bool', 2), charindex,
  substr, substring: substr,
  boolor_agg: (args, r) => (arity('BOOLOR_AGG', args, 1), typed(fn('bool_or', asBool(r.expr(args[0]!)).node), 'bool')),
  booland_agg: (args, r) => (arity('BOOLAND_AGG', args, 1), typed(fn('bool_and', asBool(r.expr(args[0]!)).node), 'bool')),
  flatten: () => refuse('FLATTEN as a scalar function', 'FLATTEN is a table: FROM event_triggers e, LATERAL FLATTEN(input => e.properties:items) f, then f.value:sku'),
  typeof: () => refuse('TYPEOF', "compare json_type(v) with 'VARCHAR', 'BIGINT', 'UBIGINT', 'DOUBLE', 'BOOLEAN', 'OBJECT', 'ARRAY' or 'NULL'"),
  hash: () => refuse('HASH', 'its values differ from DuckDB\'s hash: for a stable split write md5(x)'),
  initcap: () => refuse('INITCAP', 'write upper(left(s, 1)) || lower(substr(s, 2))'),
  object_construct: () => refuse('OBJECT_CONSTRUCT', "write json_object('key', value, …) (it keeps NULL values)"),
};

/** The Rewriter's view of one call: undefined when Snowflake and DuckDB mean the same by the name. */
export function snowflakeFunction(name: string): Handler | undefined {
  return Object.hasOwn(FUNCTIONS, name) ? FUNCTIONS[name] : undefined;
}

export type { Rewriter };
