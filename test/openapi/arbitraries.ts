/**
 * fast-check arbitraries built from the JSON Schemas of an OpenAPI 3.1 document: values that mostly fit the
 * schema (types, enums, patterns, lengths, ranges, required members), and now and then do not (any JSON
 * where a schema is asked for), so a fuzzer reaches both the operations and their refusals.
 */
import fc from 'fast-check';

type Schema = Record<string, unknown>;

export interface SchemaContext {
  /** The document's components.schemas, for `#/components/schemas/<name>`. */
  components: Record<string, Schema>;
}

const MAX_DEPTH = 8;
const junk = fc.oneof(fc.constant(null), fc.boolean(), fc.integer(), fc.string({ maxLength: 8 }), fc.constant({}), fc.constant([]));

export function arbitraryOf(schema: unknown, ctx: SchemaContext, depth = 0): fc.Arbitrary<unknown> {
  const fitting = fitted(schema, ctx, depth);
  // One value in ten ignores the schema.
  return depth === 0 ? fc.oneof({ arbitrary: fitting, weight: 9 }, { arbitrary: junk, weight: 1 }) : fitting;
}

/** Values that fit the schema (as far as these keywords go). */
export function fitted(schema: unknown, ctx: SchemaContext, depth: number): fc.Arbitrary<unknown> {
  if (schema === true || schema === undefined) return junk;
  if (schema === false || schema === null || typeof schema !== 'object') return fc.constant(null);
  const s = schema as Schema;
  if (typeof s.$ref === 'string') {
    const name = s.$ref.replace('#/components/schemas/', '');
    const target = ctx.components[name];
    if (!target || depth > MAX_DEPTH) return fc.constant({});
    return fitted({ ...target, ...withoutRef(s) }, ctx, depth + 1);
  }
  if ('const' in s) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  for (const key of ['oneOf', 'anyOf'] as const) {
    if (Array.isArray(s[key])) {
      const { [key]: options, ...rest } = s;
      return fc.oneof(...(options as unknown[]).map((option) => fitted(merge(rest, option, ctx), ctx, depth + 1)));
    }
  }
  if (Array.isArray(s.allOf)) {
    const { allOf, ...rest } = s;
    return fitted((allOf as unknown[]).reduce<Schema>((all, part) => merge(all, part, ctx), rest), ctx, depth + 1);
  }
  const types = Array.isArray(s.type) ? (s.type as string[]) : typeof s.type === 'string' ? [s.type] : s.properties ? ['object'] : [];
  if (types.length === 0) return junk;
  return fc.oneof(...types.map((type) => ofType(type, s, ctx, depth)));
}

function ofType(type: string, s: Schema, ctx: SchemaContext, depth: number): fc.Arbitrary<unknown> {
  switch (type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({ min: num(s.minimum) ?? -1000, max: num(s.maximum) ?? 100_000 });
    case 'number':
      return fc.double({ min: num(s.minimum) ?? -1000, max: num(s.maximum) ?? 100_000, noNaN: true, noDefaultInfinity: true });
    case 'string':
      return stringOf(s);
    case 'array': {
      const minLength = num(s.minItems) ?? 0;
      return fc.array(depth > MAX_DEPTH ? junk : fitted(s.items, ctx, depth + 1), { minLength, maxLength: Math.min(num(s.maxItems) ?? 3, minLength + 3) });
    }
    case 'object': {
      if (depth > MAX_DEPTH) return fc.constant({});
      const properties = (s.properties ?? {}) as Record<string, unknown>;
      const required = new Set((s.required ?? []) as string[]);
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, property] of Object.entries(properties)) model[name] = fitted(property, ctx, depth + 1);
      for (const name of required) model[name] ??= junk;
      return fc.record(model, { requiredKeys: [...required].filter((name) => name in model) });
    }
    default:
      return junk;
  }
}

/** A string schema's `examples`, when it gives some, are tried one time in two (values a pattern cannot describe, such as time zones). */
function stringOf(s: Schema): fc.Arbitrary<string> {
  const examples = Array.isArray(s.examples) ? s.examples.filter((e): e is string => typeof e === 'string') : [];
  return examples.length > 0 ? fc.oneof(fc.constantFrom(...examples), anyStringOf(s)) : anyStringOf(s);
}

function anyStringOf(s: Schema): fc.Arbitrary<string> {
  const maxLength = Math.min(num(s.maxLength) ?? 24, 64);
  const minLength = Math.min(num(s.minLength) ?? 0, maxLength);
  if (typeof s.pattern === 'string') {
    try {
      const pattern = new RegExp(s.pattern);
      return fc.stringMatching(pattern).filter((value) => value.length <= 200);
    } catch {
      // A pattern JavaScript cannot read: any string.
    }
  }
  switch (s.format) {
    case 'date-time':
      return fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString());
    case 'email':
      return fc.emailAddress().filter((e) => e.length <= maxLength || s.maxLength === undefined);
    case 'uri':
      return fc.webUrl();
    default:
      return fc.string({ minLength, maxLength });
  }
}

const num = (value: unknown) => (typeof value === 'number' ? value : undefined);

function withoutRef(s: Schema): Schema {
  const { $ref: _, ...rest } = s;
  return rest;
}

/** Two schemas as one (for allOf and the branches of oneOf): properties and required lists joined. */
function merge(a: Schema, b: unknown, ctx: SchemaContext): Schema {
  let other = (b && typeof b === 'object' ? b : {}) as Schema;
  if (typeof other.$ref === 'string') other = { ...(ctx.components[other.$ref.replace('#/components/schemas/', '')] ?? {}), ...withoutRef(other) };
  return {
    ...a,
    ...other,
    properties: { ...((a.properties ?? {}) as Schema), ...((other.properties ?? {}) as Schema) },
    required: [...new Set([...((a.required ?? []) as string[]), ...((other.required ?? []) as string[])])],
    ...(a.type || other.type ? { type: other.type ?? a.type } : {}),
  };
}
