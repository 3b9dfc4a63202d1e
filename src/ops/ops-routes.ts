/** /healthz (process alive), /readyz (log and DuckDB usable), /metrics (Prometheus text). */
import type { FastifyInstance } from 'fastify';
import type { Database } from '../db/database.js';
import { AppError } from '../errors.js';
import type { LogBackend } from '../log/types.js';
import type { Metrics } from './metrics.js';

export function registerOpsRoutes(app: FastifyInstance, deps: { db: Database; log: LogBackend; metrics: Metrics }): void {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async () => {
    if (!deps.log.isAvailable()) throw new AppError('log_unavailable', `${deps.log.kind} log is not reachable`);
    await deps.db.all('SELECT 1');
    return { status: 'ready', log: deps.log.kind };
  });

  app.get('/metrics', async (_request, reply) => {
    reply.type(deps.metrics.registry.contentType);
    return deps.metrics.registry.metrics();
  });
}
