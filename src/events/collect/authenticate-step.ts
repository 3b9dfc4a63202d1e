/** Collect step 1: the body is a JSON object whose partnerId and partnerSecret name a partner (SPEC 4.2). */
import type { PartnerIdentity, PartnerRegistry } from '../../control/partner-registry.js';
import type { Clock } from '../../core/context.js';
import { AppError } from '../../core/errors.js';
import { type Ok, ok, type Stop, stop } from './outcome.js';
import { type Body, isObject } from './to-log-entry.js';

/** A request from a known partner, at the server time it was received. */
export interface Received {
  body: Body;
  who: PartnerIdentity;
  receivedAt: number;
}

/** `shape` says what the endpoint's body must be, for the client whose body is not a JSON object. */
export function createAuthenticateStep(registry: PartnerRegistry, clock: Clock, shape: string): (body: unknown) => Ok<Received> | Stop {
  return function authenticateStep(body) {
    // A body that is not a JSON object cannot carry credentials: say what it must be, not "wrong secret".
    if (!isObject(body)) {
      const got = body === null ? 'null' : Array.isArray(body) ? 'an array' : `a ${typeof body}`;
      return stop(new AppError('invalid_request', `The body must be a JSON object ${shape}; got ${got}.`));
    }
    const who = registry.authenticate(body.partnerId, body.partnerSecret);
    if (!who) return stop(new AppError('invalid_credentials', 'partnerId and partnerSecret do not identify a partner.'));
    return ok({ body, who, receivedAt: clock.now() });
  };
}
