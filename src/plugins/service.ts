/**
 * The first plugin: the configuration and context every other plugin reads, the HTTP behaviour every
 * route shares (JSON bodies, problem+json answers, request ids, the route list) and the metrics registry.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../core/config.js';
import type { Context } from '../core/context.js';
import { compileRouteSchema } from '../core/schemas.js';
import { registerJsonBodyParser } from '../http/json-body.js';
import { registerProblemHandlers } from '../http/problem.js';
import { registerRequestIdHeader } from '../http/request-id.js';
import { registerUnroutedAnswers } from '../http/unrouted.js';
import { type Metrics, createMetrics } from '../ops/metrics.js';
import { observeRequestDurations } from './operator-metrics.js';

export interface RegisteredRoute {
  method: string;
  url: string;
}

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    ctx: Context;
    metrics: Metrics;
    /** Every route this process registers, HEAD included (the OpenAPI check, test/ops/openapi.test.ts). */
    registeredRoutes: readonly RegisteredRoute[];
  }
}

/** The roles that keep org databases. */
export function hasStorageRole(config: Pick<Config, 'roles'>): boolean {
  return config.roles.includes('compactor') || config.roles.includes('flows');
}

export const servicePlugin = fp(
  async (app: FastifyInstance, options: { config: Config; ctx: Context }) => {
    const routes: RegisteredRoute[] = [];
    app.addHook('onRoute', (route) => {
      for (const method of [route.method].flat()) routes.push({ method, url: route.url });
    });
    app.setValidatorCompiler(({ schema }) => compileRouteSchema(schema));
    // Response schemas document the answers (/openapi.json); answers stay JSON.stringify's, as without them.
    app.setSerializerCompiler(() => (data) => JSON.stringify(data));
    registerJsonBodyParser(app);
    registerProblemHandlers(app, options.ctx.clock);
    registerUnroutedAnswers(app);
    registerRequestIdHeader(app);
    const metrics = createMetrics();
    observeRequestDurations(app, metrics);
    app.decorate('config', options.config);
    app.decorate('ctx', options.ctx);
    app.decorate('metrics', metrics);
    app.decorate('registeredRoutes', routes);
  },
  { name: 'audience-service', fastify: '5.x' },
);
