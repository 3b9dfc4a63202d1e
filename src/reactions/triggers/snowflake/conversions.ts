/**
 * Snowflake's conversion functions. NUMBER without a precision is NUMBER(38,0), and Snowflake rounds
 * half away from zero into it (`'12.5'::number` is 13), as DuckDB's DECIMAL(38,0) cast does; the
 * integer types are NUMBER(38,0) too. TO_CHAR's date formats become strftime's.
 */
import { SqlRefused } from '../sql-tree.js';
import { strftimeFormat } from './formats.js';
import { arity, type Handler, refuse } from './handler.js';
import { asJsonValue, asText, type Rewriter, typed, type Typed } from './kinds.js';
import { cast, type DuckType, fn, integerOf, type Node, text, textOf } from './nodes.js';

/** `fn(x, format)` with the format translated: strftime (TO_CHAR) or strptime (TO_DATE, TO_TIMESTAMP). */
export function formatted(r: Rewriter, args: Node[], duck: 'strftime' | 'strptime', tryCast = false): Node {
  const format = textOf(args[1]);
  if (format === undefined) throw new SqlRefused('a format must be a string constant here, e.g. \'YYYY-MM-DD HH24:MI:SS\'');
  const value = r.expr(args[0]!);
  if (duck === 'strftime') {
    const when = value.kind === 'json' || value.kind === 'text' ? cast(asText(value).node, 'TIMESTAMP') : value.node;
    return fn('strftime', when, text(strftimeFormat(format)));
  }
  return fn(tryCast ? 'try_strptime' : 'strptime', asText(value).node, text(strftimeFormat(format)));
}

const toVarchar: Handler = (args, r) => {
  arity('TO_VARCHAR', args, 1, 2, "TO_VARCHAR(x) or TO_VARCHAR(ts, 'YYYY-MM-DD')");
  if (args.length === 1) return castTo(r.expr(args[0]!), 'VARCHAR');
  if (/[09$]/.test(textOf(args[1]) ?? '')) refuse(`TO_VARCHAR with the number format '${textOf(args[1])}'`, "write printf('%.2f', x)");
  return typed(formatted(r, args, 'strftime'), 'text');
};

/** NUMBER(p, s) from the written precision and scale, 38 and 0 when not written. */
export function numberType(name: string, precision: Node | undefined, scale: Node | undefined): DuckType {
  const p = precision === undefined ? 38 : integerOf(precision);
  const s = scale === undefined ? 0 : integerOf(scale);
  if (p === undefined || s === undefined || p < 1 || p > 38 || s < 0 || s > p) {
    throw new SqlRefused(`${name}: precision and scale must be constants with 1 ≤ precision ≤ 38 and 0 ≤ scale ≤ precision, e.g. ${name}(x, 10, 2)`);
  }
  return { decimal: [p, s] };
}

const toNumber = (name: string, tryCast: boolean): Handler => (args, r) => {
  arity(name, args, 1, 3, `${name}(x) or ${name}(x, 10, 2)`);
  if (args[1] !== undefined && textOf(args[1]) !== undefined) refuse(`${name} with a format`, `write ${name}(replace(x, ',', ''), 10, 2)`);
  return castTo(r.expr(args[0]!), numberType(name, args[1], args[2]), tryCast);
};

const simpleCast = (name: string, to: DuckType, tryCast: boolean): Handler => (args, r) => {
  arity(name, args, 1);
  return castTo(r.expr(args[0]!), to, tryCast);
};

/** A cast as Snowflake means it: a variant to VARCHAR is its text, not its JSON; strings to DATE may hold a time. */
export function castTo(t: Typed, to: DuckType, tryCast = false): Typed {
  const kind = to === 'VARCHAR' ? 'text' : to === 'BOOLEAN' ? 'bool' : to === 'DOUBLE' || typeof to === 'object' ? 'number' : 'other';
  if (to === 'JSON') return asJsonValue(t);
  if (to === 'VARCHAR' && t.kind === 'json') return asText(t);
  if (to === 'DATE' && (t.kind === 'json' || t.kind === 'text')) return typed(cast(cast(asText(t).node, 'TIMESTAMP', tryCast), 'DATE', tryCast), kind);
  return typed(cast(t.node, to, tryCast), kind);
}

const parseJson = (tryCast: boolean): Handler => (args, r) => {
  arity(tryCast ? 'TRY_PARSE_JSON' : 'PARSE_JSON', args, 1);
  return typed(cast(asText(r.expr(args[0]!)).node, 'JSON', tryCast), 'json');
};

export const CONVERSIONS: Record<string, Handler> = {
  to_varchar: toVarchar, to_char: toVarchar,
  to_number: toNumber('TO_NUMBER', false), to_decimal: toNumber('TO_DECIMAL', false), to_numeric: toNumber('TO_NUMERIC', false),
  try_to_number: toNumber('TRY_TO_NUMBER', true), try_to_decimal: toNumber('TRY_TO_DECIMAL', true), try_to_numeric: toNumber('TRY_TO_NUMERIC', true),
  to_double: simpleCast('TO_DOUBLE', 'DOUBLE', false), try_to_double: simpleCast('TRY_TO_DOUBLE', 'DOUBLE', true),
  to_boolean: simpleCast('TO_BOOLEAN', 'BOOLEAN', false), try_to_boolean: simpleCast('TRY_TO_BOOLEAN', 'BOOLEAN', true),
  parse_json: parseJson(false), try_parse_json: parseJson(true),
};
