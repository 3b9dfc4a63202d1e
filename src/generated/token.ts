/* Generated from schemas/ by src/tools/generate-types.ts (npm run types). Do not edit. */

/**
 * This interface was referenced by `Token`'s JSON-Schema
 * via the `definition` "id".
 */
export type Id = string;
/**
 * The last 3 characters of the token, to recognise it
 *
 * This interface was referenced by `Token`'s JSON-Schema
 * via the `definition` "last3".
 */
export type Last3 = string;
/**
 * E-mail of the person the token was issued to or by; stored lower-cased
 *
 * This interface was referenced by `Token`'s JSON-Schema
 * via the `definition` "createdBy".
 */
export type CreatedBy = string;
/**
 * This interface was referenced by `Token`'s JSON-Schema
 * via the `definition` "label".
 */
export type Label = string;
/**
 * RFC 3339 with an offset, in the future. Default: never expires
 *
 * This interface was referenced by `Token`'s JSON-Schema
 * via the `definition` "expiresAt".
 */
export type ExpiresAt = string;
/**
 * Exactly one of last3 (one active token must match) or createdBy (all of that creator's active tokens).
 *
 * This interface was referenced by `Token`'s JSON-Schema
 * via the `definition` "TokenRevoke".
 */
export type TokenRevoke = TokenRevokeByLast3 | TokenRevokeByCreator;

/**
 * An Audience API token as the admin API lists it (SPEC 3). The token itself is never listed.
 */
export interface Token {
  id: Id;
  last3: Last3;
  createdBy: CreatedBy;
  label: Label | null;
  createdAt: string;
  /**
   * Kept in memory, written to DuckDB at most every 30 s and at shutdown
   */
  lastUsedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
}
/**
 * This interface was referenced by `Token`'s JSON-Schema
 * via the `definition` "TokenCreate".
 */
export interface TokenCreate {
  createdBy: CreatedBy;
  label?: Label;
  expiresAt?: ExpiresAt;
}
/**
 * The answer to a create: the only time the token is shown.
 *
 * This interface was referenced by `Token`'s JSON-Schema
 * via the `definition` "TokenIssued".
 */
export interface TokenIssued {
  id: Id;
  token: string;
  last3: Last3;
  createdBy: CreatedBy;
  createdAt: string;
  expiresAt: string | null;
}
export interface TokenRevokeByLast3 {
  last3: Last3;
}
export interface TokenRevokeByCreator {
  createdBy: CreatedBy;
}
