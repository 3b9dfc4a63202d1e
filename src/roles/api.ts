/**
 * The api role: the Audience API (profiles from the process's serving index) and the admin API. Org
 * settings, credentials and tokens are answered from the control plane on any process; calls that need
 * an org's database are answered here when this process keeps that org (storage role, SHARD), else
 * relayed over NATS to the shard that does (src/cluster/), as are the Audience API calls only that shard
 * can answer (`after=`, eligibility). A storage process in NATS mode registers the org-database routes
 * and the Audience routes too, without the api role: relayed calls reach them through inject().
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { type ApiPresence, announceApi } from '../cluster/api-presence.js';
import { relayOrgAdmin } from '../cluster/relay-org-admin.js';
import { registerRelayRoutes } from '../cluster/relay-routes.js';
import { type ShardRelay, relayToShard } from '../cluster/relay-to-shard.js';
import { isRelayed } from '../cluster/replay-request.js';
import { AppError } from '../core/errors.js';
import { bearerToken } from '../http/bearer.js';
import type { RateLimiter } from '../ratelimit/types.js';
import { type OrgAdminServer, serveOrgAdmin } from '../cluster/serve-org-admin.js';
import { GcraLimiter } from '../ratelimit/gcra-limiter.js';
import { StreamHeads } from '../events/log/stream-heads.js';
import { type RateLimiters, openRateLimiters } from '../ratelimit/open-rate-limiters.js';
import { registerLifecycleLog } from '../routes/admin/lifecycle-log.js';
import { adminAuth } from '../routes/admin/auth.js';
import { registerBackupRoutes } from '../routes/admin/backup.js';
import { registerOrgRoutes } from '../routes/admin/orgs.js';
import { registerContactRoute } from '../routes/admin/orgs/contacts.js';
import { registerImportRoutes } from '../routes/admin/orgs/contacts-import.js';
import { registerInspectRoutes } from '../routes/admin/orgs/events.js';
import { registerFlowRoutes } from '../routes/admin/orgs/flows/index.js';
import { registerTopicRoutes } from '../routes/admin/orgs/topics.js';
import { registerPlanRoutes } from '../routes/admin/orgs/plans.js';
import { registerAlertRoutes } from '../routes/admin/orgs/alerts.js';
import { partnerOf } from '../routes/http/status.js';
import { QuarantineAlerts } from '../reactions/alerts/quarantine-alerts.js';
import { registerErasureRoutes } from '../routes/admin/orgs/erasures.js';
import { registerUnsubscribeRoutes } from '../routes/unsubscribe.js';
import { registerTokenRoutes } from '../routes/admin/orgs/tokens.js';
import { registerTriggerRoutes } from '../routes/admin/orgs/triggers.js';
import { audienceAuth } from '../routes/audience/auth.js';
import { registerBatchRoute } from '../routes/audience/batch.js';
import { registerContactsRoute } from '../routes/audience/contacts.js';
import { answerFirst, contactsFirst } from '../routes/audience/contacts-first.js';
import { logsRequests } from '../http/logger.js';
import { registerEligibilityRoute } from '../routes/audience/eligibility.js';
import { registerConsoleRoutes } from '../routes/console.js';
import { UnsubscribeLinks } from '../reactions/consent/unsubscribe-link.js';
import { runSteps } from './run-steps.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Present with the api role: per-org request budgets and failed authentications (Redis, or in memory). */
    rateLimiters: RateLimiters | undefined;
  }
}

export const apiRole = fp(
  async (app: FastifyInstance) => {
    const { config, ctx, metrics, adminNats, profileFeed: feed, storageRole: storage } = app;
    // The live api processes (NATS mode): while Redis is out of reach, each limits an org to its share.
    let presence: ApiPresence | undefined;
    if (adminNats) presence = await announceApi(adminNats, (err) => app.log.warn({ err }, 'counting the live api processes failed'));
    const live = presence;
    const rateLimiters = await openRateLimiters({
      redisUrl: config.redisUrl,
      keyPrefix: config.redisKeyPrefix,
      metrics,
      logger: app.log,
      clock: ctx.clock,
      ...(live ? { liveApiProcesses: () => live.live() } : {}),
    });
    app.addHook('onClose', () => runSteps([() => presence?.close(), () => rateLimiters.close()]));
    app.decorate('rateLimiters', rateLimiters);
    await registerAudienceApi(app, { orgLimiter: rateLimiters.org, authLimiter: rateLimiters.auth, ...(adminNats ? { relay: relayToShard({ nc: adminNats }) } : {}) });
    registerConsoleRoutes(app);
    if (feed && !(storage && config.shard.count === 1)) {
      // Profiles of the orgs another shard keeps come from the feed; this process's own are materialized here.
      await feed.follow(app.profiles, (org) => (storage?.owns(org) ?? false) || app.orgs.isDeleted(org), (org, at) => app.freshness.refreshed(org, at));
    }
  },
  { name: 'audience-api-role', dependencies: ['audience-control', 'audience-profile-feed', 'audience-nats'] },
);

/**
 * The Audience API's routes, behind their authentication hook (routes/audience/auth.ts). With `relay`,
 * what this process cannot answer for an org (`after=`, eligibility) goes to the org's shard.
 */
async function registerAudienceApi(app: FastifyInstance, options: { orgLimiter: RateLimiter; authLimiter: RateLimiter; relay?: ShardRelay; relayedOnly?: boolean }): Promise<void> {
  const { ctx, metrics, storageRole: storage } = app;
  const deps = { ctx, tokens: app.tokens, orgs: app.orgs, profiles: app.profiles, freshness: app.freshness, metrics, ...options };
  if (app.adminNats) {
    // Other collectors acknowledge too: an org's newest record is asked of the stream when its lag is wanted.
    const heads = new StreamHeads(app.adminNats, (org, at) => app.freshness.acknowledged(org, at), (err) => app.log.warn({ err }, "reading an org's newest record failed"));
    app.freshness.askHeadsWith((org) => heads.want(org));
  }
  await app.register(async (audience) => {
    audience.decorateRequest('audienceOrg', null);
    if (options.relayedOnly) {
      // Reached by inject() from the relay only: over HTTP, a shard serves no lookups (its index holds its own orgs alone).
      audience.addHook('onRequest', async (request) => {
        if (!isRelayed(request)) throw new AppError('not_found', `no route ${request.method} ${request.url.split('?')[0]} on this process (ROLES has no api)`);
      });
    }
    audience.addHook('onRequest', audienceAuth(deps));
    registerContactsRoute(audience, deps);
    // The common lookup ahead of Fastify's generic work; not where each request must be logged, nor on a shard.
    if (!options.relayedOnly && !logsRequests(app.config.logLevel)) answerFirst(app, (fastify) => contactsFirst(deps, fastify));
    registerBatchRoute(audience, deps);
    registerEligibilityRoute(audience, { ...deps, flows: storage?.flows, runner: app.flowsRole?.runner, storage: app.orgStorage?.orgs, owns: (org) => storage?.owns(org) ?? false, triggerTimeoutMs: app.config.triggerTimeoutMs });
  });
}

/**
 * NATS mode, a storage process without the api role: the Audience API calls api processes relay to the
 * org's shard (`after=`, eligibility), answered from this process's own profiles and flows. Its failed
 * authentications and budgets were counted where the call arrived.
 */
export const relayedAudienceCalls = fp(
  async (app: FastifyInstance) => {
    const limiter = new GcraLimiter();
    await registerAudienceApi(app, { orgLimiter: limiter, authLimiter: limiter, relayedOnly: true });
  },
  { name: 'audience-relayed-audience-calls', dependencies: ['audience-control', 'audience-storage-role'] },
);

/**
 * The admin API: with the api role, and on a NATS-mode storage process (relayed calls). Org, credential
 * and token routes with the api role; org-database routes where this process keeps org databases, and
 * a relay to the shard that keeps them where it does not.
 */
export const adminApi = fp(
  async (app: FastifyInstance) => {
    const { config, ctx, orgs, orgStorage, storageRole: storage, adminNats: relay } = app;
    const orgExists = (slug: string) => orgs.cached(slug) !== undefined;
    await app.register(async (admin) => {
      const limiter = app.rateLimiters?.auth ?? new GcraLimiter();
      admin.addHook('onRequest', adminAuth({ keyHash: app.adminKey.hash, limiter, clock: ctx.clock, metrics: app.metrics }));
      registerLifecycleLog(admin);
      if (config.roles.includes('api')) {
        registerOrgRoutes(admin, orgs, app.tokens);
        registerTokenRoutes(admin, { tokens: app.tokens, orgs });
      }
      if (!storage || !orgStorage) {
        registerBackupRoutes(admin, undefined);
        if (relay) registerRelayRoutes(admin, { nc: relay, orgExists });
        return;
      }
      registerBackupRoutes(admin, {
        control: app.control,
        orgs: orgStorage.orgs,
        owns: storage.owns,
        log: app.eventLog!,
        compaction: orgStorage.compaction,
        dataDir: config.dataDir,
        queriesDir: config.queriesDir,
        webhookKeyConfigured: config.webhookSigningKey !== undefined,
        now: () => ctx.clock.now(),
      });
      if (relay) admin.addHook('onRequest', relayOrgAdmin({ nc: relay, isLocal: storage.owns, orgExists }));
      registerInspectRoutes(admin, { storage: orgStorage.orgs, orgs, now: () => ctx.clock.now() });
      registerPlanRoutes(admin, { orgs, plans: app.plans, storage: orgStorage.orgs, files: storage.planFiles, now: () => ctx.clock.now() });
      registerImportRoutes(admin, { orgs, contacts: storage.contacts, materializer: storage.materializer });
      registerContactRoute(admin, { orgs, profiles: app.profiles, consent: storage.consent, freshness: app.freshness, now: () => ctx.clock.now() });
      registerTopicRoutes(admin, { orgs, consent: storage.consent, flows: storage.flows, profiles: app.profiles, ctx, metrics: app.metrics });
      const alerts = new QuarantineAlerts({ orgs: orgStorage.orgs, ctx, onError: () => undefined });
      registerAlertRoutes(admin, { orgs, alerts, allowPrivate: config.webhookAllowPrivate });
      registerErasureRoutes(admin, { orgs, erasures: storage.erasures, profiles: app.profiles });
      registerTriggerRoutes(admin, { storage: orgStorage.orgs, ctx, orgs, triggers: storage.triggers, flows: storage.flows, traits: storage.traits, timeoutMs: config.triggerTimeoutMs });
      registerFlowRoutes(admin, {
        storage: orgStorage.orgs,
        orgs,
        flows: storage.flows,
        ...storage.flowTables,
        triggers: storage.triggers,
        runner: app.flowsRole?.runner,
        renderer: app.flowsRole?.renderer,
        profiles: app.profiles,
        timeoutMs: config.triggerTimeoutMs,
        webhookAllowPrivate: config.webhookAllowPrivate,
        smtpConfigured: config.smtpUrl !== undefined,
        signingKey: storage.signingKey,
        consent: storage.consent,
        links: storage.links,
        now: () => ctx.clock.now(),
      });
    });
    // The unsubscribe links of messages: public, answered where the org's consent is kept, and relayed
    // there from any other process (NATS mode).
    const shards = relay ? { relay: relayToShard({ nc: relay }) } : {};
    const unsubscribe = { orgs, ctx, metrics: app.metrics, ...shards };
    if (storage && orgStorage) {
      registerUnsubscribeRoutes(app, { ...unsubscribe, links: storage.links, local: { owns: storage.owns, consent: storage.consent } });
    } else if (relay && config.webhookSigningKey !== undefined) {
      // Only to read a token's org: the shard that keeps it opens it again before it answers.
      registerUnsubscribeRoutes(app, { ...unsubscribe, links: new UnsubscribeLinks(config.webhookSigningKey, config.publicUrl ?? '') });
    } else if (relay) {
      // A key generated here would open no shard's links; an api process writes nothing to DATA_DIR.
      app.log.warn('WEBHOOK_SIGNING_KEY is not set: this process cannot read which org an unsubscribe link is for, so /unsubscribe/* answers 404 here');
    }
  },
  { name: 'audience-admin-api', dependencies: ['audience-control', 'audience-nats'] },
);

/**
 * NATS mode, storage role: the shard answers admin calls relayed for its orgs once the app is ready
 * (inject() needs it). Registered before the storage role, so that a new org is served before the storage
 * role's own listener opens its database; it stops taking relayed calls first when the app closes.
 */
export const relayedAdminCalls = fp(
  async (app: FastifyInstance) => {
    const nc = app.adminNats!;
    let server: OrgAdminServer | undefined;
    app.addHook('onReady', async () => {
      const shard = app.storageRole!;
      server = await serveOrgAdmin({
        nc,
        app,
        owned: shard.owns,
        adminKeyHash: app.adminKey.hash,
        orgOfLink: (token) => shard.links.open(token)?.org,
        orgOfPartner: (authorization) => partnerOf(app.partners, authorization)?.org,
        orgOfAudienceToken: (authorization) => {
          const auth = app.tokens.authenticate(bearerToken(authorization), app.ctx.clock.now());
          return auth.ok ? auth.org : undefined;
        },
      });
      for (const org of await app.orgs.list()) await server.addOrg(org.slug);
    });
    app.orgs.onChange(async (org, previous) => {
      if (!previous) await server?.addOrg(org.slug);
    });
    app.addHook('preClose', async () => server?.close());
  },
  { name: 'audience-relayed-admin-calls', dependencies: ['audience-control', 'audience-nats'] },
);
