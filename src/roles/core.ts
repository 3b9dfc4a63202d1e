/** What every process answers, whatever its roles: health, metrics, the API document and the problem pages. */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { registerDocsRoutes } from '../routes/docs.js';
import { registerOpsRoutes } from '../routes/ops.js';
import { registerProblemPages } from '../routes/problems.js';

export const coreRoutes = fp(
  async (app: FastifyInstance) => {
    registerOpsRoutes(app, { health: app.health, log: app.eventLog, metrics: app.metrics, serveMetrics: app.config.metricsPort === undefined });
    registerDocsRoutes(app);
    registerProblemPages(app);
  },
  { name: 'audience-core-routes', dependencies: ['audience-health'] },
);
