/**
 * The profiles this process serves and flows read: its own orgs' (materialized by the storage role), and
 * in NATS mode every org's, from the profile feed (a KV bucket the storage shards publish to).
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ProfileFeed } from '../events/profiles/profile-feed.js';
import { ProfileIndex } from '../events/profiles/profile-index.js';
import { Freshness } from '../events/profiles/freshness.js';
import { natsSecurity } from '../nats/nats-client.js';
import { hasStorageRole } from './service.js';

declare module 'fastify' {
  interface FastifyInstance {
    profiles: ProfileIndex;
    /** How far behind each org's profiles are, and whether an event is reflected yet (read-your-writes). */
    freshness: Freshness;
    /** NATS mode, api or storage role: profiles published by the storage shards, followed by the api processes. */
    profileFeed: ProfileFeed | undefined;
  }
}

/** The serving index (in memory; the control plane removes a deleted org's profiles from it). */
export const profilesPlugin = fp(
  async (app: FastifyInstance) => {
    const profiles = new ProfileIndex();
    app.decorate('profiles', profiles);
    app.decorate('freshness', new Freshness(profiles));
  },
  { name: 'audience-profiles', dependencies: ['audience-service'] },
);

/** Opened after the control plane and the log, whose errors say more about a NATS that does not answer. */
export const profileFeedPlugin = fp(
  async (app: FastifyInstance) => {
    const { config } = app;
    const feed =
      config.natsUrl && (config.roles.includes('api') || hasStorageRole(config))
        ? await ProfileFeed.open({ servers: config.natsUrl, replicas: config.natsStreamReplicas, security: natsSecurity(config) }, (err) =>
            app.log.error({ err }, 'publishing a profile failed'),
          )
        : undefined;
    app.decorate('profileFeed', feed);
    app.addHook('onClose', async () => feed?.close());
  },
  { name: 'audience-profile-feed', dependencies: ['audience-profiles'] },
);
