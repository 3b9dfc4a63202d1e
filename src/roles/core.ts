/**
 * What every process answers, whatever its roles: health, metrics, the API document, the problem pages,
 * and a partner's delivery status (answered where the org's database is, relayed there from elsewhere).
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { adminAuth } from '../routes/admin/auth.js';
import { GcraLimiter } from '../ratelimit/gcra-limiter.js';
import type { RateLimiter } from '../ratelimit/types.js';
import { registerDocsRoutes } from '../routes/docs.js';
import { registerOpsRoutes } from '../routes/ops.js';
import { registerProblemPages } from '../routes/problems.js';
import { registerStatusRoute } from '../routes/http/status.js';
import { relayToShard } from '../cluster/relay-to-shard.js';

export const coreRoutes = fp(
  async (app: FastifyInstance) => {
    // /metrics on PORT asks for the admin key, with the admin API's limit on failed attempts (the api
    // role's limiter, shared through Redis, once it is there); on METRICS_PORT it asks for nothing.
    const fallback = new GcraLimiter();
    const limiter: RateLimiter = {
      consume: (key, policy, now) => (app.rateLimiters?.auth ?? fallback).consume(key, policy, now),
      peek: (key, policy, now) => (app.rateLimiters?.auth ?? fallback).peek(key, policy, now),
    };
    const metricsAuth = app.config.metricsPort === undefined ? adminAuth({ keyHash: app.adminKey.hash, limiter, clock: app.ctx.clock, metrics: app.metrics }) : undefined;
    registerOpsRoutes(app, { health: app.health, log: app.eventLog, metrics: app.metrics, metricsAuth });
    registerDocsRoutes(app);
    registerProblemPages(app);
    // Read when asked: the storage role registers after this plugin.
    registerStatusRoute(app, {
      ctx: app.ctx,
      registry: app.partners,
      storage: () => app.orgStorage?.orgs,
      owns: (org) => app.storageRole?.owns(org) ?? false,
      ...(app.adminNats ? { relay: relayToShard({ nc: app.adminNats }) } : {}),
      limiter,
    });
  },
  { name: 'audience-core-routes', dependencies: ['audience-health'] },
);
