/**
 * What a rewritten expression holds, as far as the query text tells: Snowflake's VARIANT, OBJECT and
 * ARRAY are DuckDB JSON here, and where Snowflake turns a variant into the type its context wants
 * (`v:city = 'Lisbon'`, `LOWER(v:email)`, `v:price * 2`) the translation says so explicitly: DuckDB
 * would compare or lower the JSON text, quotes included. Names known to hold JSON: paths, the views'
 * event_raw and properties, a FLATTEN's value and this, and aliases of JSON expressions.
 */
import { cast, fn, text, type Node } from './nodes.js';
import { jsonPath, type Step } from './paths.js';

export type Kind = 'json' | 'text' | 'number' | 'bool' | 'other';

export interface Typed {
  node: Node;
  kind: Kind;
}

export interface Rewriter {
  /** Rewrites an expression of the query (its children first). */
  expr(node: Node): Typed;
}

export const typed = (node: Node, kind: Kind): Typed => ({ node, kind });

/** Paths this translation built, so that a further step or a cast extends the same path. */
const paths = new WeakMap<Node, { base: Node; steps: Step[] }>();

/** `base` followed by `steps`, as JSON (VARIANT). */
export function pathOn(base: Typed, steps: Step[]): Typed {
  const known = paths.get(base.node);
  const root = known ? known.base : base.kind === 'text' ? cast(base.node, 'JSON') : base.node;
  const all = [...(known?.steps ?? []), ...steps];
  const node = fn('json_extract', root, text(jsonPath(all)));
  paths.set(node, { base: root, steps: all });
  return typed(node, 'json');
}

/** A variant as Snowflake's VARCHAR: a JSON string without its quotes, anything else as JSON text. */
export function asText(t: Typed): Typed {
  if (t.kind !== 'json') return t;
  const known = paths.get(t.node);
  return typed(known ? fn('json_extract_string', known.base, text(jsonPath(known.steps))) : fn('json_extract_string', t.node, text('$')), 'text');
}

export function asNumber(t: Typed): Typed {
  return t.kind === 'json' ? typed(cast(t.node, 'DOUBLE'), 'number') : t;
}

export function asBool(t: Typed): Typed {
  return t.kind === 'json' ? typed(cast(t.node, 'BOOLEAN'), 'bool') : t;
}

/** A value as a variant: text becomes a JSON string, a list a JSON array. */
export function asJsonValue(t: Typed): Typed {
  return t.kind === 'json' ? t : typed(fn('to_json', t.node), 'json');
}

/**
 * An array or object argument: text is parsed (it holds JSON), a column of unknown type is taken as a
 * variant column (DuckDB's JSON functions read JSON text; a list or struct fails to bind, loudly).
 */
export function asJsonContainer(t: Typed): Typed {
  if (t.kind === 'json' || t.kind === 'other') return typed(t.node, 'json');
  return typed(t.kind === 'text' ? cast(t.node, 'JSON') : fn('to_json', t.node), 'json');
}

/** A variant where the other side has `kind`: Snowflake casts the variant to that side's type. */
export function coerceTo(t: Typed, kind: Kind): Typed {
  if (t.kind !== 'json' || kind === 'json') return t;
  if (kind === 'number') return asNumber(t);
  if (kind === 'bool') return asBool(t);
  return asText(t);
}

/** Two sides of a comparison. */
export function coercePair(a: Typed, b: Typed): [Typed, Typed] {
  return [coerceTo(a, b.kind), coerceTo(b, a.kind)];
}

/** Branches of one result (CASE, COALESCE, IFF): variants take the kind of the first other branch. */
export function unify(branches: Typed[]): Typed[] {
  const other = branches.find((b) => b.kind !== 'json' && !isNull(b.node));
  if (!other || branches.every((b) => b.kind !== 'json')) return branches;
  return branches.map((b) => coerceTo(b, other.kind));
}

export function kindOfAll(branches: Typed[]): Kind {
  const kinds = new Set(branches.filter((b) => !isNull(b.node)).map((b) => b.kind));
  return kinds.size === 1 ? [...kinds][0]! : 'other';
}

function isNull(node: Node): boolean {
  return node.class === 'CONSTANT' && (node.value as { is_null?: boolean }).is_null === true;
}

/** The same expression under a name (`AS alias`), still known as the path it is. */
export function realias(t: Typed, alias: string): Typed {
  const node = { ...t.node, alias };
  const known = paths.get(t.node);
  if (known) paths.set(node, known);
  return typed(node, t.kind);
}
