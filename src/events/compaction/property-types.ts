/**
 * The property keys of an event type with their JSON types, for GET …/events/types. The keys are
 * whatever partners send (`constructor`, `__proto__`, `toString`…), so they are collected in Maps and
 * only become object keys through Object.fromEntries, which defines own members and never reads or
 * sets inherited ones.
 *
 * Bounded: at most MAX_PROPERTY_KEYS keys per type, none longer than MAX_PROPERTY_KEY_LENGTH; a type
 * with more (or longer) keys is marked truncated. Real events carry a few dozen short keys; a partner
 * sending thousands of distinct keys would otherwise make every answer and every fold grow with them.
 */

export const MAX_PROPERTY_KEYS = 100;
export const MAX_PROPERTY_KEY_LENGTH = 128;

/** DuckDB json_type names → JSON Schema type names. */
const JSON_TYPE_OF = new Map([
  ['VARCHAR', 'string'],
  ['BIGINT', 'integer'],
  ['UBIGINT', 'integer'],
  ['DOUBLE', 'number'],
  ['BOOLEAN', 'boolean'],
  ['OBJECT', 'object'],
  ['ARRAY', 'array'],
  ['NULL', 'null'],
]);

/** One key of one type with DuckDB's json_type name of its value; `key` is null for a key over the length limit. */
export interface PropertyKeyRow {
  environment: string;
  event_name: string;
  key: string | null;
  type: string;
}

export interface PropertyTypes {
  /** key → its JSON types. */
  keys: Map<string, string[]>;
  truncated: boolean;
}

/** The stored form (event_types.properties, JSON `{ key: [types] }`) back into a PropertyTypes. */
export function parsePropertyTypes(json: string | null, truncated: boolean): PropertyTypes {
  const keys = new Map<string, string[]>();
  // JSON.parse defines every member as an own property, `__proto__` included.
  for (const [key, types] of Object.entries(JSON.parse(json ?? '{}') as Record<string, string[]>)) keys.set(key, [...types]);
  return { keys, truncated };
}

/** Adds one key seen; false when it changed nothing. */
export function addPropertyKey(into: PropertyTypes, row: Pick<PropertyKeyRow, 'key' | 'type'>): boolean {
  const type = JSON_TYPE_OF.get(row.type) ?? 'string';
  if (row.key === null || row.key.length > MAX_PROPERTY_KEY_LENGTH) return markTruncated(into);
  const types = into.keys.get(row.key);
  if (types) {
    if (types.includes(type)) return false;
    types.push(type);
    return true;
  }
  if (into.keys.size >= MAX_PROPERTY_KEYS) return markTruncated(into);
  into.keys.set(row.key, [type]);
  return true;
}

function markTruncated(into: PropertyTypes): boolean {
  if (into.truncated) return false;
  into.truncated = true;
  return true;
}

export function propertyTypesJson(types: PropertyTypes): string {
  return JSON.stringify(Object.fromEntries(types.keys));
}

/**
 * As the API answers it: key → "integer|null", keys and types sorted (null last), so an answer does not
 * depend on the order events arrived in or when folds ran.
 */
export function propertiesAnswer(types: PropertyTypes): Record<string, string> {
  const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const nullLast = (a: string, b: string) => (a === 'null' ? 1 : 0) - (b === 'null' ? 1 : 0) || byName(a, b);
  return Object.fromEntries([...types.keys].sort(([a], [b]) => byName(a, b)).map(([key, list]) => [key, [...list].sort(nullLast).join('|')]));
}

export function typeId(environment: string, eventName: string): string {
  return `${environment}\u0000${eventName}`;
}

/** The keys seen, per typeId. */
export function keysByType(rows: readonly PropertyKeyRow[]): Map<string, PropertyKeyRow[]> {
  const byType = new Map<string, PropertyKeyRow[]>();
  for (const row of rows) {
    const id = typeId(row.environment, row.event_name);
    const list = byType.get(id);
    if (list) list.push(row);
    else byType.set(id, [row]);
  }
  return byType;
}
