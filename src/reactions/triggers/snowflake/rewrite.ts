/**
 * The tree half of the Snowflake translation: walks DuckDB's parse of the pre-passed query and rewrites
 * Snowflake's meaning into DuckDB's, expression by expression, knowing what each holds (kinds.ts):
 * paths become json_extract / json_extract_string, casts take Snowflake's types, functions are
 * translated (functions.ts), FLATTEN becomes json_each (flatten.ts), and a variant is unwrapped where
 * Snowflake would unwrap it. Anything not named here is kept as DuckDB parsed it; the guard then checks
 * the result like any query.
 */
import { SqlRefused } from '../sql-tree.js';
import { castTo, numberType } from './conversions.js';
import { type Flattened, flattenRef } from './flatten.js';
import { snowflakeFunction } from './functions.js';
import { asBool, asNumber, asText, coercePair, coerceTo, kindOfAll, type Kind, pathOn, realias, type Rewriter, typed, type Typed, unify } from './kinds.js';
import { cast, type DuckType, integerOf, type Node, text, textOf } from './nodes.js';
import { stepOf } from './paths.js';

const ARITHMETIC = new Set(['+', '-', '*', '/', '//', '%', '**', '^']);
const TEXT_OPERATORS = new Set(['||', '~~', '!~~', '~~*', '!~~*', '^@']);
/** Functions whose result may be a variant when their argument is: the argument is kept as JSON. */
const PASS_THROUGH = new Set(['any_value', 'first', 'last', 'first_value', 'last_value', 'lag', 'lead', 'nth_value', 'arbitrary', 'count', 'mode']);
const NUMERIC = new Set(['sum', 'avg', 'mean', 'abs', 'round', 'floor', 'ceil', 'ceiling', 'sqrt', 'power', 'pow', 'ln', 'log', 'log10', 'exp', 'sign', 'mod', 'trunc', 'stddev', 'stddev_samp', 'stddev_pop', 'variance', 'var_samp', 'var_pop', 'median']);
const ORDERED = new Set(['min', 'max', 'arg_min', 'arg_max', 'min_by', 'max_by']);
const TEXT_RESULTS = new Set(['lower', 'upper', 'trim', 'ltrim', 'rtrim', 'replace', 'left', 'right', 'lpad', 'rpad', 'reverse', 'split_part', 'md5', 'concat_ws', 'string_agg', 'strftime', 'repeat']);
const NUMBER_RESULTS = new Set([...NUMERIC, 'length', 'len', 'count', 'count_if', 'strpos', 'instr', 'date_diff', 'datediff', 'row_number', 'rank', 'dense_rank', 'ntile', 'year', 'month', 'day', 'hour', 'minute', 'second', 'dayofweek', 'dayofyear', 'week', 'quarter']);
const EQUALITIES = new Set(['COMPARE_EQUAL', 'COMPARE_NOTEQUAL', 'COMPARE_DISTINCT_FROM', 'COMPARE_NOT_DISTINCT_FROM']);
const UNORDERABLE = "a variant (a path without a cast) cannot be sorted as Snowflake sorts it (numbers by value, text by text): cast it, e.g. ORDER BY v:price::number or v:name::string";

export class SnowflakeRewriter implements Rewriter {
  private readonly jsonNames = new Set(['event_raw', 'properties']);
  private readonly flattens = new Set<string>();

  statement(statement: Node): Node {
    return { ...statement, node: this.query(statement.node as Node) };
  }

  private query(node: Node): Node {
    if (node.type !== 'SELECT_NODE') return this.members(node);
    const cteMap = this.any(node.cte_map) as Node;
    const fromTable = this.table(node.from_table as Node).ref;
    const selectList = (node.select_list as Node[]).map((item) => {
      const out = this.expr(item);
      if (out.kind === 'json' && item.alias) this.jsonNames.add(String(item.alias).toLowerCase());
      return out.node;
    });
    const condition = (member: unknown) => (member ? asBool(this.expr(member as Node)).node : member);
    return {
      ...this.members(node, ['cte_map', 'from_table', 'select_list', 'where_clause', 'having', 'qualify']),
      cte_map: cteMap, from_table: fromTable, select_list: selectList,
      where_clause: condition(node.where_clause), having: condition(node.having), qualify: condition(node.qualify),
    };
  }

  private table(ref: Node): Flattened {
    switch (ref.type) {
      case 'JOIN': {
        const left = this.table(ref.left as Node);
        const right = this.table(ref.right as Node);
        if (left.outer) throw new SqlRefused('FLATTEN(… outer => TRUE) must follow the table it flattens: FROM event_triggers e, LATERAL FLATTEN(input => e.properties:items, outer => TRUE) f');
        const join = { ...ref, left: left.ref, right: right.ref, condition: ref.condition ? asBool(this.expr(ref.condition as Node)).node : ref.condition };
        if (!right.outer) return { ref: join, outer: false };
        return { ref: { ...join, join_type: 'LEFT', ref_type: 'REGULAR', condition: cast(text('t'), 'BOOLEAN') }, outer: false };
      }
      case 'TABLE_FUNCTION': {
        if (String((ref.function as Node).function_name).toLowerCase() !== 'flatten') return { ref: this.members(ref), outer: false };
        const flattened = flattenRef(ref, this);
        if (ref.alias) this.flattens.add(String(ref.alias).toLowerCase());
        this.jsonNames.add('value').add('this');
        return flattened;
      }
      default:
        return { ref: this.members(ref), outer: false };
    }
  }

  expr(node: Node): Typed {
    const out = this.rewrite(node);
    return node.alias && out.node.alias !== node.alias ? realias(out, String(node.alias)) : out;
  }

  private rewrite(node: Node): Typed {
    switch (node.class) {
      case 'COLUMN_REF':
        return typed(node, this.columnKind(node.column_names as string[]));
      case 'CONSTANT':
        return typed(node, constantKind(node));
      case 'CAST':
        return this.cast(node);
      case 'COMPARISON': {
        const [left, right] = coercePair(this.expr(node.left as Node), this.expr(node.right as Node));
        if (left.kind === 'json' && right.kind === 'json' && !EQUALITIES.has(String(node.type))) throw new SqlRefused(`comparing two variants: ${UNORDERABLE.split(': ')[1]}`);
        return typed({ ...node, left: left.node, right: right.node }, 'bool');
      }
      case 'BETWEEN': {
        const [lower, upper] = [this.expr(node.lower as Node), this.expr(node.upper as Node)];
        const input = coerceTo(this.expr(node.input as Node), kindOfAll([lower, upper]) === 'other' ? 'text' : kindOfAll([lower, upper]));
        if (input.kind === 'json') throw new SqlRefused(`BETWEEN of variants: ${UNORDERABLE.split(': ')[1]}`);
        return typed({ ...node, input: input.node, lower: coerceTo(lower, input.kind).node, upper: coerceTo(upper, input.kind).node }, 'bool');
      }
      case 'CONJUNCTION':
        return typed({ ...node, children: (node.children as Node[]).map((c) => asBool(this.expr(c)).node) }, 'bool');
      case 'CASE': {
        const checks = node.case_checks as Array<{ when_expr: Node; then_expr: Node }>;
        const results = unify([...checks.map((c) => this.expr(c.then_expr)), this.expr(node.else_expr as Node)]);
        const caseChecks = checks.map((c, i) => ({ when_expr: asBool(this.expr(c.when_expr)).node, then_expr: results[i]!.node }));
        return typed({ ...node, case_checks: caseChecks, else_expr: results[results.length - 1]!.node }, kindOfAll(results));
      }
      case 'OPERATOR':
        return this.operator(node);
      case 'FUNCTION':
        return this.function(node);
      case 'WINDOW':
        return this.window(node);
      case 'SUBQUERY': {
        const child = node.child ? asText(this.expr(node.child as Node)).node : node.child;
        return typed({ ...this.members(node, ['child']), child }, node.subquery_type === 'SCALAR' ? 'other' : 'bool');
      }
      default:
        return typed(this.members(node), 'other');
    }
  }

  private columnKind(names: string[]): Kind {
    const last = names[names.length - 1]!.toLowerCase();
    if (names.length >= 2 && this.flattens.has(names[names.length - 2]!.toLowerCase())) return last === 'value' || last === 'this' ? 'json' : 'other';
    return this.jsonNames.has(last) ? 'json' : 'other';
  }

  private cast(node: Node): Typed {
    const child = this.expr(node.child as Node);
    const to = snowflakeType(node.cast_type as Node);
    if (to === undefined) return typed({ ...node, child: child.node }, 'other');
    return castTo(child, to, node.try_cast === true);
  }

  private operator(node: Node): Typed {
    const children = node.children as Node[];
    switch (node.type) {
      case 'ARRAY_EXTRACT': {
        const key = textOf(children[1]) ?? integerOf(children[1]);
        if (key === undefined) throw new SqlRefused("a path step must be a constant key or index, v['key'] or v[0]: for a computed one write GET_PATH(v, 'a.b') with the path written out");
        return pathOn(this.expr(children[0]!), [stepOf(key)]);
      }
      case 'COMPARE_IN':
      case 'COMPARE_NOT_IN': {
        const [input, ...list] = children.map((c) => this.expr(c));
        const listKind = kindOfAll(list);
        const subject = coerceTo(input!, listKind === 'other' ? 'text' : listKind);
        return typed({ ...node, children: [subject.node, ...list.map((item) => coerceTo(item, subject.kind).node)] }, 'bool');
      }
      case 'OPERATOR_NOT':
        return typed({ ...node, children: children.map((c) => asBool(this.expr(c)).node) }, 'bool');
      case 'OPERATOR_COALESCE': {
        const branches = unify(children.map((c) => this.expr(c)));
        return typed({ ...node, children: branches.map((b) => b.node) }, kindOfAll(branches));
      }
      case 'OPERATOR_IS_NULL':
      case 'OPERATOR_IS_NOT_NULL':
        return typed({ ...node, children: children.map((c) => this.expr(c).node) }, 'bool');
      default:
        return typed({ ...node, children: children.map((c) => asText(this.expr(c)).node) }, 'other');
    }
  }

  private function(node: Node): Typed {
    const name = String(node.function_name).toLowerCase();
    const children = node.children as Node[];
    const handler = node.is_operator ? undefined : snowflakeFunction(name);
    if (handler) return handler(children, this, node);
    const args = children.map((c) => this.argument(name, c, node.is_operator === true));
    const rest = this.members(node, ['children']);
    const kind: Kind = ARITHMETIC.has(name) ? (args.every((a) => a.kind === 'number') ? 'number' : 'other')
      : TEXT_OPERATORS.has(name) || TEXT_RESULTS.has(name) ? (name === '||' || TEXT_RESULTS.has(name) ? 'text' : 'bool')
        : NUMBER_RESULTS.has(name) ? 'number' : PASS_THROUGH.has(name) && args.length === 1 ? args[0]!.kind : 'other';
    return typed({ ...rest, children: args.map((a) => a.node) }, kind);
  }

  /** A variant passed to a DuckDB function: as Snowflake would cast it for that function. */
  private argument(name: string, node: Node, isOperator: boolean): Typed {
    const arg = this.expr(node);
    if (arg.kind !== 'json') return arg;
    if (isOperator && ARITHMETIC.has(name)) return asNumber(arg);
    if (ORDERED.has(name)) throw new SqlRefused(`${name.toUpperCase()} of ${UNORDERABLE.replace('cannot be sorted', 'cannot be compared')}`);
    if (NUMERIC.has(name)) return asNumber(arg);
    if (PASS_THROUGH.has(name) || name.startsWith('json_') || name === 'to_json') return arg;
    return asText(arg);
  }

  private window(node: Node): Typed {
    const name = String(node.function_name).toLowerCase();
    const args = ((node.children as Node[]) ?? []).map((c) => this.argument(name, c, false));
    const kind = PASS_THROUGH.has(name) && args.length > 0 ? args[0]!.kind : NUMBER_RESULTS.has(name) ? 'number' : 'other';
    return typed({ ...this.members(node, ['children']), children: args.map((a) => a.node) }, kind);
  }

  /** Every member of `node` but `skip`, rewritten: expressions, queries, table refs and sort orders within. */
  private members(node: Node, skip: string[] = []): Node {
    const out: Node = {};
    for (const [key, value] of Object.entries(node)) out[key] = skip.includes(key) ? value : this.any(value);
    return out;
  }

  private any(value: unknown): unknown {
    if (Array.isArray(value)) return value.map((item) => this.any(item));
    if (value === null || typeof value !== 'object') return value;
    const node = value as Node;
    if (typeof node.class === 'string') return this.expr(node).node;
    if (typeof node.type === 'string' && node.type.endsWith('_NODE')) return this.query(node);
    if (typeof node.type === 'string' && ['JOIN', 'TABLE_FUNCTION', 'SUBQUERY', 'BASE_TABLE'].includes(node.type) && 'alias' in node && !('class' in node)) {
      return this.table(node).ref;
    }
    if ('null_order' in node && 'expression' in node) {
      const sorted = this.expr(node.expression as Node);
      if (sorted.kind === 'json') throw new SqlRefused(UNORDERABLE);
      return { ...node, expression: sorted.node };
    }
    return this.members(node);
  }
}

function constantKind(node: Node): Kind {
  const id = String((node.value as { type?: { id?: string } }).type?.id);
  if (id === 'VARCHAR') return 'text';
  return /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UBIGINT|DECIMAL|FLOAT|DOUBLE)$/.test(id) ? 'number' : 'other';
}

const DUCK_TYPES: Record<string, DuckType> = {
  VARCHAR: 'VARCHAR', FLOAT: 'DOUBLE', DOUBLE: 'DOUBLE', BOOLEAN: 'BOOLEAN', DATE: 'DATE', TIME: 'TIME', TIMESTAMP: 'TIMESTAMP',
  'TIMESTAMP WITH TIME ZONE': 'TIMESTAMP WITH TIME ZONE', VARIANT: 'JSON',
  TINYINT: { decimal: [38, 0] }, SMALLINT: { decimal: [38, 0] }, INTEGER: { decimal: [38, 0] }, BIGINT: { decimal: [38, 0] }, HUGEINT: { decimal: [38, 0] },
};
const NAMED_TYPES: Record<string, DuckType> = {
  timestamp_ntz: 'TIMESTAMP', timestamp_ltz: 'TIMESTAMP WITH TIME ZONE', timestamp_tz: 'TIMESTAMP WITH TIME ZONE',
  variant: 'JSON', object: 'JSON', array: 'JSON', json: 'JSON', byteint: { decimal: [38, 0] },
};

/** Snowflake's meaning of a cast's type; undefined for a DuckDB type kept as written (a list, say). */
function snowflakeType(type: Node): DuckType | undefined {
  const id = String(type.id);
  const info = type.type_info as { width?: number; scale?: number; name?: string; user_type_modifiers?: Node[] } | null;
  if (id === 'DECIMAL') return { decimal: [info!.width!, info!.scale!] };
  if (Object.hasOwn(DUCK_TYPES, id)) return DUCK_TYPES[id];
  if (id !== 'UNBOUND') return undefined;
  const name = String(info?.name).toLowerCase();
  if (name === 'number' || name === 'numeric' || name === 'decimal') {
    const [p, s] = (info?.user_type_modifiers ?? []).map((value) => ({ class: 'CONSTANT', value }) as Node);
    return numberType(`::${name}`, p, s);
  }
  if (Object.hasOwn(NAMED_TYPES, name)) return NAMED_TYPES[name];
  throw new SqlRefused(`the type ${name} is not translated from Snowflake SQL: cast to string, number, float, boolean, date, timestamp or variant`);
}
