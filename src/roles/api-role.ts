/**
 * The api role: the Audience API (profiles from the process's serving index) and the admin API. Org
 * settings, credentials and tokens are answered from the control plane on any process; calls that need
 * an org's database are answered here when this process keeps that org (storage role, SHARD), else
 * relayed over NATS to the shard that does (src/cluster/). A storage process in NATS mode registers the
 * org-database routes too, without the api role: relayed calls reach them through inject().
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { FastifyInstance } from 'fastify';
import { adminAuth } from '../routes/admin/auth.js';
import { registerContactRoute } from '../routes/admin/orgs/contacts.js';
import { registerInspectRoutes } from '../routes/admin/orgs/events.js';
import { registerOrgRoutes } from '../routes/admin/orgs.js';
import { registerContactsRoute } from '../routes/audience/contacts.js';
import { registerBackupRoutes } from '../routes/admin/backup.js';
import { relayOrgAdmin } from '../cluster/relay-org-admin.js';
import { registerRelayRoutes } from '../cluster/relay-routes.js';
import type { Config } from '../core/config.js';
import type { Context } from '../core/context.js';
import type { ControlDocuments } from '../control/types.js';
import { registerFlowRoutes } from '../routes/admin/orgs/flows.js';
import type { LogBackend } from '../events/log/types.js';
import type { Metrics } from '../ops/metrics.js';
import type { AdminKey } from '../control/admin-key.js';
import type { OrgStore } from '../control/org-store.js';
import { registerImportRoutes } from '../routes/admin/orgs/contacts-import.js';
import type { ProfileIndex } from '../events/profiles/profile-index.js';
import { GcraLimiter } from '../ratelimit/gcra-limiter.js';
import type { RateLimiters } from '../ratelimit/open-rate-limiters.js';
import type { RateLimiter } from '../ratelimit/types.js';
import { registerTokenRoutes } from '../routes/admin/orgs/tokens.js';
import type { TokenStore } from '../control/token-store.js';
import { registerTriggerRoutes } from '../routes/admin/orgs/triggers.js';
import type { StorageRole } from './storage-role.js';

export interface AdminApiDeps {
  config: Config;
  ctx: Context;
  adminKey: AdminKey;
  control: ControlDocuments;
  /** Present with the storage role (backups wait for compaction to reach its head). */
  log: LogBackend | undefined;
  orgs: OrgStore;
  tokens: TokenStore;
  profiles: ProfileIndex;
  /** Present when this process keeps org databases. */
  storage: StorageRole | undefined;
  /** NATS mode: org-database calls for orgs kept elsewhere are relayed over this connection. */
  relay: NatsConnection | undefined;
  /** The api role: org, credential and token routes too (a storage process alone has only the org-database ones). */
  withOrgRoutes: boolean;
  metrics: Metrics;
  /** Failed admin authentications per client address: the api role's `auth` limiter; without it, in memory. */
  authLimiter: RateLimiter | undefined;
}

export function registerAudienceApi(
  app: FastifyInstance,
  deps: { ctx: Context; metrics: Metrics; orgs: OrgStore; tokens: TokenStore; profiles: ProfileIndex; rateLimiters: RateLimiters },
): void {
  registerContactsRoute(app, {
    ctx: deps.ctx,
    tokens: deps.tokens,
    orgs: deps.orgs,
    profiles: deps.profiles,
    orgLimiter: deps.rateLimiters.org,
    authLimiter: deps.rateLimiters.auth,
    metrics: deps.metrics,
  });
}

export async function registerAdminApi(app: FastifyInstance, deps: AdminApiDeps): Promise<void> {
  const { config, ctx, orgs, storage, relay } = deps;
  const orgExists = (slug: string) => orgs.cached(slug) !== undefined;
  await app.register(async (admin) => {
    const limiter = deps.authLimiter ?? new GcraLimiter();
    admin.addHook('onRequest', adminAuth({ keyHash: deps.adminKey.hash, limiter, clock: ctx.clock, metrics: deps.metrics }));
    if (deps.withOrgRoutes) {
      registerOrgRoutes(admin, orgs, deps.tokens);
      registerTokenRoutes(admin, { tokens: deps.tokens, orgs });
    }
    if (!storage) {
      registerBackupRoutes(admin, undefined);
      if (relay) registerRelayRoutes(admin, { nc: relay, orgExists });
      return;
    }
    registerBackupRoutes(admin, {
      control: deps.control,
      orgs: storage.storage.orgs,
      owns: storage.owns,
      log: deps.log!,
      compaction: storage.storage.compaction,
      dataDir: config.dataDir,
      queriesDir: config.queriesDir,
      webhookKeyConfigured: config.webhookSigningKey !== undefined,
      now: () => ctx.clock.now(),
    });
    if (relay) admin.addHook('onRequest', relayOrgAdmin({ nc: relay, isLocal: storage.owns, orgExists }));
    registerInspectRoutes(admin, storage.storage.orgs, orgs);
    registerImportRoutes(admin, { orgs, contacts: storage.contacts, materializer: storage.materializer });
    registerContactRoute(admin, { orgs, profiles: deps.profiles });
    registerTriggerRoutes(admin, { storage: storage.storage.orgs, ctx, orgs, triggers: storage.triggers, timeoutMs: config.triggerTimeoutMs });
    registerFlowRoutes(admin, {
      storage: storage.storage.orgs,
      orgs,
      flows: storage.flows,
      triggers: storage.triggers,
      runner: storage.runner,
      renderer: storage.renderer,
      profiles: deps.profiles,
      timeoutMs: config.triggerTimeoutMs,
      webhookAllowPrivate: config.webhookAllowPrivate,
      smtpConfigured: config.smtpUrl !== undefined,
      signingKey: storage.signingKey,
    });
  });
}
