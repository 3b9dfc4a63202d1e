/** `identity=<type>:<value>` of GET /audience/v2/contacts (SPEC 6.2). */
import { isEmailAddress, normalizeEmail } from '../../core/domain.js';
import type { IdentityType } from './profile-index.js';

export type Identity = { type: IdentityType; value: string };

const SHA256_HEX = /^[0-9a-f]{64}$/i;

/** The identity, or undefined when missing, malformed, of an unsupported type, or an invalid e-mail. */
export function parseIdentity(raw: unknown): Identity | undefined {
  if (typeof raw !== 'string') return undefined;
  const colon = raw.indexOf(':');
  if (colon <= 0) return undefined;
  const type = raw.slice(0, colon);
  const value = raw.slice(colon + 1);
  switch (type) {
    case 'email': {
      const email = normalizeEmail(value);
      return isEmailAddress(email) ? { type, value: email } : undefined;
    }
    case 'email-hash':
      return SHA256_HEX.test(value) ? { type, value: value.toLowerCase() } : undefined;
    case 'user_id':
      return value.length > 0 && value.length <= 255 ? { type, value } : undefined;
    default:
      return undefined;
  }
}
