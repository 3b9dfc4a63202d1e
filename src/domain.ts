/** Small shared vocabulary of the domain. */
export const ENVIRONMENTS = ['staging', 'production'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

export function isEnvironment(value: unknown): value is Environment {
  return value === 'staging' || value === 'production';
}

export function assertNever(value: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(value)}`);
}

/** The contact key: trimmed, lower-cased e-mail (SPEC 4.5). */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}
