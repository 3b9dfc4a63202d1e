/**
 * Builds the whole service as one Fastify instance: the infrastructure plugins every process has, then
 * the roles ROLES names. server.ts only reads config and listens; tests build the same app with their own
 * config and context and call inject() or listen on port 0.
 *
 * Plugins (src/plugins/) open what they hold and close it in their `onClose`; Fastify closes them in the
 * reverse order of registration, so the order below is the start order, read backwards the shutdown
 * order: stop taking relayed admin calls (first, in preClose) → the api role (presence, rate limiters) → flush pending appends
 * → stop flows (trigger polling, the running flow run, deliveries: sends waiting for a retry stay pending
 * for the next start) → finish the compaction batch and its profile refreshes → close the org databases →
 * the profile feed → the log → the control plane (token use times flushed) → release DATA_DIR. A failed
 * start closes what it had opened the same way. Only the storage roles open DuckDB.
 */
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { Config } from './core/config.js';
import { MAX_PATH_PARAM_CHARS } from './core/route-params.js';
import { type Context, createContext } from './core/context.js';
import { duckdbLockProblem } from './core/data-dir-lock.js';
import { clientErrorHandler, frameworkErrors } from './http/client-errors.js';
import { lazyChildLogger } from './http/lazy-child-logger.js';
import { loggerOptions, logsRequests } from './http/logger.js';
import { generateRequestId } from './http/request-id.js';
import { closeIdleWhileClosing, httpTimeouts } from './http/timeouts.js';
import { controlPlugin } from './plugins/control.js';
import { dataDirPlugin } from './plugins/data-dir.js';
import { eventLogPlugin } from './plugins/event-log.js';
import { healthPlugin } from './plugins/health.js';
import { natsPlugin } from './plugins/nats.js';
import { orgStoragePlugin } from './plugins/org-storage.js';
import { profileFeedPlugin, profilesPlugin } from './plugins/profiles.js';
import { hasStorageRole, servicePlugin } from './plugins/service.js';
import { adminApi, apiRole, relayedAdminCalls, relayedAudienceCalls } from './roles/api.js';
import { collectorRole } from './roles/collector.js';
import { coreRoutes } from './roles/core.js';
import { flowsRole } from './roles/flows.js';
import { storageRole } from './roles/storage.js';


export async function buildApp(config: Config, ctx: Context = createContext()): Promise<FastifyInstance> {
  const app = Fastify({
    logger: loggerOptions(config.logLevel),
    logController: new LogController({ disableRequestLogging: !logsRequests(config.logLevel) }),
    childLoggerFactory: lazyChildLogger,
    genReqId: generateRequestId,
    requestIdHeader: false,
    trustProxy: config.trustProxy,
    // Collect routes set their own limits (32 KB / 500 KB); admin imports may be larger.
    bodyLimit: 10 * 1024 * 1024,
    // A start waits for what it opens (NATS, the storage process, a damaged org's database) as long as that takes.
    pluginTimeout: 0,
    ...httpTimeouts(config),
    frameworkErrors,
    clientErrorHandler,
    // Unsubscribe tokens reach 616 characters; Fastify's default of 100 refused most real addresses' links.
    routerOptions: { maxParamLength: MAX_PATH_PARAM_CHARS },
  });
  closeIdleWhileClosing(app, config.httpRequestTimeoutMs);
  const roles = new Set(config.roles);
  try {
    await app.register(servicePlugin, { config, ctx });
    await app.register(dataDirPlugin);
    await app.register(profilesPlugin);
    await app.register(controlPlugin);
    await app.register(eventLogPlugin);
    await app.register(profileFeedPlugin);
    await app.register(orgStoragePlugin);
    await app.register(natsPlugin);
    await app.register(healthPlugin);
    await app.register(coreRoutes);
    if (hasStorageRole(config) && app.adminNats) await app.register(relayedAdminCalls);
    if (hasStorageRole(config)) await app.register(storageRole);
    if (roles.has('flows')) await app.register(flowsRole);
    if (roles.has('collector')) await app.register(collectorRole);
    if (roles.has('api')) await app.register(apiRole);
    else if (hasStorageRole(config) && app.adminNats) await app.register(relayedAudienceCalls);
    if (roles.has('api') || app.adminNats) await app.register(adminApi);
  } catch (error) {
    await app.close();
    throw duckdbLockProblem(error, config.dataDir) ?? error;
  }
  return app;
}
