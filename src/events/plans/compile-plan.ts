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
  return { ok: true, check: (properties) => (validate(properties) ? [] : (validate.errors as ErrorObject[]).map(violationOf)) };
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
