/** Collect step 2 of /http/v1/collect: one event against its schema, turned into the log entry that carries it. */
import type { Accepted } from './accepted.js';
import type { Received } from './authenticate-step.js';
import { type Ok, ok, type Quarantine, quarantine } from './outcome.js';
import { schemaViolation } from './schema-violation.js';
import { acceptedEntry, messageIdOf, rejectedEntry, storedBody } from './to-log-entry.js';
import { validateEvent } from './validate-event.js';

export function createValidateEventStep(): (received: Received) => Ok<Accepted> | Quarantine {
  return function validateEventStep({ body, who, receivedAt }) {
    const result = validateEvent(body);
    if (!result.ok) {
      return quarantine([rejectedEntry(body, who, 'schema_violation', result.errors, receivedAt)], schemaViolation(who.org, body, result.errors));
    }
    const messageId = messageIdOf(body);
    return ok({ who, entries: [acceptedEntry(body, storedBody(body, messageId), who, messageId, receivedAt)], answer: { messageId } });
  };
}
