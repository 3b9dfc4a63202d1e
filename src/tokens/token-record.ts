/** One Audience API token as the store keeps it in memory, and its two outside shapes (row, view). */
import type { Token } from '../generated/token.js';

/** Epoch milliseconds throughout; null = not set. */
export interface TokenRecord {
  id: string;
  org: string;
  hash: string;
  last3: string;
  createdBy: string;
  label: string | null;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  lastUsedAt: number | null;
}

/** A row of `audience_tokens` as `Database.all` returns it. */
export interface TokenRow {
  id: string;
  org: string;
  token_hash: string;
  last3: string;
  created_by: string;
  label: string | null;
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

const ms = (d: Date | null): number | null => (d === null ? null : d.getTime());
const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());

export function fromRow(row: TokenRow): TokenRecord {
  return {
    id: row.id,
    org: row.org,
    hash: row.token_hash,
    last3: row.last3,
    createdBy: row.created_by,
    label: row.label,
    createdAt: row.created_at.getTime(),
    expiresAt: ms(row.expires_at),
    revokedAt: ms(row.revoked_at),
    lastUsedAt: ms(row.last_used_at),
  };
}

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

/** The same rule in SQL; `nowParam` is the positional parameter (e.g. `$2`) bound to the current time. */
export function activeSql(nowParam: string): string {
  return `revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ${nowParam})`;
}
