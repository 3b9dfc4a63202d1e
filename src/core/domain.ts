/** Small shared vocabulary of the domain. */
import { validatorFor } from './schemas.js';
import { sha256Hex } from './secrets.js';

export const ENVIRONMENTS = ['staging', 'production'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

export function isEnvironment(value: unknown): value is Environment {
  return value === 'staging' || value === 'production';
}

export function assertNever(value: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(value)}`);
}

/** A well-formed e-mail address (schemas/org.schema.json#/$defs/email). */
export const isEmailAddress = validatorFor<string>('org.schema.json', '#/$defs/email');

/** The contact key: trimmed, lower-cased e-mail (SPEC 4.5). */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** A contact's e-mail hash (the Audience API's email-hash identity, erasure tombstones): SHA-256 hex of the normalised address. */
export function emailHash(normalizedEmail: string): string {
  return sha256Hex(normalizedEmail);
}

/** Items by key, in first-seen order (Map.groupBy is Node 21+). */
export function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const list = groups.get(keyOf(item));
    if (list) list.push(item);
    else groups.set(keyOf(item), [item]);
  }
  return groups;
}
