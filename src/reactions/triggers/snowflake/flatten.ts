/**
 * `LATERAL FLATTEN(input => v:items) f` (or `TABLE(FLATTEN(…))`) as a subquery over DuckDB's json_each,
 * with Snowflake's columns: value (a variant), key (NULL for an array element), index (NULL for an
 * object member), path and this. SEQ has no equivalent and is not there (a query naming it is refused
 * when it binds). Like FLATTEN, a NULL, a scalar or an empty array gives no row; `outer => true` keeps
 * the row with NULLs (a LEFT JOIN). `path => 'a.b'` flattens that path of the input.
 */
import { SqlRefused } from '../sql-tree.js';
import { refuse } from './handler.js';
import { asJsonContainer, pathOn, type Rewriter } from './kinds.js';
import { caseWhen, cast, compare, fn, type Node, nullConstant, text, textOf } from './nodes.js';
import { parseSnowflakePath } from './paths.js';

export interface Flattened {
  ref: Node;
  outer: boolean;
}

export function flattenRef(ref: Node, r: Rewriter): Flattened {
  const args = ((ref.function as Node).children as Node[]) ?? [];
  const named = new Map<string, Node>();
  args.forEach((arg, i) => named.set(String(arg.alias || (i === 0 ? 'input' : `argument ${i + 1}`)).toLowerCase(), { ...arg, alias: '' }));
  for (const name of named.keys()) {
    if (name === 'recursive' || name === 'mode') refuse(`FLATTEN(… ${name} => …)`, 'flatten one level: FLATTEN(input => v:a.b) f, and f.value:c for what is inside');
    if (!['input', 'outer', 'path'].includes(name)) throw new SqlRefused(`FLATTEN takes input, path and outer: write FLATTEN(input => v:items), not ${name}`);
  }
  const given = named.get('input');
  if (!given) throw new SqlRefused('FLATTEN needs its input: FLATTEN(input => e.properties:items)');
  let input = asJsonContainer(r.expr(given));
  const path = named.get('path');
  if (path) {
    const written = textOf(path);
    if (written === undefined) refuse('FLATTEN with a computed path', "write path => 'a.b' as a constant");
    input = pathOn(input, parseSnowflakePath(written));
  }
  const outer = named.has('outer') ? booleanConstant(named.get('outer')!) : false;
  const v = input.node;
  const isArray = compare('COMPARE_EQUAL', fn('json_type', v), text('ARRAY'));
  const column = (name: string) => ({ class: 'COLUMN_REF', type: 'COLUMN_REF', alias: '', column_names: [name] });
  const selectList = [
    { ...caseWhen([[isArray, nullConstant()]], column('key')), alias: 'key' },
    { ...caseWhen([[isArray, cast(column('key'), 'BIGINT')]]), alias: 'index' },
    { ...fn('regexp_replace', column('fullkey'), text('^\\$\\.?'), text('')), alias: 'path' },
    { ...column('value'), alias: 'value' },
    { ...v, alias: 'this' },
  ];
  const where = { class: 'OPERATOR', type: 'COMPARE_IN', alias: '', children: [fn('json_type', v), text('ARRAY'), text('OBJECT')] };
  const each = { type: 'TABLE_FUNCTION', alias: '', sample: null, function: fn('json_each', v), column_name_alias: [], with_ordinality: 'WITHOUT_ORDINALITY' };
  const node = {
    type: 'SELECT_NODE', modifiers: [], cte_map: { map: [] }, select_list: selectList, from_table: each, where_clause: where,
    group_expressions: [], group_sets: [], aggregate_handling: 'STANDARD_HANDLING', having: null, sample: null, qualify: null,
  };
  return { ref: { type: 'SUBQUERY', alias: ref.alias ?? '', sample: null, subquery: { node, named_param_map: [] }, column_name_alias: [] }, outer };
}

function booleanConstant(node: Node): boolean {
  const value = node.class === 'CAST' ? textOf(node.child as Node) : textOf(node);
  if (value === 't' || value?.toLowerCase() === 'true') return true;
  if (value === 'f' || value?.toLowerCase() === 'false') return false;
  throw new SqlRefused('FLATTEN(… outer => …) takes TRUE or FALSE');
}
