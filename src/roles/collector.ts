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
    const committer = new GroupCommitter(app.eventLog!, { onWrite: (seconds) => metrics.logAppendSeconds.observe(seconds) });
    // Pending appends are flushed before the log closes.
    app.addHook('onClose', () => committer.flush());
    const deps = { ctx: app.ctx, registry: app.partners, log: committer, metrics };
    registerCollectRoutes(app, deps);
    const { publicUrl, host, port } = app.config;
    const urls = { publicUrl, listenUrl: `http://${host}:${port}` };
    registerTrackingRoutes(app, deps, urls);
    registerAnalyticsJsRoutes(app, deps, urls);
    app.decorate('committer', committer);
  },
  { name: 'audience-collector-role', dependencies: ['audience-control', 'audience-event-log'] },
);
