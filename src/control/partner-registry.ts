/**
 * In-memory partner credentials for the collect hot path (no DuckDB read per event).
 * Unknown partner and wrong secret take the same path and time: both hash and compare (SPEC 4.3).
 */
import type { Environment } from '../core/domain.js';
import { matchesHash, sha256Hex } from '../core/secrets.js';

export interface PartnerIdentity {
  org: string;
  environment: Environment;
}

interface Entry extends PartnerIdentity {
  secretHash: string;
}

/** Compared against when the partner is unknown, so both failures cost one hash + compare. */
const DECOY_HASH = sha256Hex('decoy-secret-never-issued');

export class PartnerRegistry {
  private readonly byPartnerId = new Map<string, Entry>();

  set(partnerId: string, entry: Entry): void {
    this.byPartnerId.set(partnerId, entry);
  }

  delete(partnerId: string): void {
    this.byPartnerId.delete(partnerId);
  }

  authenticate(partnerId: unknown, partnerSecret: unknown): PartnerIdentity | undefined {
    const id = typeof partnerId === 'string' ? partnerId : '';
    const secret = typeof partnerSecret === 'string' ? partnerSecret : '';
    const entry = this.byPartnerId.get(id);
    const ok = matchesHash(secret, entry?.secretHash ?? DECOY_HASH);
    return ok && entry ? { org: entry.org, environment: entry.environment } : undefined;
  }
}
