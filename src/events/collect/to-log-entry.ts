/** Turns an accepted or rejected event into the log entry that carries it (secrets removed). */
import { v7 as uuidv7 } from 'uuid';
import type { PartnerIdentity } from '../../control/partner-registry.js';
import type { ProblemDetail } from '../../core/errors.js';
import { eventFacts } from '../log/event-facts.js';
import type { BatchPart, LogEntry } from '../log/types.js';
import { PLAN_VIOLATION } from '../plans/plan-store.js';
import { type Body, storedBody } from '../log/stored-body.js';

export { type Body, batchMemberEvent, serialized, storedBody } from '../log/stored-body.js';

export function isObject(value: unknown): value is Body {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The client's messageId when it sent a usable one, else a server-assigned UUIDv7 (SPEC 4.2). */
export function messageIdOf(body: Body): string {
  const given = body.messageId;
  return typeof given === 'string' && given.length > 0 && given.length <= 100 ? given : uuidv7();
}

/**
 * `event`: the accepted event as parsed, whose stored JSON is `storedText`; its facts go with it (event-facts.ts).
 * `planViolations`: it broke its observed tracking plan (plan-verdict.ts): stored all the same, the reasons counted.
 * `batchPart`: a member of a batch stored as it arrived (batch-text.ts), whose `storedText` is made when its record is read.
 */
export function acceptedEntry(
  event: Body,
  storedText: string,
  who: PartnerIdentity,
  messageId: string,
  receivedAt: number,
  planViolations?: ProblemDetail[],
  batchPart?: BatchPart,
): LogEntry {
  const entry: LogEntry = {
    kind: 'event',
    org: who.org,
    environment: who.environment,
    messageId,
    receivedAt,
    body: storedText,
    code: planViolations ? PLAN_VIOLATION : null,
    errors: planViolations ? JSON.stringify(planViolations) : null,
    facts: eventFacts(event, receivedAt),
  };
  if (batchPart) entry.batchPart = batchPart;
  return entry;
}

export function rejectedEntry(
  body: unknown,
  who: PartnerIdentity,
  code: string,
  errors: ProblemDetail[],
  receivedAt: number,
): LogEntry {
  const asObject = isObject(body) ? body : { value: body };
  return {
    kind: 'rejected',
    org: who.org,
    environment: who.environment,
    messageId: uuidv7(),
    receivedAt,
    body: storedBody(asObject, typeof asObject.messageId === 'string' ? asObject.messageId : ''),
    code,
    errors: JSON.stringify(errors),
    facts: null,
  };
}
