/**
 * POST /http/v1/collect and /http/v1/batch (SPEC 4).
 * Order: content type → body size/JSON and its depth (Fastify, http/json-body.ts) → a JSON object →
 * authenticate → validate → append → answer.
 * A 200 is sent only after the log write resolved (durable); every rejection is appended to the log as
 * a quarantine entry first, so it is kept even though the client only sees the error. A write that was
 * sent but not confirmed answers 503 log_outcome_unknown with the messageIds: the retry is deduplicated.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Context } from '../../core/context.js';
import { AppError, type ProblemDetail } from '../../core/errors.js';
import { toAppError } from '../../http/problem.js';
import type { GroupCommitter } from '../../events/log/group-commit.js';
import { LogOutcomeUnknownError, LogUnavailableError, type LogEntry } from '../../events/log/types.js';
import type { Metrics } from '../../ops/metrics.js';
import type { PartnerIdentity, PartnerRegistry } from '../../control/partner-registry.js';
import { acceptedEntry, messageIdOf, rejectedEntry, storedBody } from '../../events/collect/to-log-entry.js';
import { validateBatch, validateBatchMember, validateEvent } from '../../events/collect/validate-event.js';

export interface CollectDeps {
  ctx: Context;
  registry: PartnerRegistry;
  log: GroupCommitter;
  metrics: Metrics;
}

/** SPEC 4.1 limits. */
const EVENT_LIMIT_BYTES = 32 * 1024;
const BATCH_LIMIT_BYTES = 500 * 1024;

type Body = Record<string, unknown>;

function requireJson(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
  const type = request.headers['content-type'] ?? '';
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    done(new AppError('unsupported_media_type', 'Content-Type must be application/json'));
    return;
  }
  done();
}

function isObject(value: unknown): value is Body {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function debugRequested(body: unknown): boolean {
  return isObject(body) && isObject(body.context) && body.context.debug === true;
}

function rejection(org: string, debug: boolean, errors: ProblemDetail[]): AppError {
  if (debug) return new AppError('schema_violation', 'The event does not match the schema.', { members: { errors } });
  return new AppError(
    'schema_violation',
    'The event was rejected and kept in quarantine. Send it with context.debug=true to see the reasons, ' +
      `or list them with GET /admin/v1/orgs/${org}/quarantine.`,
  );
}

export function registerCollectRoutes(app: FastifyInstance, deps: CollectDeps): void {
  const { ctx, registry, metrics } = deps;
  const countRejection = (_request: FastifyRequest, _reply: FastifyReply, error: Error, done: () => void) => {
    metrics.eventsRejected.inc({ code: toAppError(error).code });
    done();
  };
  const routeOptions = (bodyLimit: number) => ({ bodyLimit, onRequest: requireJson, onError: countRejection });

  /**
   * Appends and waits for durability. `unconfirmed` is the answer when the write was sent but not
   * acknowledged: the entries may be stored, so the client must retry in a way dedupe recognises.
   */
  async function appendToLog(entries: LogEntry[], unconfirmed: (cause: unknown) => AppError): Promise<void> {
    try {
      await deps.log.commitEntries(entries);
    } catch (error) {
      if (error instanceof LogUnavailableError) {
        throw new AppError('log_unavailable', 'The event log is unavailable; nothing was stored. Retry.', {
          headers: { 'Retry-After': '1' },
        }, { cause: error });
      }
      if (error instanceof LogOutcomeUnknownError) throw unconfirmed(error);
      throw error;
    }
  }

  const rejectionUnconfirmed = (cause: unknown) =>
    new AppError(
      'log_outcome_unknown',
      'The event log did not confirm the write in time; the rejected request may have been recorded in quarantine. Retry it.',
      { headers: { 'Retry-After': '1' } },
      { cause },
    );

  /** A body that is not a JSON object cannot carry credentials: say what it must be, not "wrong secret". */
  function requireObject(body: unknown, shape: string): asserts body is Body {
    if (!isObject(body)) {
      const got = body === null ? 'null' : Array.isArray(body) ? 'an array' : `a ${typeof body}`;
      throw new AppError('invalid_request', `The body must be a JSON object ${shape}; got ${got}.`);
    }
  }

  function authenticate(body: Body): PartnerIdentity {
    const who = registry.authenticate(body.partnerId, body.partnerSecret);
    if (!who) throw new AppError('invalid_credentials', 'partnerId and partnerSecret do not identify a partner.');
    return who;
  }

  app.post('/http/v1/collect', routeOptions(EVENT_LIMIT_BYTES), async (request) => {
    const body = request.body;
    requireObject(body, 'with partnerId, partnerSecret and the event\'s members (SPEC 4.2)');
    const who = authenticate(body);
    const receivedAt = ctx.clock.now();
    const result = validateEvent(body);
    if (!result.ok) {
      await appendToLog([rejectedEntry(body, who, 'schema_violation', result.errors, receivedAt)], rejectionUnconfirmed);
      throw rejection(who.org, debugRequested(body), result.errors);
    }
    const messageId = messageIdOf(body);
    await appendToLog([acceptedEntry(storedBody(body, messageId), who, messageId, receivedAt)], (cause) =>
      new AppError(
        'log_outcome_unknown',
        `The event log did not confirm the write in time: the event may be stored. Retry with "messageId": "${messageId}" ` +
          '(a retry with the same messageId within 24 h is stored once).',
        { headers: { 'Retry-After': '1' }, members: { messageId } },
        { cause },
      ),
    );
    metrics.eventsAccepted.inc({ environment: who.environment });
    return { messageId };
  });

  app.post('/http/v1/batch', routeOptions(BATCH_LIMIT_BYTES), async (request) => {
    const body = request.body;
    requireObject(body, 'with partnerId, partnerSecret and batch (an array of events)');
    const who = authenticate(body);
    const receivedAt = ctx.clock.now();
    const envelope = validateBatch(body);
    if (!envelope.ok) {
      await appendToLog([rejectedEntry(body, who, 'schema_violation', envelope.errors, receivedAt)], rejectionUnconfirmed);
      throw rejection(who.org, debugRequested(body), envelope.errors);
    }
    const { partnerId, context, batch } = envelope.batch;
    const members = batch.map((member) => {
      // Members carry no secret (the schema refuses one), so the stored event never holds it.
      const event: Body = { partnerId, ...(context ? { context } : {}), ...(member as Body) };
      const result = validateBatchMember(member);
      const messageId = result.ok ? messageIdOf(event) : '';
      return { event, result, messageId, stored: result.ok ? storedBody(event, messageId) : '' };
    });
    if (members.some((m) => m.stored.length > EVENT_LIMIT_BYTES)) {
      throw new AppError('payload_too_large', `every batch member must be at most ${EVENT_LIMIT_BYTES} bytes`);
    }
    const errors = members.flatMap((m, i) =>
      m.result.ok ? [] : m.result.errors.map((e) => ({ path: `/batch/${i}${e.path}`, message: e.message })),
    );
    if (errors.length > 0) {
      // Atomic: nothing is appended as an event; every member goes to quarantine with its reason.
      await appendToLog(
        members.map((m) =>
          m.result.ok
            ? rejectedEntry(m.event, who, 'batch_rejected', [{ path: '/', message: 'another member of its batch was invalid' }], receivedAt)
            : rejectedEntry(m.event, who, 'schema_violation', m.result.errors, receivedAt),
        ),
        rejectionUnconfirmed,
      );
      throw rejection(who.org, debugRequested(body), errors);
    }
    const messageIds = members.map((m) => m.messageId);
    await appendToLog(members.map((m) => acceptedEntry(m.stored, who, m.messageId, receivedAt)), (cause) =>
      new AppError(
        'log_outcome_unknown',
        'The event log did not confirm the write in time: the batch may be stored. Retry it with each member\'s ' +
          'messageId set to the one at its position in messageIds (a retry with the same messageIds within 24 h is stored once).',
        { headers: { 'Retry-After': '1' }, members: { messageIds } },
        { cause },
      ),
    );
    metrics.eventsAccepted.inc({ environment: who.environment }, members.length);
    return { messageIds };
  });
}
