/** Branch conditions (SPEC 8): `{ field, op, value }` over the template data; first match wins. */
import type { Condition } from '../../../generated/message.js';
import { assertNever } from '../../../core/domain.js';

/** The value at a dotted path (`event.properties.nights`), or undefined. Own members only. */
export function valueAt(data: unknown, path: string): unknown {
  let current = data;
  for (const part of path.split('.')) {
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, part)) return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}

export function matches(condition: Condition, data: unknown): boolean {
  const actual = valueAt(data, condition.field);
  const expected = condition.value;
  switch (condition.op) {
    case 'exists':
      return actual !== undefined && actual !== null;
    case 'eq':
      return isEqual(actual, expected);
    case 'ne':
      return !isEqual(actual, expected);
    case 'in':
      return Array.isArray(expected) && expected.some((item) => isEqual(actual, item));
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return compare(actual, expected, condition.op);
    default:
      return assertNever(condition.op);
  }
}

function isEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Numbers compare as numbers, strings (e.g. ISO dates) as strings; mixed or missing never match. */
function compare(actual: unknown, expected: unknown, op: 'gt' | 'gte' | 'lt' | 'lte'): boolean {
  const bothNumbers = typeof actual === 'number' && typeof expected === 'number';
  const bothStrings = typeof actual === 'string' && typeof expected === 'string';
  if (!bothNumbers && !bothStrings) return false;
  const a = actual as number | string;
  const b = expected as number | string;
  switch (op) {
    case 'gt':
      return a > b;
    case 'gte':
      return a >= b;
    case 'lt':
      return a < b;
    case 'lte':
      return a <= b;
    default:
      return assertNever(op);
  }
}
