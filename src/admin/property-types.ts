/**
 * The property keys of each event type with their JSON types, for GET …/events/types. The keys are
 * whatever partners send (`constructor`, `__proto__`, `toString`…), so they are collected in Maps and
 * only become object keys through Object.fromEntries, which defines own members and never reads or
 * sets inherited ones.
 */

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

export interface PropertyKeyRow {
  event_name: string;
  environment: string;
  key: string;
  type: string;
}

/** Per `${event_name}\0${environment}`: key → its types, several joined as "integer|null". */
export function propertyTypes(rows: readonly PropertyKeyRow[]): Map<string, Record<string, string>> {
  const typesById = new Map<string, Map<string, string[]>>();
  for (const row of rows) {
    const id = propertyTypesId(row.event_name, row.environment);
    let keys = typesById.get(id);
    if (!keys) typesById.set(id, (keys = new Map()));
    const type = JSON_TYPE_OF.get(row.type) ?? 'string';
    const types = keys.get(row.key);
    if (!types) keys.set(row.key, [type]);
    else if (!types.includes(type)) types.push(type);
  }
  const out = new Map<string, Record<string, string>>();
  for (const [id, keys] of typesById) {
    out.set(id, Object.fromEntries([...keys].map(([key, types]) => [key, types.join('|')])));
  }
  return out;
}

export function propertyTypesId(eventName: string, environment: string): string {
  return `${eventName}\u0000${environment}`;
}
