/**
 * Collect step 2 of the tracking API (Segment's, RudderStack's and Jitsu's paths): each message turned into
 * this service's events (segment-message.ts), then each event checked as a batch member is. Atomic like
 * /http/v1/batch: one message that cannot be stored sends every message of the request to quarantine.
 */
import { AppError, type ProblemDetail } from '../../core/errors.js';
import type { Accepted } from './accepted.js';
import type { Received } from './authenticate-step.js';
import { ok, type Outcome, quarantine, stop } from './outcome.js';
import { schemaViolation } from './schema-violation.js';
import { fromSegment, type SegmentType } from './segment-message.js';
import { type Body, acceptedEntry, messageIdOf, rejectedEntry, serialized } from './to-log-entry.js';
import { validateBatchMember } from './validate-event.js';
import { inBody, NO_PLANS, PLAN_VIOLATION, type Plans, planVerdict } from './plan-verdict.js';

export interface SegmentRequest extends Received {
  /** The messages: one for /v1/track and the like, the members of `batch` for /v1/batch (undefined: not an array). */
  messages: unknown[] | undefined;
  /** The path's type (/v1/track), for messages that do not say. */
  type?: SegmentType;
  /** /v1/import: history, never enters a flow. */
  history: boolean;
}

/**
 * `eventLimitBytes`: the most one stored event may take (Segment's 32 KB). A message that breaks an
 * enforced tracking plan cannot be stored, as one that breaks the schema.
 */
export function createValidateSegmentStep(eventLimitBytes: number, plans: Plans = NO_PLANS): (request: SegmentRequest) => Outcome<Accepted> {
  return function validateSegmentStep({ body, who, receivedAt, messages, type, history }) {
    if (messages === undefined || messages.length === 0) {
      const errors = [{ path: '/batch', message: 'must be an array of at least one message: {"batch": [messages]}' }];
      return quarantine([rejectedEntry(body, who, 'schema_violation', errors, receivedAt)], new AppError('message_rejected', errors[0]!.message, { members: { errors } }));
    }
    const events = messages.map((message, i) => {
      const translated = fromSegment(message, { ...(type ? { type } : {}), receivedAt, history });
      if (!translated.ok) return [{ message, index: i, errors: translated.errors }];
      return translated.events.map((event) => {
        const result = validateBatchMember(event);
        if (!result.ok) return { message: event, index: i, errors: result.errors, messageId: '', stored: '' };
        const verdict = planVerdict(plans, who, event);
        // Segment's properties are the event's own: the reasons' paths are theirs in the message.
        if (verdict.kind === 'enforced') return { message: event, index: i, errors: inBody(verdict.reasons, '/properties'), plan: verdict.reasons, messageId: '', stored: '' };
        // Built by segment-message.ts from the message's members: no secret to leave out.
        const messageId = (event.messageId = messageIdOf(event));
        return { message: event, index: i, errors: [], observed: verdict.kind === 'observed' ? verdict.reasons : undefined, messageId, stored: serialized(event) };
      });
    }).flat();
    if (events.some((e) => 'stored' in e && e.stored.length > eventLimitBytes)) {
      return stop(new AppError('payload_too_large', `every message must be at most ${eventLimitBytes} bytes (Segment's limit)`));
    }
    const prefix = messages.length > 1 || Array.isArray(body.batch) ? (i: number) => `/batch/${i}` : () => '';
    const errors = events.flatMap((e) => e.errors.map((error) => ({ path: `${prefix(e.index)}${error.path}`, message: error.message })));
    if (errors.length > 0) {
      const entries = events.map((e) =>
        'plan' in e && e.plan
          ? rejectedEntry(e.message, who, PLAN_VIOLATION, e.plan, receivedAt)
          : e.errors.length > 0
          ? rejectedEntry(e.message, who, 'schema_violation', e.errors, receivedAt)
          : rejectedEntry(e.message, who, 'batch_rejected', [{ path: '/', message: 'another message of its request was invalid' }], receivedAt),
      );
      const problem = schemaViolation(who.org, debugBody(messages), errors);
      // Segment's SDKs surface a 400 as an error (a 412 is not in their contract).
      return quarantine(entries, new AppError('message_rejected', problem.detail, problem.extra));
    }
    const accepted = events as Array<{ message: unknown; messageId: string; stored: string; observed?: ProblemDetail[] }>;
    return ok({ who, entries: accepted.map((e) => acceptedEntry(e.message as Body, e.stored, who, e.messageId, receivedAt, e.observed)), answer: { messageIds: accepted.map((e) => e.messageId) } });
  };
}

/** A request asks for the reasons when one of its messages has context.debug=true (as /http/v1/collect). */
function debugBody(messages: unknown[]): unknown {
  return messages.find((m) => typeof m === 'object' && m !== null && (m as { context?: { debug?: unknown } }).context?.debug === true) ?? {};
}
