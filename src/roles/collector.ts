/**
 * The collector role: the collect and batch endpoints and the Segment-compatible tracking API, appending to the event log through a group
 * committer. Stateless beyond the partner credentials it keeps from the control plane, so any number of
 * collectors can run against one JetStream stream.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { GroupCommitter } from '../events/log/group-commit.js';
import { registerCollectRoutes } from '../routes/http/collect.js';
import { registerAnalyticsJsRoutes } from '../routes/http/analytics-js.js';
import { registerTrackingRoutes } from '../routes/http/tracking.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Present with the collector role. */
    committer: GroupCommitter | undefined;
  }
}

export const collectorRole = fp(
  async (app: FastifyInstance) => {
    const { metrics } = app;
    const { freshness } = app;
    const committer = new GroupCommitter(app.eventLog!, {
      onWrite: (seconds, entries) => {
        metrics.logAppendSeconds.observe(seconds);
        // How far the org's profiles are behind what it was told is stored (freshness.ts).
        for (const entry of entries) if (entry.kind === 'event') freshness.acknowledged(entry.org, entry.receivedAt);
      },
    });
    // Pending appends are flushed before the log closes.
    app.addHook('onClose', () => committer.flush());
    const deps = { ctx: app.ctx, registry: app.partners, log: committer, metrics, plans: app.plans };
    registerCollectRoutes(app, deps);
    const { publicUrl, host, port } = app.config;
    const urls = { publicUrl, listenUrl: `http://${host}:${port}` };
    registerTrackingRoutes(app, deps, urls);
    registerAnalyticsJsRoutes(app, deps, urls);
    app.decorate('committer', committer);
  },
  { name: 'audience-collector-role', dependencies: ['audience-control', 'audience-event-log', 'audience-profiles'] },
);
