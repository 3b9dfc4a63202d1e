/**
 * The control plane: orgs, partner credentials, tokens and the admin key (control.duckdb, or a KV bucket
 * in NATS mode), watched, so a change made by any process is in force here.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { type AdminKey, resolveAdminKey } from '../control/admin-key.js';
import { openControl } from '../control/open-control.js';
import { OrgStore } from '../control/org-store.js';
import { PartnerRegistry } from '../control/partner-registry.js';
import { TokenStore } from '../control/token-store.js';
import { type ControlDocuments, orgKey, tokensKey } from '../control/types.js';
import { PLAN_KEY_PREFIX, PlanStore } from '../events/plans/plan-store.js';

declare module 'fastify' {
  interface FastifyInstance {
    control: ControlDocuments;
    orgs: OrgStore;
    /** Partner credentials of every org, for collect. */
    partners: PartnerRegistry;
    tokens: TokenStore;
    /** Tracking plans of every org, for collect and the admin API. */
    plans: PlanStore;
    adminKey: AdminKey;
  }
}

export const controlPlugin = fp(
  async (app: FastifyInstance) => {
    const { config, ctx, profiles } = app;
    app.decorate('adminKey', resolveAdminKey(config.adminKey, config.dataDir, ctx));
    const control = await openControl(config, app.dataDirLock !== undefined);
    app.addHook('onClose', () => control.close());
    const partners = new PartnerRegistry();
    const orgs = new OrgStore(control, partners, ctx, {
      customFieldsOf: (org) => profiles.customFields(org),
      onListenerError: (err) => app.log.error({ err }, 'applying an org change failed'),
    });
    // Every process holds profiles (its own or followed): a deleted org's go at once.
    orgs.onDelete(async (slug) => profiles.removeOrg(slug));
    const tokens = new TokenStore(control, ctx, { onFlushError: (err) => app.log.warn({ err }, 'token lastUsedAt flush failed') });
    app.addHook('onClose', () => tokens.close());
    const plans = new PlanStore(control, ctx, (org, eventName, detail) => app.log.error({ org, eventName, detail }, 'a stored tracking plan does not compile; it is not applied'));
    orgs.onDelete(async (slug) => plans.forgetOrg(slug));
    await control.watch((entry) => {
      if (entry.key.startsWith(orgKey(''))) void orgs.apply(entry);
      else if (entry.key.startsWith(tokensKey(''))) tokens.apply(entry);
      else if (entry.key.startsWith(PLAN_KEY_PREFIX) && !orgs.isDeleted((entry.value as { org?: string }).org ?? '')) plans.apply(entry);
    });
    tokens.start();
    app.decorate('control', control);
    app.decorate('orgs', orgs);
    app.decorate('partners', partners);
    app.decorate('tokens', tokens);
    app.decorate('plans', plans);
  },
  { name: 'audience-control', dependencies: ['audience-service', 'audience-data-dir', 'audience-profiles'] },
);
