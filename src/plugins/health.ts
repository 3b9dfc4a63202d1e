/** What /readyz and /healthz check, and the gauges an operator alerts on (readiness, profiles held, the log's size, free space). */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { EmbeddedLog } from '../events/log/embedded-log.js';
import type { Health } from '../ops/health.js';
import { CompactionLag } from '../ops/compaction-lag.js';
import { registerOperatorGauges } from './operator-metrics.js';
import { serviceHealth } from './service-health.js';

declare module 'fastify' {
  interface FastifyInstance {
    health: Health;
  }
}

export const healthPlugin = fp(
  async (app: FastifyInstance) => {
    const { config, eventLog: log, profiles } = app;
    const usesDataDir = app.dataDirLock !== undefined;
    const compaction = app.orgStorage?.compaction;
    const lag = log && compaction ? new CompactionLag({ headSeq: () => log.headSeq(), compactedSeq: () => compaction.compactedSeq }, app.ctx.clock) : undefined;
    if (lag) app.storageEvents.onCompacted(() => lag.committed());
    const health = serviceHealth({ control: app.control, log, storage: app.orgStorage, dataDir: config.dataDir, usesDataDir, lag });
    registerOperatorGauges(app.metrics, {
      lag,
      ready: async () => (await health.probe()).ready,
      profileEntries: () => profiles.totalSize(),
      embeddedLog: log instanceof EmbeddedLog ? log : undefined,
      dataDir: usesDataDir ? config.dataDir : undefined,
    });
    app.decorate('health', health);
  },
  { name: 'audience-health', dependencies: ['audience-control', 'audience-event-log', 'audience-org-storage'] },
);
