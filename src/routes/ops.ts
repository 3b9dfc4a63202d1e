/**
 * /healthz (liveness: can this process still do its job without a restart), /readyz (readiness: can
 * it serve now), /metrics (Prometheus text, behind the admin key; on METRICS_PORT instead when set, with no key: metrics-server.ts). See health.ts for the model and service-health.ts for the checks.
 */
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.js';
import { sendProblem } from '../http/problem.js';
import type { LogBackend } from '../events/log/types.js';
import { describeFailures, type Health } from '../ops/health.js';
import type { Metrics } from '../ops/metrics.js';
import { object, operationSchema } from '../openapi/route-schema.js';

/** Probers poll anyway; this only tells a client that reads Retry-After not to hammer. */
const RETRY_AFTER_SECONDS = '1';

/** Each check's outcome, by name (log, disk, control, storage, …). */
const CHECKS = {
  type: 'object',
  additionalProperties: {
    oneOf: [
      { type: 'object', required: ['ok'], properties: { ok: { const: true }, note: { type: 'string' }, details: { type: 'object', additionalProperties: { type: 'string' } } } },
      { type: 'object', required: ['ok', 'reason', 'fatal'], properties: { ok: { const: false }, reason: { type: 'string' }, fatal: { type: 'boolean' } } },
    ],
  },
};

const healthzSchema = operationSchema({
  tag: 'Operations',
  summary: 'Liveness: can this process still do its job without a restart',
  description: 'A 503 `unhealthy` carries the `checks` too.',
  operationId: 'getLiveness',
  auth: 'none',
  ok: { status: 200, description: 'Alive, with each check', schema: object({ status: { const: 'ok' }, checks: CHECKS }) },
  errors: ['unhealthy'],
});
const readyzSchema = operationSchema({
  tag: 'Operations',
  summary: 'Readiness: can it serve now',
  description: 'A 503 `not_ready` carries the `checks` too, and Retry-After.',
  operationId: 'getReadiness',
  auth: 'none',
  ok: { status: 200, description: 'Ready, with each check and the kind of event log (when this process has one)', schema: object({ status: { const: 'ready' }, log: { enum: ['embedded', 'jetstream'] }, checks: CHECKS }, ['status', 'checks']) },
  errors: ['not_ready'],
});
const metricsSchema = operationSchema({
  tag: 'Operations',
  summary: 'Prometheus metrics (on METRICS_PORT instead when set)',
  description:
    'On PORT it asks for the admin key (`Authorization: Bearer`; Prometheus: `authorization: { credentials_file: …/admin.key }`), with the admin API\'s limit on failed attempts. ' +
    'With METRICS_PORT set it is served there only, without a key: keep that port private.',
  operationId: 'getMetrics',
  auth: 'adminKey',
  ok: { status: 200, description: 'Prometheus text format', contentType: 'text/plain' },
  errors: ['invalid_admin_key', 'rate_limited'],
});

/**
 * One log line when a probe's outcome changes, not one per probe (an orchestrator asks every few
 * seconds): a failing readiness at warn, a failing liveness at error, both without a stack (the answer
 * says what failed), and one info line when it clears.
 */
class ProbeLog {
  /** What failed at the last probe; null while it passes. */
  private failing: string | null = null;

  constructor(private readonly messages: { failed: string; cleared: string; level: 'warn' | 'error' }) {}

  report(log: FastifyBaseLogger, failing: string | null): void {
    if (failing === this.failing) return;
    if (failing === null) log.info({ was: this.failing }, this.messages.cleared);
    else log[this.messages.level]({ failing }, this.messages.failed);
    this.failing = failing;
  }
}

/** `metricsAuth`: the admin-key check /metrics asks for on PORT; undefined when METRICS_PORT serves it instead. */
export function registerOpsRoutes(app: FastifyInstance, deps: { health: Health; log: LogBackend | undefined; metrics: Metrics; metricsAuth: ((request: FastifyRequest) => Promise<void>) | undefined }): void {
  const liveness = new ProbeLog({ failed: 'unhealthy: this process cannot recover by itself; restart it', cleared: 'healthy again', level: 'error' });
  const readiness = new ProbeLog({ failed: 'not ready: send no traffic here until it clears', cleared: 'ready again', level: 'warn' });

  app.get('/healthz', { schema: healthzSchema }, async (request, reply) => {
    const report = await deps.health.probe();
    liveness.report(request.log, report.live ? null : describeFailures(report, true));
    if (!report.live) {
      return sendProblem(reply, request, new AppError(
        'unhealthy',
        `This process cannot recover by itself: ${describeFailures(report, true)}. Restart it.`,
        { members: { checks: report.checks } },
      ));
    }
    return { status: 'ok', checks: report.checks };
  });

  app.get('/readyz', { schema: readyzSchema }, async (request, reply) => {
    const report = await deps.health.probe();
    readiness.report(request.log, report.ready ? null : describeFailures(report));
    if (!report.ready) {
      const action = report.live
        ? 'Send no traffic here until it clears; it is checked again on every probe.'
        : 'This does not clear by itself: restart the process.';
      return sendProblem(reply, request, new AppError('not_ready', `Not ready: ${describeFailures(report)}. ${action}`, {
        members: { checks: report.checks },
        headers: { 'Retry-After': RETRY_AFTER_SECONDS },
      }));
    }
    return { status: 'ready', ...(deps.log ? { log: deps.log.kind } : {}), checks: report.checks };
  });

  if (!deps.metricsAuth) return;
  app.get('/metrics', { schema: metricsSchema, onRequest: deps.metricsAuth }, async (_request, reply) => {
    reply.type(deps.metrics.registry.contentType);
    return deps.metrics.registry.metrics();
  });
}
