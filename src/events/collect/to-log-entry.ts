/** Turns an accepted or rejected event into the log entry that carries it (secrets removed). */
import { v7 as uuidv7 } from 'uuid';
import type { PartnerIdentity } from '../../control/partner-registry.js';
import type { ProblemDetail } from '../../core/errors.js';
import { eventFacts } from '../log/event-facts.js';
import type { LogEntry } from '../log/types.js';
import { tooDeep } from '../../http/json-body.js';
import { PLAN_VIOLATION } from '../plans/plan-store.js';

export type Body = Record<string, unknown>;

export function isObject(value: unknown): value is Body {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The client's messageId when it sent a usable one, else a server-assigned UUIDv7 (SPEC 4.2). */
export function messageIdOf(body: Body): string {
  const given = body.messageId;
  return typeof given === 'string' && given.length > 0 && given.length <= 100 ? given : uuidv7();
}

/**
 * The event as stored: JSON text without partnerSecret or writeKey, with its messageId. Serialized once.
 * Bodies come through the depth-bounded parser (http/json-body.ts); should one ever not, a stack
 * overflow here still answers json_too_deep instead of a 500.
 */
export function storedBody(body: Body, messageId: string): string {
  const { partnerSecret: _secret, writeKey: _writeKey, ...rest } = body;
  return serialized({ ...rest, messageId });
}

/** JSON text of an event the service built itself (no secret in it), e.g. from a Segment message. */
export function serialized(event: Body): string {
  try {
    return JSON.stringify(event);
  } catch (error) {
    if (error instanceof RangeError) throw tooDeep();
    throw error;
  }
}

/**
 * `event`: the accepted event as parsed, whose stored JSON is `storedText`; its facts go with it (event-facts.ts).
 * `planViolations`: it broke its observed tracking plan (plan-verdict.ts): stored all the same, the reasons counted.
 */
export function acceptedEntry(event: Body, storedText: string, who: PartnerIdentity, messageId: string, receivedAt: number, planViolations?: ProblemDetail[]): LogEntry {
  return {
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
