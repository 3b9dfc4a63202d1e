/**
 * In-memory partner credentials for the collect hot path (no DuckDB read per event).
 * Unknown partner and wrong secret take the same path and time: both hash and compare (SPEC 4.3).
 * Write keys (the Segment-style tracking API) are found by their SHA-256: the lookup sees only the hash
 * of what was presented, so its timing says nothing about any key that exists.
 */
import type { Environment } from '../core/domain.js';
import { matchesHash, sha256Hex } from '../core/secrets.js';

export interface PartnerIdentity {
  org: string;
  environment: Environment;
}

interface Entry extends PartnerIdentity {
  secretHash: string;
  /** The SHA-256 of the environment's write key, when it has one. */
  writeKeyHash?: string | undefined;
}

/** Compared against when the partner is unknown, so both failures cost one hash + compare. */
const DECOY_HASH = sha256Hex('decoy-secret-never-issued');

export class PartnerRegistry {
  private readonly byPartnerId = new Map<string, Entry>();
  private readonly byWriteKeyHash = new Map<string, PartnerIdentity>();

  set(partnerId: string, entry: Entry): void {
    this.delete(partnerId);
    this.byPartnerId.set(partnerId, entry);
    if (entry.writeKeyHash) this.byWriteKeyHash.set(entry.writeKeyHash, { org: entry.org, environment: entry.environment });
  }

  delete(partnerId: string): void {
    const old = this.byPartnerId.get(partnerId);
    if (old?.writeKeyHash) this.byWriteKeyHash.delete(old.writeKeyHash);
    this.byPartnerId.delete(partnerId);
  }

  authenticate(partnerId: unknown, partnerSecret: unknown): PartnerIdentity | undefined {
    const id = typeof partnerId === 'string' ? partnerId : '';
    const secret = typeof partnerSecret === 'string' ? partnerSecret : '';
    const entry = this.byPartnerId.get(id);
    const ok = matchesHash(secret, entry?.secretHash ?? DECOY_HASH);
    return ok && entry ? { org: entry.org, environment: entry.environment } : undefined;
  }

  /** The org environment whose write key was presented; an empty or unknown key is undefined. */
  authenticateWriteKey(writeKey: string): PartnerIdentity | undefined {
    return writeKey === '' ? undefined : this.byWriteKeyHash.get(sha256Hex(writeKey));
  }
}
