/** One Audience API token as the store keeps it (the control plane's shape), and its admin view. */
import type { StoredToken } from './documents.js';
import type { Token } from '../generated/token.js';

/** Epoch milliseconds throughout; null = not set. */
export type TokenRecord = StoredToken;

const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());

/** What the admin API shows: never the token, never its hash. */
export function toView(r: TokenRecord): Token {
  return {
    id: r.id,
    last3: r.last3,
    createdBy: r.createdBy,
    label: r.label,
    createdAt: new Date(r.createdAt).toISOString(),
    lastUsedAt: iso(r.lastUsedAt),
    expiresAt: iso(r.expiresAt),
    revokedAt: iso(r.revokedAt),
  };
}

/** Counts toward the pool of 10 and authenticates: not revoked, not expired (expiry is exclusive). */
export function isActive(r: TokenRecord, now: number): boolean {
  return r.revokedAt === null && (r.expiresAt === null || now < r.expiresAt);
}
