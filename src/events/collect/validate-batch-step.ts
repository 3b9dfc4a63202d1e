/**
 * Collect step 2 of /http/v1/batch: the envelope, then every member, turned into log entries. A batch is
 * atomic (SPEC 4.1): one invalid member sends every member to quarantine and nothing is accepted.
 */
import { AppError } from '../../core/errors.js';
import type { Accepted } from './accepted.js';
import type { Received } from './authenticate-step.js';
import { ok, type Outcome, quarantine, stop } from './outcome.js';
import { schemaViolation } from './schema-violation.js';
import { type Body, acceptedEntry, batchMemberEvent, messageIdOf, rejectedEntry, storedBody } from './to-log-entry.js';
import { batchTextWithoutSecret, storedLengthAtMost } from './batch-text.js';
import { validateBatch, validateBatchMember } from './validate-event.js';
import { inBody, NO_PLANS, PLAN_VIOLATION, type Plans, type PlanVerdict, planVerdict } from './plan-verdict.js';
import { PROPERTIES_IN_BODY } from './validate-event-step.js';

/**
 * `memberLimitBytes`: the most one member may take as stored, the limit of a single event (SPEC 4.1).
 * A member that breaks an enforced tracking plan is invalid as one that breaks the schema.
 * An accepted batch is stored as it arrived where its secret can be cut out exactly (batch-text.ts): its
 * members' bodies are then made when the log is read, and a member is serialized here only when its size
 * must be known exactly.
 */
export function createValidateBatchStep(memberLimitBytes: number, plans: Plans = NO_PLANS): (received: Received) => Outcome<Accepted> {
  return function validateBatchStep({ body, who, receivedAt }) {
    const envelope = validateBatch(body);
    if (!envelope.ok) {
      return quarantine([rejectedEntry(body, who, 'schema_violation', envelope.errors, receivedAt)], schemaViolation(who.org, body, envelope.errors));
    }
    const text = batchTextWithoutSecret(body);
    const batch = text === undefined ? undefined : { text };
    const members = envelope.batch.batch.map((member, index) => {
      // Members carry no secret (the schema refuses one), so the stored event never holds it.
      const event = batchMemberEvent(envelope.batch, member as Body);
      const checked = validateBatchMember(member);
      const verdict: PlanVerdict = checked.ok ? planVerdict(plans, who, event) : { kind: 'pass' };
      const result = verdict.kind === 'enforced' ? { ok: false as const, errors: verdict.reasons, plan: true } : checked;
      const messageId = result.ok ? messageIdOf(event) : '';
      const madeLater = result.ok && batch !== undefined && storedLengthAtMost(event, messageId, memberLimitBytes);
      const part = madeLater ? { batch, member: index } : undefined;
      return { event, result, verdict, messageId, part, stored: result.ok && !madeLater ? storedBody(event, messageId) : '' };
    });
    if (members.some((m) => m.stored.length > memberLimitBytes)) {
      return stop(new AppError('payload_too_large', `every batch member must be at most ${memberLimitBytes} bytes`));
    }
    const errors = members.flatMap((m, i) =>
      m.result.ok ? [] : ('plan' in m.result ? inBody(m.result.errors, PROPERTIES_IN_BODY) : m.result.errors).map((e) => ({ path: `/batch/${i}${e.path}`, message: e.message })),
    );
    if (errors.length > 0) {
      const entries = members.map((m) =>
        m.result.ok
          ? rejectedEntry(m.event, who, 'batch_rejected', [{ path: '/', message: 'another member of its batch was invalid' }], receivedAt)
          : rejectedEntry(m.event, who, 'plan' in m.result ? PLAN_VIOLATION : 'schema_violation', m.result.errors, receivedAt),
      );
      return quarantine(entries, schemaViolation(who.org, body, errors));
    }
    const entries = members.map((m) =>
      acceptedEntry(m.event, m.stored, who, m.messageId, receivedAt, m.verdict.kind === 'observed' ? m.verdict.reasons : undefined, m.part),
    );
    return ok({ who, entries, answer: { messageIds: members.map((m) => m.messageId) } });
  };
}
