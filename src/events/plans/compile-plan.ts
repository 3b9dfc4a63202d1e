/**
 * A tracking plan's JSON Schema (issue 42) is an org's untrusted input, compiled once per version and run
 * on every event of its name in the collect path. What keeps it from costing other orgs anything:
 * - its own Ajv instance: one org's `$id`s never meet another's (a shared instance refuses a second
 *   schema with the same `$id`, so one org could make another's plan fail to compile);
 * - bounded size and depth, checked before Ajv sees it (Ajv's own advice for untrusted schemas);
 * - `pattern` and `patternProperties` matched by re2js, a linear-time engine: no pattern can backtrack
 *   (a construct that needs backtracking, a backreference or a lookaround, is refused at PUT);
 * - no `$ref` but to the schema itself (no remote or file schema is ever fetched), no `uniqueItems`
 *   (its cost grows with the square of an array's length).
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { RE2JS } from 're2js';

// ajv-formats ships CommonJS with a default export property.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

export const MAX_PLAN_SCHEMA_BYTES = 16_384;
export const MAX_PLAN_SCHEMA_DEPTH = 32;
const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

/** A reason an event breaks its plan: where in the event's own properties, and what the plan says. */
export interface PlanViolation {
  /** JSON pointer into the event's own properties (`properties.properties` of a custom event), '' for the whole. */
  pointer: string;
  keyword: string;
  message: string;
}

export type CompiledPlan = { ok: true; check: (properties: unknown) => PlanViolation[] } | { ok: false; detail: string };

/** Reasons kept per event: the first ones, and one that says how many more there were. */
export const MAX_REASONS = 20;
/**
 * A check's cost is bounded before it runs, so no plan and event together can hold the event loop that
 * every org's collect shares for long: `costWithin` walks the plan over the event as Ajv will, counting a
 * unit per subschema applied to a value (each branch of anyOf/oneOf/allOf, each array item and member a
 * subschema reaches, every $ref followed), a pattern's string one per 8 characters and an enum's values,
 * and stops at MAX_CHECK_COST. Above it the event is not checked and breaks the plan with the keyword
 * `cost` (quarantined under enforce, counted under observe). Measured here (2 cores): the costliest
 * checks within the bound (anyOf over array items, each branch with a pattern) take ~1.2 µs a unit, so at
 * most ~2.5 ms; the walk itself at most ~0.3 ms. A 20-member plan over an event of 20 members costs ~40
 * units (~0.1 ms), a 50-member one over 40 members with nested objects ~150, 100 items of 5 members ~600.
 */
export const MAX_CHECK_COST = 2_000;

/** The pattern engine Ajv calls for `pattern` and `patternProperties`: re2js, which never backtracks. */
const linearRegExp = Object.assign((pattern: string) => RE2JS.compile(pattern), { code: 'RE2JS.compile' });

export function compilePlan(schema: unknown): CompiledPlan {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return refused('schema must be a JSON Schema object');
  const bytes = Buffer.byteLength(JSON.stringify(schema));
  if (bytes > MAX_PLAN_SCHEMA_BYTES) return refused(`schema is ${bytes} bytes; a plan's schema may be at most ${MAX_PLAN_SCHEMA_BYTES}`);
  const found = inspect(schema, 1);
  if (found) return refused(found);
  const declared = (schema as { $schema?: unknown }).$schema;
  if (declared !== undefined && declared !== DRAFT_2020_12) return refused(`$schema must be ${DRAFT_2020_12} (draft 2020-12) or left out, not ${JSON.stringify(declared)}`);
  const ajv = new Ajv2020({
    // Unknown keywords and formats are refused (a typo would silently check nothing); types are not
    // required beside `properties` and the like, as plans written for Segment Protocols leave them out.
    strictSchema: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    allowUnionTypes: true,
    allErrors: true,
    // A member named like one of Object.prototype's (toString, constructor) is absent unless the event has
    // it: without this, Ajv reads `data.toString`, finds the prototype's function and reports a wrong type.
    ownProperties: true,
    code: { regExp: linearRegExp },
  });
  addFormats(ajv);
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(schema);
  } catch (error) {
    return refused(`schema is not a valid JSON Schema (draft 2020-12): ${conciseCompileError(error)}`);
  }
  const root = schema;
  return {
    ok: true,
    check: (properties) => {
      if (!costWithin(root, root, properties, { left: MAX_CHECK_COST }, 0)) {
        return [{ pointer: '', keyword: 'cost', message: `is too large for this plan to check (more than ${MAX_CHECK_COST} steps): send fewer or shorter members, or simplify the plan` }];
      }
      if (validate(properties)) return [];
      const errors = validate.errors as ErrorObject[];
      const kept = errors.slice(0, MAX_REASONS).map(violationOf);
      if (errors.length > MAX_REASONS) kept.push({ pointer: '', keyword: 'more', message: `and ${errors.length - MAX_REASONS} more reasons` });
      return kept;
    },
  };
}

/** Keywords whose subschema applies to the value itself, and those whose branches each do. */
const IN_PLACE = ['not', 'if', 'then', 'else'];
const BRANCHES = ['anyOf', 'oneOf', 'allOf'];

/**
 * Spends `budget.left` on applying `schema` to `value` as Ajv would (an upper bound: every branch, every
 * item, every member); false as soon as it runs out, or past 64 nested subschemas ($refs included).
 */
function costWithin(schema: unknown, root: unknown, value: unknown, budget: { left: number }, depth: number): boolean {
  if (typeof schema !== 'object' || schema === null || value === undefined) return true;
  if (--budget.left < 0 || depth > 64) return false;
  const s = schema as Record<string, unknown>;
  const next = depth + 1;
  if (typeof s.pattern === 'string' && typeof value === 'string' && (budget.left -= value.length >> 3) < 0) return false;
  if (Array.isArray(s.enum) && (budget.left -= s.enum.length) < 0) return false;
  if (typeof s.$ref === 'string' && !costWithin(resolvePointer(root, s.$ref), root, value, budget, next)) return false;
  if (typeof s.$dynamicRef === 'string' && !costWithin(resolvePointer(root, s.$dynamicRef), root, value, budget, next)) return false;
  for (const key of IN_PLACE) if (s[key] !== undefined && !costWithin(s[key], root, value, budget, next)) return false;
  for (const key of BRANCHES) {
    const branches = s[key];
    if (Array.isArray(branches)) for (const branch of branches) if (!costWithin(branch, root, value, budget, next)) return false;
  }
  if (Array.isArray(value)) {
    const prefix = Array.isArray(s.prefixItems) ? s.prefixItems : undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (prefix && !costWithin(prefix[i], root, item, budget, next)) return false;
      if (!costWithin(s.items, root, item, budget, next) || !costWithin(s.contains, root, item, budget, next) || !costWithin(s.unevaluatedItems, root, item, budget, next)) return false;
    }
  } else if (typeof value === 'object' && value !== null) {
    const named = typeof s.properties === 'object' && s.properties !== null ? (s.properties as Record<string, unknown>) : undefined;
    const patterns = typeof s.patternProperties === 'object' && s.patternProperties !== null ? Object.values(s.patternProperties) : [];
    for (const key in value) {
      if (!Object.hasOwn(value, key)) continue;
      const member = (value as Record<string, unknown>)[key];
      if ((budget.left -= 1 + patterns.length * (1 + (key.length >> 3))) < 0) return false;
      if (named && Object.hasOwn(named, key) && !costWithin(named[key], root, member, budget, next)) return false;
      for (const sub of patterns) if (!costWithin(sub, root, member, budget, next)) return false;
      if (!costWithin(s.additionalProperties, root, member, budget, next) || !costWithin(s.unevaluatedProperties, root, member, budget, next)) return false;
      if (!costWithin(s.propertyNames, root, key, budget, next)) return false;
    }
    if (typeof s.dependentSchemas === 'object' && s.dependentSchemas !== null) {
      for (const sub of Object.values(s.dependentSchemas)) if (!costWithin(sub, root, value, budget, next)) return false;
    }
  }
  return true;
}

/** `#/$defs/a` in the schema (an anchor, `#name`, weighs as the whole schema). */
function resolvePointer(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) return root;
  let at: unknown = root;
  for (const part of ref.slice(2).split('/')) {
    const key = decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~');
    at = typeof at === 'object' && at !== null ? (at as Record<string, unknown>)[key] : undefined;
  }
  return at;
}

function violationOf(e: ErrorObject): PlanViolation {
  return { pointer: e.instancePath, keyword: e.keyword, message: e.message ?? 'does not match the plan' };
}

function refused(detail: string): CompiledPlan {
  return { ok: false, detail };
}

/** Keywords whose value is data (compared, never a schema): not walked for keywords. */
const DATA_KEYWORDS = new Set(['enum', 'const', 'examples', 'default']);
/** Keywords whose value maps names to schemas: the names are not keywords. */
const NAMED_SCHEMAS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);

/** The first thing a plan may not hold, looked for before Ajv compiles it. */
function inspect(value: unknown, depth: number): string | undefined {
  if (depth > MAX_PLAN_SCHEMA_DEPTH) return `schema nests deeper than ${MAX_PLAN_SCHEMA_DEPTH} levels`;
  if (typeof value !== 'object' || value === null) return undefined;
  if (Array.isArray(value)) return first(value, (item) => inspect(item, depth + 1));
  return first(Object.entries(value), ([key, member]) => {
    if (DATA_KEYWORDS.has(key)) return jsonDepth(member, depth + 1) > MAX_PLAN_SCHEMA_DEPTH ? `schema nests deeper than ${MAX_PLAN_SCHEMA_DEPTH} levels` : undefined;
    if (NAMED_SCHEMAS.has(key) && typeof member === 'object' && member !== null && !Array.isArray(member)) {
      return first(Object.values(member), (schema) => inspect(schema, depth + 2));
    }
    if ((key === '$ref' || key === '$dynamicRef') && (typeof member !== 'string' || !member.startsWith('#'))) {
      return `${key} ${JSON.stringify(member)} points outside the schema: a plan may only refer to its own parts (#/$defs/…); nothing is fetched`;
    }
    if (key === 'uniqueItems' && member === true) return "uniqueItems is not supported in a plan (its cost grows with the square of an array's length)";
    return inspect(member, depth + 1);
  });
}

function first<T>(items: Iterable<T>, look: (item: T) => string | undefined): string | undefined {
  for (const item of items) {
    const found = look(item);
    if (found) return found;
  }
  return undefined;
}

function jsonDepth(value: unknown, depth: number): number {
  if (typeof value !== 'object' || value === null || depth > MAX_PLAN_SCHEMA_DEPTH) return depth;
  let deepest = depth;
  for (const member of Object.values(value)) deepest = Math.max(deepest, jsonDepth(member, depth + 1));
  return deepest;
}

/** Ajv's and re2js's messages name the problem; a stack or a long schema dump would not help. */
function conciseCompileError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const regexp = /error parsing regexp: (.*)/.exec(message);
  if (regexp) return `a pattern cannot be matched in linear time or is not valid (${regexp[1]}); backreferences and lookarounds are not supported`;
  return message.split('\n')[0]!.slice(0, 300);
}
