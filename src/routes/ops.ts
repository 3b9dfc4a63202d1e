/**
 * /healthz (liveness: can this process still do its job without a restart), /readyz (readiness: can
 * it serve now), /metrics (Prometheus text; on METRICS_PORT instead when set: metrics-server.ts). See health.ts for the model and service-health.ts for the checks.
 */
import type { FastifyInstance } from 'fastify';
import { AppError } from '../core/errors.js';
import type { LogBackend } from '../events/log/types.js';
import { describeFailures, type Health } from '../ops/health.js';
import type { Metrics } from '../ops/metrics.js';

/** Probers poll anyway; this only tells a client that reads Retry-After not to hammer. */
const RETRY_AFTER_SECONDS = '1';

export function registerOpsRoutes(app: FastifyInstance, deps: { health: Health; log: LogBackend | undefined; metrics: Metrics; serveMetrics: boolean }): void {
  app.get('/healthz', async () => {
    const report = await deps.health.probe();
    if (!report.live) {
      throw new AppError(
        'unhealthy',
        `This process cannot recover by itself: ${describeFailures(report, true)}. Restart it.`,
        { members: { checks: report.checks } },
      );
    }
    return { status: 'ok', checks: report.checks };
  });

  app.get('/readyz', async () => {
    const report = await deps.health.probe();
    if (!report.ready) {
      const action = report.live
        ? 'Send no traffic here until it clears; it is checked again on every probe.'
        : 'This does not clear by itself: restart the process.';
      throw new AppError('not_ready', `Not ready: ${describeFailures(report)}. ${action}`, {
        members: { checks: report.checks },
        headers: { 'Retry-After': RETRY_AFTER_SECONDS },
      });
    }
    return { status: 'ready', ...(deps.log ? { log: deps.log.kind } : {}), checks: report.checks };
  });

  if (!deps.serveMetrics) return;
  app.get('/metrics', async (_request, reply) => {
    reply.type(deps.metrics.registry.contentType);
    return deps.metrics.registry.metrics();
  });
}
