/**
 * SPEC 4.5: identify maps its clientId to traits.email for 7 days from receipt; the latest wins.
 * Kept in memory (loaded from identify_mappings at start, written through by the compactor).
 */
export const IDENTITY_TTL_MS = 7 * 24 * 60 * 60 * 1000;

export interface Mapping {
  org: string;
  environment: string;
  clientId: string;
  email: string;
  receivedAt: number;
}

export function clientKey(org: string, environment: string, clientId: string): string {
  return `${org}\u0000${environment}\u0000${clientId}`;
}

export class IdentityMap {
  private readonly mappings = new Map<string, Mapping>();

  /** Records an identify; an older identify arriving late does not replace a newer one. */
  record(mapping: Mapping): boolean {
    const key = clientKey(mapping.org, mapping.environment, mapping.clientId);
    const current = this.mappings.get(key);
    if (current && current.receivedAt > mapping.receivedAt) return false;
    this.mappings.set(key, mapping);
    return true;
  }

  /** The e-mail mapped to the clientId at `at` (epoch ms), if a mapping was valid then. */
  emailAt(org: string, environment: string, clientId: string, at: number): string | undefined {
    const m = this.mappings.get(clientKey(org, environment, clientId));
    if (!m || at < m.receivedAt || at >= m.receivedAt + IDENTITY_TTL_MS) return undefined;
    return m.email;
  }
}
