/**
 * Schema checks of collected events (SPEC 4.1, 4.2). The schemas in schemas/ are the contract; this
 * file only picks the validator and turns ajv's errors into `{ path, message }` values.
 */
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import type { ProblemDetail } from '../../core/errors.js';
import type { BatchEnvelope } from '../../generated/batch.js';
import type { BatchMember, Event } from '../../generated/event.js';
import { toProblemDetails, validatorFor } from '../../core/schemas.js';
import { explainControlFree } from './control-free.js';

export type Rejection = { ok: false; errors: ProblemDetail[] };
export type EventValidation = { ok: true; event: Event } | Rejection;
export type BatchMemberValidation = { ok: true; event: BatchMember } | Rejection;
/** Members are not looked at yet: `batch.batch` is `unknown[]` until each passes validateBatchMember. */
export type BatchValidation = { ok: true; batch: BatchEnvelope } | Rejection;

// Compiled at import, so a broken schema stops the service at start rather than at the first event.
const eventValidator = validatorFor<Event>('event.schema.json');
const memberValidator = validatorFor<BatchMember>('event.schema.json', '#/$defs/batchMember');
const envelopeValidator = validatorFor<BatchEnvelope>('batch.schema.json', '#/$defs/envelope');

/** One event as POSTed to /http/v1/collect, credentials included. */
export function validateEvent(body: unknown): EventValidation {
  return eventValidator(body) ? { ok: true, event: body } : rejected(eventValidator);
}

/** A batch's envelope: credentials, context and the member count (1..2,500), not the members. */
export function validateBatch(body: unknown): BatchValidation {
  return envelopeValidator(body) ? { ok: true, batch: body } : rejected(envelopeValidator);
}

/** One member of a batch: an event without credentials. Paths are relative to the member. */
export function validateBatchMember(member: unknown): BatchMemberValidation {
  return memberValidator(member) ? { ok: true, event: member } : rejected(memberValidator);
}

function rejected(validate: ValidateFunction): Rejection {
  // ajv sets `errors` whenever a validator returns false.
  return { ok: false, errors: problems(validate.errors as ErrorObject[]) };
}

/**
 * "must be >= 946684800000" does not tell a client that sent seconds what is wrong; the bounds
 * themselves are the schema's (2000-01-01 and 2100-01-01 in epoch ms).
 */
function explainSentAt(e: ErrorObject): ErrorObject {
  if (e.instancePath !== '/sentAt' || (e.keyword !== 'minimum' && e.keyword !== 'maximum')) return e;
  const limit = (e.params as { limit: number }).limit;
  const day = new Date(limit).toISOString().slice(0, 10);
  const message =
    e.keyword === 'minimum'
      ? `must be epoch milliseconds, at least ${limit} (${day}); a value in seconds is too small`
      : `must be epoch milliseconds, at most ${limit} (${day}); a value in microseconds is too large`;
  return { ...e, message };
}

function problems(errors: ErrorObject[]): ProblemDetail[] {
  const kept = errors
    // A discriminator error repeats the tag's own enum or required error (the schemas declare the
    // tag's enum next to every discriminator), and that one names the member.
    .filter((e) => e.keyword !== 'discriminator')
    // `false` marks a member the chosen type must not carry (identify has no event or properties).
    .map((e) => (e.keyword === 'false schema' ? { ...e, message: 'is not allowed for this type' } : e))
    .map(explainSentAt)
    .map(explainControlFree);
  // traits.email of an identify is checked by both the common traits and the identify traits.
  const seen = new Set<string>();
  return toProblemDetails(kept).filter((p) => {
    const key = `${p.path}\u0000${p.message}`;
    return seen.has(key) ? false : (seen.add(key), true);
  });
}
