/**
 * Builders and readers of the expression nodes in DuckDB's json_serialize_sql tree, the form the
 * Snowflake translation rewrites (json_deserialize_sql prints it back as SQL). Every member a node of
 * that class carries is set, as the deserializer expects them all.
 */
export type Node = Record<string, unknown> & { class?: string; type?: string };

const NO_ORDER = { type: 'ORDER_MODIFIER', orders: [] };

export function fn(name: string, ...children: Node[]): Node {
  return {
    class: 'FUNCTION', type: 'FUNCTION', alias: '', function_name: name, schema: '', children,
    filter: null, order_bys: NO_ORDER, distinct: false, is_operator: false, export_state: false, catalog: '',
  };
}

/** An operator written infix (`||`, `+`, `~~`), printed as such. */
export function op(name: string, ...children: Node[]): Node {
  return { ...fn(name, ...children), is_operator: true };
}

export function text(value: string): Node {
  return constant({ id: 'VARCHAR', type_info: null }, value);
}

export function integer(value: number): Node {
  return constant({ id: 'INTEGER', type_info: null }, value);
}

export function nullConstant(): Node {
  return { class: 'CONSTANT', type: 'VALUE_CONSTANT', alias: '', value: { type: { id: 'NULL', type_info: null }, is_null: true } };
}

function constant(type: object, value: unknown): Node {
  return { class: 'CONSTANT', type: 'VALUE_CONSTANT', alias: '', value: { type, is_null: false, value } };
}

/** DuckDB type names the translation casts to. */
export type DuckType = 'VARCHAR' | 'DOUBLE' | 'BOOLEAN' | 'DATE' | 'TIMESTAMP' | 'TIMESTAMP WITH TIME ZONE' | 'TIME' | 'INTEGER' | 'BIGINT' | 'JSON' | 'JSON[]' | 'VARCHAR[]' | { decimal: [number, number] };

export function cast(child: Node, to: DuckType, tryCast = false): Node {
  return { class: 'CAST', type: 'OPERATOR_CAST', alias: '', child, cast_type: typeNode(to), try_cast: tryCast };
}

function typeNode(to: DuckType): object {
  if (typeof to === 'object') {
    return { id: 'DECIMAL', type_info: { type: 'DECIMAL_TYPE_INFO', alias: '', extension_info: null, width: to.decimal[0], scale: to.decimal[1] } };
  }
  if (to === 'JSON') return { id: 'UNBOUND', type_info: { type: 'UNBOUND_TYPE_INFO', alias: '', extension_info: null, name: 'JSON', catalog: '', schema: '', user_type_modifiers: [] } };
  if (to === 'JSON[]' || to === 'VARCHAR[]') {
    return { id: 'LIST', type_info: { type: 'LIST_TYPE_INFO', alias: '', extension_info: null, child_type: typeNode(to === 'JSON[]' ? 'JSON' : 'VARCHAR') } };
  }
  return { id: to, type_info: null };
}

export function caseWhen(checks: Array<[Node, Node]>, otherwise: Node = nullConstant()): Node {
  return {
    class: 'CASE', type: 'CASE_EXPR', alias: '',
    case_checks: checks.map(([when, then]) => ({ when_expr: when, then_expr: then })),
    else_expr: otherwise,
  };
}

export type ComparisonType =
  | 'COMPARE_EQUAL' | 'COMPARE_NOTEQUAL' | 'COMPARE_LESSTHAN' | 'COMPARE_GREATERTHAN' | 'COMPARE_LESSTHANOREQUALTO'
  | 'COMPARE_GREATERTHANOREQUALTO' | 'COMPARE_DISTINCT_FROM' | 'COMPARE_NOT_DISTINCT_FROM';

export function compare(type: ComparisonType, left: Node, right: Node): Node {
  return { class: 'COMPARISON', type, alias: '', left, right };
}

export function operator(type: 'OPERATOR_IS_NULL' | 'OPERATOR_IS_NOT_NULL' | 'OPERATOR_NOT' | 'COMPARE_IN', ...children: Node[]): Node {
  return { class: 'OPERATOR', type, alias: '', children };
}

export function or(...children: Node[]): Node {
  return { class: 'CONJUNCTION', type: 'CONJUNCTION_OR', alias: '', children };
}

/** The text of a VARCHAR constant, or undefined for any other node. */
export function textOf(node: Node | undefined): string | undefined {
  const value = node?.value as { type?: { id?: string }; value?: unknown } | undefined;
  return node?.class === 'CONSTANT' && value?.type?.id === 'VARCHAR' && typeof value.value === 'string' ? value.value : undefined;
}

/** The value of an integer constant, or undefined. */
export function integerOf(node: Node | undefined): number | undefined {
  const value = node?.value as { type?: { id?: string }; value?: unknown } | undefined;
  if (node?.class !== 'CONSTANT' || !/^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UBIGINT)$/.test(String(value?.type?.id))) return undefined;
  return Number(value!.value);
}

/** A bare word (`day` in DATEADD(day, …)) reads as a column reference: its name, lower case. */
export function wordOf(node: Node | undefined): string | undefined {
  const names = node?.column_names as string[] | undefined;
  return node?.class === 'COLUMN_REF' && names?.length === 1 ? names[0]!.toLowerCase() : undefined;
}

export function isConstant(node: Node | undefined): boolean {
  return node?.class === 'CONSTANT';
}

/** Keeps the alias the user gave the expression a translation replaces. */
export function withAlias(node: Node, from: Node): Node {
  return from.alias ? { ...node, alias: from.alias } : node;
}

export function coalesceOf(...children: Node[]): Node {
  return { class: 'OPERATOR', type: 'OPERATOR_COALESCE', alias: '', children };
}
