/** Random identifiers and secrets, their stored hashes, and constant-time comparison. */
import { hash, timingSafeEqual } from 'node:crypto';
import type { Context } from './context.js';

export const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Uniform base62 string (rejection sampling keeps every character equally likely). */
export function randomBase62(ctx: Pick<Context, 'randomBytes'>, length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of ctx.randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

/**
 * SHA-256 hex. Secrets here are 40+ random characters, so a fast hash is enough (no guessing).
 * `crypto.hash` (one call, no Hash object) costs a third of createHash().update().digest(): this runs
 * on every collect and Audience API request.
 */
export function sha256Hex(value: string): string {
  return hash('sha256', value, 'hex');
}

/** Compares a presented secret with a stored hash without leaking where they differ. */
export function matchesHash(presented: string, storedHashHex: string): boolean {
  const presentedHash = hash('sha256', presented, 'buffer');
  const stored = Buffer.from(storedHashHex, 'hex');
  return stored.length === presentedHash.length && timingSafeEqual(presentedHash, stored);
}
