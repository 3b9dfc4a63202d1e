/**
 * A draft plan from stored events (issue 42, `POST …/events/plans/{eventName}/infer`): the JSON types each
 * member had, `required` for members every sample carried, `enum` for strings with few distinct values, the
 * same for nested objects and array items. A draft for a data engineer to edit and PUT: it accepts every
 * sample it was inferred from, and compiles as a plan (no pattern, no $ref, within the size bounds: members
 * past MAX_MEMBERS per object and levels past MAX_DEPTH are left open).
 */

/** Distinct string values up to which a member becomes an enum, when each value was seen this often on average. */
const MAX_ENUM = 10;
const SAMPLES_PER_ENUM_VALUE = 3;
const MAX_MEMBERS = 50;
const MAX_DEPTH = 6;
const MAX_ENUM_CHARS = 100;

type JsonType = 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array' | 'null';

interface Shape {
  seen: number;
  types: Set<JsonType>;
  /** Distinct strings, until there are too many to be an enum (then undefined). */
  strings: Set<string> | undefined;
  stringCount: number;
  members: Map<string, Shape>;
  objects: number;
  items: Shape | undefined;
}

const blank = (): Shape => ({ seen: 0, types: new Set(), strings: new Set(), stringCount: 0, members: new Map(), objects: 0, items: undefined });

function typeOf(value: unknown): JsonType {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value as JsonType;
}

function observe(shape: Shape, value: unknown, depth: number): void {
  shape.seen++;
  const type = typeOf(value);
  shape.types.add(type);
  if (depth >= MAX_DEPTH) return;
  if (type === 'string') {
    shape.stringCount++;
    const text = value as string;
    if (shape.strings && (text.length > MAX_ENUM_CHARS || (shape.strings.add(text), shape.strings.size > MAX_ENUM))) shape.strings = undefined;
  } else if (type === 'object') {
    shape.objects++;
    for (const [key, member] of Object.entries(value as Record<string, unknown>)) {
      let known = shape.members.get(key);
      if (!known) {
        if (shape.members.size >= MAX_MEMBERS) continue;
        shape.members.set(key, (known = blank()));
      }
      observe(known, member, depth + 1);
    }
  } else if (type === 'array') {
    shape.items ??= blank();
    for (const item of value as unknown[]) observe(shape.items, item, depth + 1);
  }
}

function schemaOf(shape: Shape, depth: number): Record<string, unknown> {
  if (depth >= MAX_DEPTH) return {};
  const types = [...shape.types];
  // An integer where numbers were seen too is a number.
  const merged = types.includes('number') ? types.filter((t) => t !== 'integer') : types;
  const schema: Record<string, unknown> = { type: merged.length === 1 ? merged[0] : merged.sort() };
  if (merged.includes('string') && merged.length === 1 && shape.strings && shape.strings.size > 0 && shape.stringCount >= SAMPLES_PER_ENUM_VALUE * shape.strings.size) {
    schema.enum = [...shape.strings].sort();
  }
  if (shape.objects > 0 && shape.members.size > 0) {
    schema.properties = Object.fromEntries([...shape.members].sort(([a], [b]) => (a < b ? -1 : 1)).map(([key, member]) => [key, schemaOf(member, depth + 1)]));
    // Required when every object seen carried it.
    const required = [...shape.members].filter(([, member]) => member.seen === shape.objects).map(([key]) => key).sort();
    if (required.length > 0) schema.required = required;
  }
  if (shape.items && shape.items.seen > 0) schema.items = schemaOf(shape.items, depth + 1);
  return schema;
}

/** The draft for the events' own properties, and how many samples it was made from. */
export function inferPlan(samples: readonly unknown[]): { schema: Record<string, unknown>; samples: number } {
  const root = blank();
  for (const sample of samples) observe(root, sample, 0);
  if (samples.length === 0) return { schema: { type: 'object' }, samples: 0 };
  return { schema: schemaOf(root, 0), samples: samples.length };
}
