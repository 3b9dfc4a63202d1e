/** Collect step 2 of /http/v1/collect: one event against its schema, turned into the log entry that carries it. */
import type { Accepted } from './accepted.js';
import type { Received } from './authenticate-step.js';
import { type Ok, ok, type Quarantine, quarantine } from './outcome.js';
import { schemaViolation } from './schema-violation.js';
import { acceptedEntry, messageIdOf, rejectedEntry, storedBody } from './to-log-entry.js';
import { validateEvent } from './validate-event.js';
import { inBody, NO_PLANS, PLAN_VIOLATION, type Plans, planVerdict } from './plan-verdict.js';

/** The event's own properties in a /http/v1 body. */
export const PROPERTIES_IN_BODY = '/properties/properties';

export function createValidateEventStep(plans: Plans = NO_PLANS): (received: Received) => Ok<Accepted> | Quarantine {
  return function validateEventStep({ body, who, receivedAt }) {
    const result = validateEvent(body);
    if (!result.ok) {
      return quarantine([rejectedEntry(body, who, 'schema_violation', result.errors, receivedAt)], schemaViolation(who.org, body, result.errors));
    }
    const verdict = planVerdict(plans, who, body);
    if (verdict.kind === 'enforced') {
      return quarantine([rejectedEntry(body, who, PLAN_VIOLATION, verdict.reasons, receivedAt)], schemaViolation(who.org, body, inBody(verdict.reasons, PROPERTIES_IN_BODY)));
    }
    const messageId = messageIdOf(body);
    const observed = verdict.kind === 'observed' ? verdict.reasons : undefined;
    return ok({ who, entries: [acceptedEntry(body, storedBody(body, messageId), who, messageId, receivedAt, observed)], answer: { messageId } });
  };
}
