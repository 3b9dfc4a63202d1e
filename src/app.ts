/**
 * Builds the whole service as one Fastify instance from the roles ROLES names. server.ts only reads
 * config and listens; tests build the same app with their own config and context and call inject() or
 * listen on port 0.
 *
 * Every process has the core: the HTTP server, the control plane (orgs, credentials, tokens: watched,
 * so a change made anywhere is in force here) and health. On top of it, each role is a unit with its own
 * start and close (src/roles/): `collector` (collect and batch), `api` (the Audience API and the admin
 * API), and storage (`compactor`, `flows`: the org databases, in one unit since both read them). Only
 * the storage unit opens DuckDB; a process without it opens no database.
 */
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { Config } from './core/config.js';
import { jetStreamOptions } from './events/log/jetstream-log.js';
import { type Context, createContext } from './core/context.js';
import { openControl } from './control/open-control.js';
import { type ControlDocuments, orgKey, tokensKey } from './control/types.js';
import { type DataDirLock, duckdbLockProblem, lockDataDir } from './core/data-dir-lock.js';
import { registerJsonBodyParser } from './http/json-body.js';
import { loggerOptions } from './http/logger.js';
import { clientErrorHandler, frameworkErrors } from './http/client-errors.js';
import { registerProblemHandlers } from './http/problem.js';
import { registerUnroutedAnswers } from './http/unrouted.js';
import { generateRequestId, registerRequestIdHeader } from './http/request-id.js';
import { httpTimeouts } from './http/timeouts.js';
import type { GroupCommitter } from './events/log/group-commit.js';
import { openLog } from './events/log/open-log.js';
import { EmbeddedLog } from './events/log/embedded-log.js';
import type { LogBackend } from './events/log/types.js';
import type { Health } from './ops/health.js';
import { type Metrics, createMetrics } from './ops/metrics.js';
import { registerOpsRoutes } from './routes/ops.js';
import { registerDocsRoutes } from './routes/docs.js';
import { registerProblemPages } from './routes/problems.js';
import { observeRequestDurations, registerOperatorGauges } from './plugins/operator-metrics.js';
import { serviceHealth } from './plugins/service-health.js';
import { type AdminKey, resolveAdminKey } from './control/admin-key.js';
import { OrgStore } from './control/org-store.js';
import { PartnerRegistry } from './control/partner-registry.js';
import { ProfileFeed } from './events/profiles/profile-feed.js';
import { ProfileIndex } from './events/profiles/profile-index.js';
import { type RateLimiters, openRateLimiters } from './ratelimit/open-rate-limiters.js';
import { registerAdminApi, registerAudienceApi } from './roles/api-role.js';
import { registerConsoleRoutes } from './routes/console.js';
import { type OrgAdminServer, serveOrgAdmin } from './cluster/serve-org-admin.js';
import { type ApiPresence, announceApi } from './cluster/api-presence.js';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectNats, natsSecurity } from './nats/nats-client.js';
import { registerCollectorRole } from './roles/collector-role.js';
import { type StorageRole, openStorageRole, runSteps } from './roles/storage-role.js';
import { compileRouteSchema } from './core/schemas.js';
import { SINGLE_FILE, SPLIT_SUFFIX, splitSingleFile } from './storage/split-single-file.js';
import { logPositions } from './storage/checkpoint.js';
import { TokenStore } from './control/token-store.js';

/** What the service holds, for server.ts (shutdown, start-up message) and tests. */
export interface Audience {
  config: Config;
  ctx: Context;
  /** The control plane: orgs, partner credentials, tokens (control.duckdb, or a KV bucket in NATS mode). */
  control: ControlDocuments;
  orgs: OrgStore;
  tokens: TokenStore;
  /** The profiles this process serves and flows read: its own orgs', and in NATS mode every org's from the profile feed. */
  profiles: ProfileIndex;
  metrics: Metrics;
  /** What /readyz and /healthz report. */
  health: Health;
  adminKey: AdminKey;
  /** The event log; absent on a NATS-mode process with neither collector nor storage role. */
  log: LogBackend | undefined;
  /** Present with the collector role. */
  committer: GroupCommitter | undefined;
  /** Present with the compactor or flows role: the org databases and everything above them. */
  storage: StorageRole | undefined;
  /** The routes registered, HEAD included. */
  routes: readonly RegisteredRoute[];
}

export interface RegisteredRoute {
  method: string;
  url: string;
}

declare module 'fastify' {
  interface FastifyInstance {
    audience: Audience;
  }
}

/** The roles that keep org databases. */
export function hasStorageRole(config: Pick<Config, 'roles'>): boolean {
  return config.roles.includes('compactor') || config.roles.includes('flows');
}

export async function buildApp(config: Config, ctx: Context = createContext()): Promise<FastifyInstance> {
  // The embedded log and the org databases live in DATA_DIR: a second process must not touch them. A
  // NATS-mode collector or api process keeps nothing there, so any number can share a machine.
  const usesDataDir = hasStorageRole(config) || config.natsUrl === undefined;
  // Before anything in DATA_DIR is opened (the embedded log first).
  const dataDirLock = usesDataDir ? lockDataDir(config.dataDir) : undefined;
  try {
    return await buildLockedApp(config, ctx, dataDirLock);
  } catch (error) {
    // A failed build has closed what it opened (or opened nothing); the lock is released last.
    dataDirLock?.release();
    throw duckdbLockProblem(error, config.dataDir) ?? error;
  }
}

async function buildLockedApp(config: Config, ctx: Context, dataDirLock: DataDirLock | undefined): Promise<FastifyInstance> {
  const app = Fastify({
    logger: loggerOptions(config.logLevel),
    // Two log lines per event would cost ~15% of collect throughput; requests are logged at debug.
    logController: new LogController({ disableRequestLogging: config.logLevel !== 'debug' && config.logLevel !== 'trace' }),
    genReqId: generateRequestId,
    requestIdHeader: false,
    trustProxy: config.trustProxy,
    // Collect routes set their own limits (32 KB / 500 KB); admin imports may be larger.
    bodyLimit: 10 * 1024 * 1024,
    ...httpTimeouts(config),
    frameworkErrors,
    clientErrorHandler,
  });
  // Every route this process registers, for the OpenAPI check (test/ops/openapi.test.ts).
  const routes: RegisteredRoute[] = [];
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routes.push({ method, url: route.url });
  });
  app.setValidatorCompiler(({ schema }) => compileRouteSchema(schema));
  // Response schemas document the answers (/openapi.json); answers stay JSON.stringify's, as without them.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  registerJsonBodyParser(app);
  registerProblemHandlers(app);
  registerUnroutedAnswers(app);
  registerRequestIdHeader(app);

  const roles = new Set(config.roles);
  const metrics = createMetrics();
  observeRequestDurations(app, metrics);
  const adminKey = resolveAdminKey(config.adminKey, config.dataDir, ctx);
  let control: ControlDocuments | undefined;
  let tokens: TokenStore | undefined;
  let log: LogBackend | undefined;
  let feed: ProfileFeed | undefined;
  let storage: StorageRole | undefined;
  let committer: GroupCommitter | undefined;
  let rateLimiters: RateLimiters | undefined;
  /** NATS mode, api or storage role: admin calls relayed between processes. */
  let adminNats: NatsConnection | undefined;
  let orgAdmin: OrgAdminServer | undefined;
  let presence: ApiPresence | undefined;
  // Shutdown order: stop taking requests (Fastify, then relayed admin calls) → stop flows (trigger polling, the running flow run,
  // deliveries: sends waiting for a retry stay pending for the next start) → flush pending appends →
  // finish the compaction batch and its profile refreshes → flush token use times → close the log →
  // close DuckDB → close the control plane. Registered before anything else can fail, so a failed start
  // closes what it opened; every step runs even when one fails, so DuckDB is always closed.
  app.addHook('onClose', () =>
    runSteps([
      () => orgAdmin?.close(),
      () => presence?.close(),
      () => adminNats?.close(),
      () => storage?.stopFlows(),
      () => rateLimiters?.close(),
      () => committer?.flush(),
      () => storage?.stopCompaction(),
      () => tokens?.close(),
      () => feed?.close(),
      () => log?.close(),
      () => storage?.close(),
      () => control?.close(),
      () => dataDirLock?.release(),
    ]),
  );

  try {
    // A DATA_DIR from before per-org storage is split first, before anything opens its files.
    const split = dataDirLock ? await splitSingleFile(config.dataDir) : undefined;
    if (split) app.log.info({ orgs: split.length }, `split ${SINGLE_FILE} into one database per org (the old file is kept as ${SINGLE_FILE}${SPLIT_SUFFIX})`);

    control = await openControl(config, dataDirLock !== undefined);
    const registry = new PartnerRegistry();
    const profiles = new ProfileIndex();
    const orgs = new OrgStore(control, registry, ctx, {
      customFieldsOf: (org) => profiles.customFields(org),
      onListenerError: (err) => app.log.error({ err }, 'applying an org change failed'),
    });
    // Every process holds profiles (its own or followed): a deleted org's go at once.
    orgs.onDelete(async (slug) => profiles.removeOrg(slug));
    const tokenStore = new TokenStore(control, ctx, { onFlushError: (err) => app.log.warn({ err }, 'token lastUsedAt flush failed') });
    tokens = tokenStore;
    await control.watch((entry) => {
      if (entry.key.startsWith(orgKey(''))) void orgs.apply(entry);
      else if (entry.key.startsWith(tokensKey(''))) tokenStore.apply(entry);
    });

    if (roles.has('collector') || hasStorageRole(config)) {
      log = await openLog({
        natsUrl: config.natsUrl,
        dataDir: config.dataDir,
        jetstream: jetStreamOptions(config),
        embedded: { segmentBytes: config.logSegmentMb * 1024 * 1024, retentionMs: config.logRetentionHours * 60 * 60 * 1000 },
        onTornTail: (tail) => app.log.warn({ tail }, 'embedded log: cut a torn tail left by a crash'),
        // Numbering goes on above every position this process's org databases may hold.
        ...(dataDirLock ? { positions: logPositions(config.dataDir) } : {}),
        onBehind: (behind, message) => app.log.error({ behind }, message),
      });
    }
    if (config.natsUrl && (roles.has('api') || hasStorageRole(config))) {
      feed = await ProfileFeed.open({ servers: config.natsUrl, replicas: config.natsStreamReplicas, security: natsSecurity(config) }, (err) => app.log.error({ err }, 'publishing a profile failed'));
    }
    if (hasStorageRole(config)) storage = await openStorageRole({ config, ctx, log: log!, metrics, orgs, profiles, feed, logger: app.log });

    const health = serviceHealth({ control, log, storage: storage?.storage, dataDir: config.dataDir, usesDataDir: dataDirLock !== undefined });
    app.decorate('audience', { config, ctx, control, orgs, tokens, profiles, metrics, health, adminKey, log, committer, storage, routes });
    registerOperatorGauges(metrics, {
      ready: async () => (await health.probe()).ready,
      profileEntries: () => profiles.totalSize(),
      embeddedLog: log instanceof EmbeddedLog ? log : undefined,
      dataDir: dataDirLock ? config.dataDir : undefined,
    });
    registerOpsRoutes(app, { health, log, metrics, serveMetrics: config.metricsPort === undefined });
    registerDocsRoutes(app);
    registerProblemPages(app);
    if (roles.has('collector')) app.audience.committer = committer = registerCollectorRole(app, { ctx, log: log!, registry, metrics });
    if (config.natsUrl && (roles.has('api') || storage)) adminNats = await connectNats(config.natsUrl, natsSecurity(config));
    if (roles.has('api')) {
      // The live api processes (NATS mode): while Redis is out of reach, each limits an org to its share.
      if (adminNats) presence = await announceApi(adminNats, (err) => app.log.warn({ err }, 'counting the live api processes failed'));
      const live = presence;
      rateLimiters = await openRateLimiters({
        redisUrl: config.redisUrl,
        keyPrefix: config.redisKeyPrefix,
        metrics,
        logger: app.log,
        clock: ctx.clock,
        ...(live ? { liveApiProcesses: () => live.live() } : {}),
      });
      registerAudienceApi(app, { ctx, metrics, orgs, tokens, profiles, rateLimiters });
      registerConsoleRoutes(app);
    }
    if (roles.has('api') || adminNats) {
      await registerAdminApi(app, { config, ctx, adminKey, control, log, orgs, tokens, profiles, storage, relay: adminNats, withOrgRoutes: roles.has('api'), metrics, authLimiter: rateLimiters?.auth });
    }
    if (roles.has('api') && feed && !(storage && config.shard.count === 1)) {
      // Profiles of the orgs another shard keeps come from the feed; this process's own are materialized here.
      await feed.follow(profiles, (org) => (storage?.owns(org) ?? false) || orgs.isDeleted(org));
    }
    if (storage && adminNats) {
      // The shard answers admin calls relayed for its orgs once the app is ready (inject() needs it).
      const nc = adminNats;
      const shard = storage;
      app.addHook('onReady', async () => {
        orgAdmin = await serveOrgAdmin({ nc, app, owned: shard.owns, adminKeyHash: adminKey.hash });
        for (const org of await orgs.list()) await orgAdmin.addOrg(org.slug);
      });
      orgs.onChange(async (org, previous) => {
        if (!previous) await orgAdmin?.addOrg(org.slug);
      });
    }
    tokens.start();
    await storage?.start();
  } catch (error) {
    await app.close();
    throw error;
  }
  return app;
}
