/**
 * The syntax-tree half of the SQL guard: walks DuckDB's json_serialize_sql tree of one SELECT and allows
 * only what it knows. Deny by default: a query node, table reference or expression class not named
 * here is refused, so a construct DuckDB adds later (or one we did not think of, like a SHOW in FROM)
 * fails closed.
 *
 * Relations follow SQL's scoping: a CTE is in scope in the CTEs after it and in its query's body, not in
 * its own body (there DuckDB binds the name to the real table: `WITH partner_credentials AS (SELECT *
 * FROM partner_credentials)` read the service's table); a recursive CTE is in scope in its recursive
 * part only. Any other name must be one of the org's relations.
 */
import { CURSOR_PARAMETERS } from './placeholders.js';
import { ORG_RELATIONS } from '../../core/org-relations.js';

type Node = Record<string, unknown>;
type Scope = ReadonlySet<string>;

/** What a query used up when it is refused or stopped for its cost: TRIGGER_TIMEOUT_MS, or its org's memory share. */
export type QueryBudget = 'time' | 'memory';

/** Refused by the guard, with the reason a data engineer reads; `budget` when refused for what it costs. */
export class SqlRefused extends Error {
  constructor(
    readonly reason: string,
    readonly budget?: QueryBudget,
  ) {
    super(reason);
    this.name = 'SqlRefused';
  }
}

export interface FunctionRules {
  /** Table functions allowed in FROM. */
  tableFunctions: ReadonlySet<string>;
  /** Scalar and aggregate functions refused (by name, lower case). */
  deniedFunctions: ReadonlySet<string>;
}

const QUERY_NODES = new Set(['SELECT_NODE', 'SET_OPERATION_NODE', 'RECURSIVE_CTE_NODE']);
const EXPRESSION_CLASSES = new Set([
  'BETWEEN', 'CASE', 'CAST', 'COLLATE', 'COLUMN_REF', 'COMPARISON', 'CONJUNCTION', 'CONSTANT', 'FUNCTION',
  'LAMBDA', 'OPERATOR', 'PARAMETER', 'POSITIONAL_REFERENCE', 'STAR', 'SUBQUERY', 'WINDOW', 'LAMBDA_REF',
]);
/** A left operand of -> / ->> that can only come from DuckDB's precedence, never from intent. */
const BOOLEAN_CLASSES = new Set(['CONJUNCTION', 'COMPARISON', 'BETWEEN']);

const ARROW_PRECEDENCE =
  "-> and ->> bind more loosely than AND, OR and comparisons in DuckDB: `x = 'v' AND j->'k'->>'c' = 'y'` reads as " +
  "`((x = 'v' AND j)->'k')->>'c'`. Put the JSON access in parentheses, `(j->'k'->>'c') = 'y'`, or write " +
  "json_extract_string(j, '$.k.c') = 'y'";

export interface TreeFacts {
  /** The cursor parameters the query uses. */
  parameters: string[];
}

export function checkTree(statement: unknown, org: string, rules: FunctionRules): TreeFacts {
  const walker = new Walker(org, rules);
  walker.queryNode((statement as Node).node, new Set());
  return { parameters: [...walker.parameters] };
}

class Walker {
  readonly parameters = new Set<string>();

  constructor(
    private readonly org: string,
    private readonly rules: FunctionRules,
  ) {}

  queryNode(value: unknown, outer: Scope): void {
    const node = asNode(value, 'query');
    const type = String(node.type);
    if (!QUERY_NODES.has(type)) throw new SqlRefused(`${describeType(type)} is not allowed in trigger SQL: write a plain SELECT`);
    const scope = this.ctes(node, outer);
    switch (type) {
      case 'SELECT_NODE':
        this.tableRef(node.from_table, scope);
        this.rest(node, scope, ['cte_map', 'from_table']);
        return;
      case 'SET_OPERATION_NODE':
        this.queryNode(node.left, scope);
        this.queryNode(node.right, scope);
        this.rest(node, scope, ['cte_map', 'left', 'right']);
        return;
      case 'RECURSIVE_CTE_NODE': {
        // The CTE's own name is in scope in the recursive part only.
        this.queryNode(node.left, scope);
        this.queryNode(node.right, new Set([...scope, String(node.cte_name).toLowerCase()]));
        this.rest(node, scope, ['cte_map', 'left', 'right']);
        return;
      }
    }
  }

  /** Checks the WITH list of a node; returns the scope of the node's body. */
  private ctes(node: Node, outer: Scope): Scope {
    const entries = (node.cte_map as { map?: { key: string; value: Node }[] } | undefined)?.map ?? [];
    let scope = outer;
    for (const entry of entries) {
      const query = (entry.value.query as Node | undefined)?.node;
      // Each CTE sees the CTEs before it, not itself (a recursive one: see RECURSIVE_CTE_NODE).
      this.queryNode(query, scope);
      scope = new Set([...scope, entry.key.toLowerCase()]);
    }
    return scope;
  }

  private tableRef(value: unknown, scope: Scope): void {
    const ref = asNode(value, 'table');
    const type = String(ref.type);
    switch (type) {
      case 'EMPTY':
        return;
      case 'BASE_TABLE':
        this.relation(ref, scope);
        return;
      case 'JOIN':
        this.tableRef(ref.left, scope);
        this.tableRef(ref.right, scope);
        this.rest(ref, scope, ['left', 'right']);
        return;
      case 'SUBQUERY':
        this.queryNode((ref.subquery as Node | undefined)?.node, scope);
        return;
      case 'TABLE_FUNCTION': {
        const fn = asNode(ref.function, 'table function');
        const name = String(fn.function_name ?? '').toLowerCase();
        if (!this.rules.tableFunctions.has(name) || qualifier(fn) !== '') {
          throw new SqlRefused(`table function ${name} is not allowed (allowed: ${[...this.rules.tableFunctions].join(', ')})`);
        }
        this.rest(fn, scope, []);
        return;
      }
      case 'EXPRESSION_LIST':
        this.rest(ref, scope, []);
        return;
      default:
        throw new SqlRefused(`${describeType(type)} is not allowed in FROM: read event_triggers, profiles or your own CTEs`);
    }
  }

  private relation(ref: Node, scope: Scope): void {
    const catalog = String(ref.catalog_name ?? '').toLowerCase();
    const schema = String(ref.schema_name ?? '').toLowerCase();
    const table = String(ref.table_name ?? '').toLowerCase();
    const shown = [catalog, schema, table].filter(Boolean).join('.');
    const orgRelation = (ORG_RELATIONS as readonly string[]).includes(table);
    if (catalog === '' && schema === '' && (scope.has(table) || orgRelation)) return;
    if (catalog === '' && schema === this.org && orgRelation) return;
    if (catalog === '' && schema !== '' && orgRelation) {
      throw new SqlRefused(`relation ${shown} belongs to another org: trigger SQL reads only its own org`);
    }
    throw new SqlRefused(`relation ${shown} is not readable: use event_triggers or profiles (or ${this.org}.event_triggers, ${this.org}.profiles)`);
  }

  /** Every member of `node` except `skip`: expressions, and query nodes or table refs nested in them. */
  private rest(node: Node, scope: Scope, skip: string[]): void {
    for (const [key, child] of Object.entries(node)) {
      if (!skip.includes(key)) this.any(child, scope);
    }
  }

  private any(value: unknown, scope: Scope): void {
    if (Array.isArray(value)) {
      for (const item of value) this.any(item, scope);
      return;
    }
    if (value === null || typeof value !== 'object') return;
    const node = value as Node;
    if (typeof node.class === 'string') {
      this.expression(node, scope);
      return;
    }
    if (typeof node.type === 'string' && node.type.endsWith('_NODE')) {
      this.queryNode(node, scope);
      return;
    }
    if ('from_table' in node) throw new SqlRefused('a query form that is not allowed in trigger SQL');
    this.rest(node, scope, []);
  }

  private expression(node: Node, scope: Scope): void {
    const cls = String(node.class);
    if (!EXPRESSION_CLASSES.has(cls)) throw new SqlRefused(`${describeType(cls)} expressions are not allowed in trigger SQL`);
    switch (cls) {
      case 'SUBQUERY':
        this.queryNode((node.subquery as Node | undefined)?.node, scope);
        this.any(node.child, scope);
        return;
      case 'FUNCTION':
      case 'WINDOW':
        this.function(node);
        break;
      case 'PARAMETER': {
        const name = String(node.identifier);
        if (!(CURSOR_PARAMETERS as readonly string[]).includes(name)) {
          throw new SqlRefused(`parameter $${name} is unknown: only {cursor_start_time} and {cursor_end_time} are bound`);
        }
        this.parameters.add(name);
        return;
      }
      case 'LAMBDA':
        if (BOOLEAN_CLASSES.has(String((node.lhs as Node | undefined)?.class))) throw new SqlRefused(ARROW_PRECEDENCE);
        break;
    }
    this.rest(node, scope, ['subquery']);
  }

  private function(node: Node): void {
    const name = String(node.function_name ?? '').toLowerCase();
    for (const child of (node.children as Node[] | undefined) ?? []) {
      const placeholder = cursorParameter(child);
      if (placeholder !== undefined) throw new SqlRefused(shiftedWindow(placeholder, name, node.is_operator === true));
    }
    if (name === '->>' || name === '->') {
      const left = (node.children as Node[] | undefined)?.[0];
      if (BOOLEAN_CLASSES.has(String(left?.class))) throw new SqlRefused(ARROW_PRECEDENCE);
    }
    const where = qualifier(node);
    if (where !== '' && where !== 'main') throw new SqlRefused(`function ${where}.${name} is not allowed: call functions unqualified`);
    if (this.rules.deniedFunctions.has(name) || name.startsWith('__')) throw new SqlRefused(`function ${name} is not allowed in trigger SQL`);
  }
}

/** The cursor placeholder `child` is, through any casts (`{cursor_start_time}::TIMESTAMP`), if it is one. */
function cursorParameter(child: Node | undefined): string | undefined {
  let node = child;
  while (node?.class === 'CAST') node = node.child as Node | undefined;
  const name = node?.class === 'PARAMETER' ? String(node.identifier) : undefined;
  return name !== undefined && (CURSOR_PARAMETERS as readonly string[]).includes(name) ? name : undefined;
}

/**
 * `ts > {cursor_start_time} - INTERVAL 1 HOUR`: without a cast DuckDB cannot type the parameter inside the
 * operator and the query prepared as one column "unknown", which the column check then reported. A
 * shifted window is a delay or a look-back in disguise; each has its own form, which the reason shows.
 */
function shiftedWindow(placeholder: string, fn: string, operator: boolean): string {
  const what = operator ? `arithmetic (${fn})` : `a function (${fn})`;
  return (
    `{${placeholder}} is ${what} on a window placeholder: {cursor_start_time} and {cursor_end_time} are TIMESTAMPTZ values ` +
    'bound as parameters, compared with ts as they are (ts > {cursor_start_time} AND ts <= {cursor_end_time}); arithmetic and ' +
    'functions on them are not supported. To act later than the event, keep the window and give the flow a step ' +
    '{ "wait": { "seconds": 3600 } }; to look back at earlier events, read them in a subquery without shifting the window, e.g. ' +
    'EXISTS (SELECT 1 FROM event_triggers e WHERE e.identity = event_triggers.identity AND e.ts > event_triggers.ts - INTERVAL 1 HOUR)'
  );
}

function asNode(value: unknown, what: string): Node {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new SqlRefused(`an unexpected ${what} form is not allowed`);
  return value as Node;
}

/** `catalog.schema` of a function call, '' when unqualified. */
function qualifier(fn: Node): string {
  return [fn.catalog, fn.schema].filter((part) => typeof part === 'string' && part !== '').join('.').toLowerCase();
}

/** SHOW_REF → "SHOW", PIVOT → "PIVOT": the tree's names, readable. */
function describeType(type: string): string {
  if (type === 'SHOW_REF') return 'SHOW, DESCRIBE and SUMMARIZE';
  return type.replace(/_NODE$|_REF$/, '').replaceAll('_', ' ');
}
