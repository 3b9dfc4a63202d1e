/**
 * The api role: the Audience API (profiles from the process's serving index) and the admin API. Org
 * settings, credentials and tokens are answered from the control plane on any process; calls that need
 * an org's database are answered here when this process keeps that org (storage role, SHARD), else by
 * the shard that does (`relay`, NATS mode).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { adminAuth } from '../admin/admin-auth.js';
import { registerInspectRoutes } from '../admin/inspect-routes.js';
import { registerOrgRoutes } from '../admin/org-routes.js';
import { registerContactsRoute } from '../audience/contacts-route.js';
import type { Config } from '../config.js';
import type { Context } from '../context.js';
import { AppError } from '../errors.js';
import { registerFlowRoutes } from '../flows/flow-routes.js';
import type { Metrics } from '../ops/metrics.js';
import type { AdminKey } from '../orgs/admin-key.js';
import type { OrgStore } from '../orgs/org-store.js';
import { registerImportRoutes } from '../profiles/import-routes.js';
import type { ProfileIndex } from '../profiles/profile-index.js';
import type { RateLimiters } from '../ratelimit/open-rate-limiters.js';
import { registerTokenRoutes } from '../tokens/token-routes.js';
import type { TokenStore } from '../tokens/token-store.js';
import { registerTriggerRoutes } from '../triggers/trigger-routes.js';
import type { StorageRole } from './storage-role.js';

export interface ApiRoleDeps {
  config: Config;
  ctx: Context;
  metrics: Metrics;
  adminKey: AdminKey;
  orgs: OrgStore;
  tokens: TokenStore;
  profiles: ProfileIndex;
  /** Per org and per failing client address: in memory, or one budget across processes with REDIS_URL. */
  rateLimiters: RateLimiters;
  /** Present when this process also keeps org databases. */
  storage: StorageRole | undefined;
  /**
   * Answers an org-database call for an org this process does not keep (NATS mode: the owning shard,
   * over request-reply). Undefined: such calls answer 503 `shard_unavailable`.
   */
  relay?: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;
}

export async function registerApiRole(app: FastifyInstance, deps: ApiRoleDeps): Promise<void> {
  const { config, ctx, metrics, orgs, tokens, profiles, storage } = deps;
  registerContactsRoute(app, {
    ctx,
    tokens,
    orgs,
    profiles,
    orgLimiter: deps.rateLimiters.org,
    authLimiter: deps.rateLimiters.auth,
    metrics,
  });
  await app.register(async (admin) => {
    admin.addHook('onRequest', adminAuth(deps.adminKey.hash));
    registerOrgRoutes(admin, orgs);
    registerTokenRoutes(admin, { tokens, orgs });
    await admin.register(async (data) => {
      data.addHook('preHandler', async (request, reply) => {
        const { slug } = request.params as { slug?: string };
        if (slug === undefined || (storage && storage.owns(slug))) return;
        await orgs.get(slug); // an unknown org is a 404 wherever it is asked
        if (!deps.relay) throw new AppError('shard_unavailable', `org "${slug}" is kept by a storage shard this process cannot reach`, { headers: { 'Retry-After': '1' } });
        return deps.relay(request, reply);
      });
      if (!storage) {
        // Every org-database call goes to the shard that keeps the org (the hook above answers it).
        data.all('/admin/v1/orgs/:slug/*', async () => undefined);
        return;
      }
      registerInspectRoutes(data, storage.storage.orgs, orgs);
      registerImportRoutes(data, { orgs, contacts: storage.contacts, materializer: storage.materializer });
      registerTriggerRoutes(data, { storage: storage.storage.orgs, ctx, orgs, triggers: storage.triggers, timeoutMs: config.triggerTimeoutMs });
      registerFlowRoutes(data, {
        storage: storage.storage.orgs,
        orgs,
        flows: storage.flows,
        triggers: storage.triggers,
        runner: storage.runner,
        profiles,
        webhookAllowPrivate: config.webhookAllowPrivate,
        smtpConfigured: config.smtpUrl !== undefined,
        signingKey: storage.signingKey,
      });
    });
  });
}
