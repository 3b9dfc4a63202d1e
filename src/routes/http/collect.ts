/**
 * POST /http/v1/collect and /http/v1/batch (SPEC 4).
 * Order: content type → body size/JSON and its depth (Fastify, http/json-body.ts) → the collect steps of
 * events/collect: authenticate (a JSON object from a known partner) → validate → commit or quarantine → answer.
 * A 200 is sent only after the log write resolved (durable); every rejection is written to the log as
 * a quarantine entry first, so it is kept even though the client only sees the error. A write that was
 * sent but not confirmed answers 503 log_outcome_unknown with the messageIds: the retry is deduplicated.
 * Each step answers with a value (events/collect/outcome.ts); a `stop` becomes the problem+json answer here.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Context } from '../../core/context.js';
import { AppError } from '../../core/errors.js';
import { toAppError } from '../../http/problem.js';
import { KEEP_JSON_TEXT } from '../../http/json-body.js';
import type { GroupCommitter } from '../../events/log/group-commit.js';
import type { Metrics } from '../../ops/metrics.js';
import type { PartnerRegistry } from '../../control/partner-registry.js';
import { createAuthenticateStep } from '../../events/collect/authenticate-step.js';
import { createCommitStep } from '../../events/collect/commit-step.js';
import { createQuarantineStep } from '../../events/collect/quarantine-step.js';
import { createValidateBatchStep } from '../../events/collect/validate-batch-step.js';
import { createValidateEventStep } from '../../events/collect/validate-event-step.js';
import type { Plans } from '../../events/collect/plan-verdict.js';
import { batchSchema, collectSchema, collectValidation } from './collect-schema.js';

export interface CollectDeps {
  ctx: Context;
  registry: PartnerRegistry;
  log: GroupCommitter;
  metrics: Metrics;
  /** The orgs' tracking plans: custom events are checked against them (plan-verdict.ts). */
  plans: Plans;
}

/** SPEC 4.1 limits. */
const EVENT_LIMIT_BYTES = 32 * 1024;
const BATCH_LIMIT_BYTES = 500 * 1024;

function requireJson(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
  const type = request.headers['content-type'] ?? '';
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    done(new AppError('unsupported_media_type', 'Content-Type must be application/json'));
    return;
  }
  done();
}

export function registerCollectRoutes(app: FastifyInstance, deps: CollectDeps): void {
  const { ctx, registry, metrics } = deps;
  const countRejection = (_request: FastifyRequest, _reply: FastifyReply, error: Error, done: () => void) => {
    metrics.eventsRejected.inc({ code: toAppError(error).code });
    done();
  };
  const routeOptions = (bodyLimit: number, schema: object) => ({ bodyLimit, schema, validatorCompiler: collectValidation, onRequest: requireJson, onError: countRejection });

  const authenticateEvent = createAuthenticateStep(registry, ctx.clock, 'with partnerId, partnerSecret and the event\'s members (SPEC 4.2)');
  const authenticateBatch = createAuthenticateStep(registry, ctx.clock, 'with partnerId, partnerSecret and batch (an array of events)');
  const validateEvent = createValidateEventStep(deps.plans);
  const validateBatch = createValidateBatchStep(EVENT_LIMIT_BYTES, deps.plans);
  const commit = createCommitStep(deps.log, metrics);
  const keepInQuarantine = createQuarantineStep(deps.log);

  app.post('/http/v1/collect', routeOptions(EVENT_LIMIT_BYTES, collectSchema), async (request) => {
    const received = authenticateEvent(request.body);
    if (received.kind === 'stop') throw received.problem;
    const checked = validateEvent(received.value);
    const done = checked.kind === 'ok' ? await commit(checked.value) : await keepInQuarantine(checked);
    if (done.kind === 'stop') throw done.problem;
    return done.value;
  });

  // The batch's text is kept for its step: an accepted batch is stored as it arrived (events/collect/batch-text.ts).
  app.post('/http/v1/batch', { ...routeOptions(BATCH_LIMIT_BYTES, batchSchema), config: KEEP_JSON_TEXT }, async (request) => {
    const received = authenticateBatch(request.body);
    if (received.kind === 'stop') throw received.problem;
    const checked = validateBatch(received.value);
    if (checked.kind === 'stop') throw checked.problem;
    const done = checked.kind === 'ok' ? await commit(checked.value) : await keepInQuarantine(checked);
    if (done.kind === 'stop') throw done.problem;
    return done.value;
  });
}
