/** The shapes of the control plane's documents (types.ts: `orgKey`, `tokensKey`). Times are epoch ms. */
import type { Environment } from '../core/domain.js';
import type { Org } from '../generated/org.js';

/** `org.<slug>`: the org's settings and both partner credentials, written together so a create is atomic. */
export interface OrgDocument {
  org: Org;
  credentials: Record<Environment, StoredCredential>;
}

/**
 * What `org.<slug>` becomes when the org is deleted: settings and credential hashes gone, the key kept
 * so the slug is never given to another org (events naming it may still be in the log).
 */
export interface DeletedOrgDocument {
  deletedAt: string;
}

export function isDeletedOrg(value: unknown): value is DeletedOrgDocument {
  return typeof value === 'object' && value !== null && 'deletedAt' in value;
}

/** Only the SHA-256 of a partner secret (and of a write key) is kept. */
export interface StoredCredential {
  partnerId: string;
  secretHash: string;
  createdAt: number;
  rotatedAt: number | null;
  /** The Segment-style write key (routes/tracking): absent for orgs made before write keys, null once revoked. */
  writeKey?: StoredWriteKey | null;
}

/** A write key's SHA-256 and its last 4 characters, so people can tell which one a client holds. */
export interface StoredWriteKey {
  hash: string;
  last4: string;
  createdAt: number;
}

/** `tokens.<slug>`: every token of the org, revoked and expired ones included, so the pool rule holds in one document. */
export interface TokensDocument {
  tokens: StoredToken[];
}

/** Only the SHA-256 of a token is kept, plus its last 3 characters so people can recognise it. */
export interface StoredToken {
  id: string;
  org: string;
  hash: string;
  last3: string;
  createdBy: string;
  label: string | null;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  /** Written from memory at most every 30 s per process and at shutdown, never per request. */
  lastUsedAt: number | null;
}
