/**
 * Builds the whole service as one Fastify instance. server.ts only reads config and listens; tests
 * build the same app with their own config and context and call inject() or listen on port 0.
 */
import { join } from 'node:path';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { adminAuth } from './admin/admin-auth.js';
import { registerContactsRoute } from './audience/contacts-route.js';
import { registerInspectRoutes } from './admin/inspect-routes.js';
import { registerOrgRoutes } from './admin/org-routes.js';
import { registerCollectRoutes } from './collect/collect-routes.js';
import type { Compaction } from './compaction/compactor.js';
import type { Config } from './config.js';
import { type Context, createContext } from './context.js';
import { type DataDirLock, duckdbLockProblem, lockDataDir } from './data-dir-lock.js';
import type { Database } from './db/database.js';
import { openStorage, type Storage } from './storage/open-storage.js';
import { writeOrgSettings } from './storage/migrate.js';
import { openControlPlane } from './storage/control-plane.js';
import type { OrgStorage } from './storage/org-storage.js';
import { SINGLE_FILE, SPLIT_SUFFIX, splitSingleFile } from './storage/split-single-file.js';
import type { StorageWorker } from './storage/storage-client.js';
import { registerJsonBodyParser } from './http/json-body.js';
import { loggerOptions } from './http/logger.js';
import { httpTimeouts } from './http/timeouts.js';
import { registerProblemHandlers } from './http/problem.js';
import { generateRequestId, registerRequestIdHeader } from './http/request-id.js';
import { GroupCommitter } from './log/group-commit.js';
import { openLog } from './log/open-log.js';
import type { LogBackend } from './log/types.js';
import { type Metrics, applyMetric, createMetrics, registerOrgDatabasesGauge } from './ops/metrics.js';
import type { Health } from './ops/health.js';
import { registerOpsRoutes } from './ops/ops-routes.js';
import { serviceHealth } from './ops/service-health.js';
import { type AdminKey, resolveAdminKey } from './orgs/admin-key.js';
import { OrgStore } from './orgs/org-store.js';
import { PartnerRegistry } from './orgs/partner-registry.js';
import { ContactStore } from './profiles/contact-store.js';
import { registerImportRoutes } from './profiles/import-routes.js';
import { ProfileIndex } from './profiles/profile-index.js';
import { ProfileMaterializer } from './profiles/profile-materializer.js';
import { ProfileRefresher } from './profiles/profile-refresher.js';
import { openRateLimiters, type RateLimiters } from './ratelimit/open-rate-limiters.js';
import { compileRouteSchema } from './schemas.js';
import { registerTokenRoutes } from './tokens/token-routes.js';
import { TokenStore } from './tokens/token-store.js';
import { openChannels } from './channels/open-channels.js';
import { resolveWebhookSigningKey } from './channels/webhook-signing.js';
import { FlowRunner } from './flows/flow-runner.js';
import { registerFlowRoutes } from './flows/flow-routes.js';
import { FlowStore } from './flows/flow-store.js';
import { SendDispatcher } from './flows/send-dispatcher.js';
import { TemplateRenderer } from './flows/template-renderer.js';
import { registerTriggerRoutes } from './triggers/trigger-routes.js';
import { TriggerStore } from './triggers/trigger-store.js';

/** How often QUERIES_DIR is read for changed trigger and segment files. */
const QUERIES_POLL_MS = 1000;

/** What the service holds, for server.ts (shutdown, start-up message) and tests. */
export interface Audience {
  config: Config;
  ctx: Context;
  /** Each org's database (DATA_DIR/orgs/<org>.duckdb): events, profiles, triggers, flows, sends. */
  storage: OrgStorage;
  /** Org databases open now, and the most open at once since start. */
  poolStats: Storage['poolStats'];
  /** The control plane (control.duckdb): orgs, partner credentials, tokens. */
  control: Database;
  log: LogBackend;
  committer: GroupCommitter;
  compactor: Compaction | undefined;
  orgs: OrgStore;
  metrics: Metrics;
  /** What /readyz and /healthz report. */
  health: Health;
  /** The storage worker thread, when DuckDB runs in one (STORAGE_THREAD=worker). */
  storageWorker: StorageWorker | undefined;
  adminKey: AdminKey;
  materializer: ProfileMaterializer;
  refresher: ProfileRefresher;
  tokens: TokenStore;
  triggers: TriggerStore;
  flows: FlowStore;
  /** Present when ROLES includes flows. */
  runner: FlowRunner | undefined;
  dispatcher: SendDispatcher | undefined;
  renderer: TemplateRenderer | undefined;
}

declare module 'fastify' {
  interface FastifyInstance {
    audience: Audience;
  }
}

export async function buildApp(config: Config, ctx: Context = createContext()): Promise<FastifyInstance> {
  // Before anything in DATA_DIR is opened (the embedded log first): a second process must not touch it.
  const dataDirLock = lockDataDir(config.dataDir);
  try {
    return await buildLockedApp(config, ctx, dataDirLock);
  } catch (error) {
    // A failed build has closed what it opened (or opened nothing); the lock is released last.
    dataDirLock.release();
    throw duckdbLockProblem(error, config.dataDir) ?? error;
  }
}

async function buildLockedApp(config: Config, ctx: Context, dataDirLock: DataDirLock): Promise<FastifyInstance> {
  const app = Fastify({
    logger: loggerOptions(config.logLevel),
    // Two log lines per event would cost ~15% of collect throughput; requests are logged at debug.
    logController: new LogController({ disableRequestLogging: config.logLevel !== 'debug' && config.logLevel !== 'trace' }),
    genReqId: generateRequestId,
    requestIdHeader: false,
    // Collect routes set their own limits (32 KB / 500 KB); admin imports may be larger.
    bodyLimit: 10 * 1024 * 1024,
    ...httpTimeouts(config),
  });
  app.setValidatorCompiler(({ schema }) => compileRouteSchema(schema));
  registerJsonBodyParser(app);
  registerProblemHandlers(app);
  registerRequestIdHeader(app);

  const roles = new Set(config.roles);
  const metrics = createMetrics();
  const adminKey = resolveAdminKey(config.adminKey, config.dataDir, ctx);
  // A DATA_DIR from before per-org storage is split first, before anything opens its files.
  const split = await splitSingleFile(config.dataDir);
  if (split) app.log.info({ orgs: split.length }, `split ${SINGLE_FILE} into one database per org (the old file is kept as ${SINGLE_FILE}${SPLIT_SUFFIX})`);
  const log = await openLog({
    natsUrl: config.natsUrl,
    dataDir: config.dataDir,
    publishTimeoutMs: config.natsPublishTimeoutMs,
    onTornTail: (tail) => app.log.warn({ tail }, 'embedded log: cut a torn tail left by a crash'),
  });
  // The refresher is made below; compaction only commits once started, at the end of the build.
  const storage = await openStorage({
    config,
    ctx,
    log,
    metrics,
    onMetric: (update) => applyMetric(metrics, update),
    logger: app.log,
    onCompacted: (report) => refresher.enqueue(report.touched, { backlog: report.backlog }),
  }).catch(async (error) => {
    await log.close();
    throw error;
  });
  const { orgs: orgData, compaction: compactor, worker: storageWorker } = storage;
  registerOrgDatabasesGauge(metrics, storage.poolStats);
  const committer = new GroupCommitter(log, {
    onWrite: (seconds) => metrics.logAppendSeconds.observe(seconds),
  });
  const registry = new PartnerRegistry();
  const materializer = new ProfileMaterializer(orgData, new ProfileIndex());
  let control: Database | undefined;
  let tokens: TokenStore | undefined;
  const refresher = new ProfileRefresher(materializer, (err) => app.log.error({ err }, 'profile refresh failed'));
  const signingKey = resolveWebhookSigningKey(config.webhookSigningKey, config.dataDir, ctx.randomBytes);
  const flows = new FlowStore(orgData, ctx);
  let triggers: TriggerStore | undefined;
  let runner: FlowRunner | undefined;
  let rateLimiters: RateLimiters | undefined;
  let dispatcher: SendDispatcher | undefined;
  // Message templates render on their own worker thread (flows role only).
  const renderer = roles.has('flows') ? new TemplateRenderer() : undefined;
  const channels = roles.has('flows')
    ? openChannels({
        dataDir: config.dataDir,
        ...(config.smtpUrl ? { smtpUrl: config.smtpUrl } : {}),
        allowPrivate: config.webhookAllowPrivate,
        timeoutMs: config.webhookTimeoutMs,
        signingKey,
        clock: ctx.clock,
      })
    : undefined;
  // Shutdown order: stop taking requests (Fastify) → stop polling trigger files, let a running flow run
  // finish, stop deliveries (sends waiting for a retry stay pending for the next start) → flush pending
  // appends → finish the compaction batch → flush token use times → close the log → close DuckDB. Registered before anything else can
  // fail, so a failed start closes what it opened.
  app.addHook('onClose', async () => {
    const steps = [
      () => triggers?.stopWatching(),
      () => rateLimiters?.close(),
      () => runner?.close(),
      () => renderer?.close(),
      () => dispatcher?.close(),
      () => channels?.close(),
      () => committer.flush(),
      () => compactor?.stop(),
      () => refresher.settled(),
      () => tokens?.close(),
      () => log.close(),
      () => storage.close(),
      () => control?.close(),
      () => dataDirLock.release(),
    ];
    // Every step runs even when one fails, so DuckDB (and the storage worker thread) is always closed.
    let failure: unknown;
    for (const step of steps) {
      try {
        await step();
      } catch (error) {
        failure ??= error;
      }
    }
    if (failure !== undefined) throw failure;
  });

  try {
    control = await openControlPlane(config.dataDir);
    const health = serviceHealth({ control, log, worker: storageWorker, dataDir: config.dataDir });
    const orgs = new OrgStore(control, orgData, registry, ctx, {
      customFieldsOf: (org) => materializer.index.customFields(org),
      onProfileSettingsChanged: (org) => materializer.refreshOrg(org),
    });
    await orgs.load();
    // Each org's database is opened once for all of its loads (at most ORG_DATABASES_MAX_OPEN stay open).
    const slugs = (await orgs.list()).map((org) => org.slug);
    for (const org of await orgs.list()) await writeOrgSettings(orgData.org(org.slug), org);
    await materializer.load(slugs);
    const contacts = new ContactStore(orgData, ctx);
    tokens = new TokenStore(control, ctx, { onFlushError: (err) => app.log.warn({ err }, 'token lastUsedAt flush failed') });
    await tokens.load();
    triggers = new TriggerStore(orgData, ctx, {
      queriesDir: config.queriesDir,
      logger: app.log,
      orgExists: (slug) => orgs.cached(slug) !== undefined,
      timeoutMs: config.triggerTimeoutMs,
    });
    await triggers.load(slugs);
    await triggers.scan();
    await flows.load(slugs);
    if (channels && renderer) {
      dispatcher = new SendDispatcher({
        orgs: orgData,
        ctx,
        channels,
        policy: { maxAttempts: config.webhookMaxAttempts, baseDelayMs: config.webhookBackoffMs, maxDelayMs: 60 * 60 * 1000 },
        metrics,
        logger: app.log,
        onDelivered: (org, emails) => refresher.enqueue(emails.map((email) => ({ org, email }))),
      });
      runner = new FlowRunner({
        orgs: orgData,
        ctx,
        flows,
        triggers,
        profiles: materializer.index,
        dispatcher,
        renderer,
        metrics,
        logger: app.log,
        timeoutMs: config.triggerTimeoutMs,
        maxRows: config.triggerMaxRows,
        refreshProfiles: (keys) => refresher.enqueue(keys),
      });
    }

    app.decorate('audience', {
      config, ctx, storage: orgData, poolStats: storage.poolStats, control, log, committer, compactor, orgs, metrics, health, storageWorker, adminKey, materializer, refresher, tokens, triggers, flows, runner, dispatcher, renderer,
    });

    registerOpsRoutes(app, { health, log, metrics });
    if (roles.has('collector')) registerCollectRoutes(app, { ctx, registry, log: committer, metrics });
    if (roles.has('api')) {
      rateLimiters = await openRateLimiters({ redisUrl: config.redisUrl, keyPrefix: config.redisKeyPrefix, metrics, logger: app.log, clock: ctx.clock });
      registerContactsRoute(app, {
        ctx,
        tokens,
        orgs,
        profiles: materializer.index,
        orgLimiter: rateLimiters.org,
        authLimiter: rateLimiters.auth,
        metrics,
      });
      await app.register(async (admin) => {
        admin.addHook('onRequest', adminAuth(adminKey.hash));
        registerOrgRoutes(admin, orgs);
        registerInspectRoutes(admin, orgData, orgs);
        registerImportRoutes(admin, { orgs, contacts, materializer });
        registerTokenRoutes(admin, { tokens: tokens!, orgs });
        registerTriggerRoutes(admin, { storage: orgData, ctx, orgs, triggers: triggers!, timeoutMs: config.triggerTimeoutMs });
        registerFlowRoutes(admin, {
          storage: orgData,
          orgs,
          flows,
          triggers: triggers!,
          runner,
          profiles: materializer.index,
          webhookAllowPrivate: config.webhookAllowPrivate,
          smtpConfigured: config.smtpUrl !== undefined,
          signingKey,
        });
      });
    }

    await compactor?.start();
    if (runner && dispatcher) {
      triggers.watch(QUERIES_POLL_MS);
      await dispatcher.resumePending(slugs);
      renderer?.start();
      runner.start();
    }
  } catch (error) {
    await app.close();
    throw error;
  }
  return app;
}
