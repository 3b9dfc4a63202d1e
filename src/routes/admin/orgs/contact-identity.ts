/**
 * An admin call's `identity` (email:, email-hash:, user_id:): parsed or refused (400 invalid_identity),
 * and, where the call acts on an address, the contact's e-mail. An e-mail needs no profile (consent may be
 * recorded, or an erasure asked, before the contact's events are compacted); the other kinds name a
 * contact the org's profiles know (404 contact_not_found otherwise).
 */
import { AppError } from '../../../core/errors.js';
import { type Identity, parseIdentity } from '../../../events/profiles/parse-identity.js';
import type { ProfileIndex } from '../../../events/profiles/profile-index.js';

export function identityOf(raw: unknown): Identity {
  const identity = parseIdentity(raw);
  if (!identity) throw new AppError('invalid_identity', 'identity must be email:<address>, email-hash:<sha256 hex> or user_id:<id>');
  return identity;
}

export function contactEmailOf(profiles: Pick<ProfileIndex, 'find'>, org: string, raw: unknown): string {
  const identity = identityOf(raw);
  const email = identity.type === 'email' ? identity.value : (profiles.find(org, identity.type, identity.value)?.email_address as string | undefined);
  if (!email) throw new AppError('contact_not_found', `no contact with ${identity.type} ${identity.value} in this org: use email:<address>`);
  return email;
}
