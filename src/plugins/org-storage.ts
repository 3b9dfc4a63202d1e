/**
 * The org databases of the orgs this process keeps, in the storage process (or this one with
 * STORAGE_PROCESS=inline), and the compaction that fills them: for the storage roles only.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { CommitReport } from '../events/compaction/compaction.js';
import { applyMetric, registerOrgDatabasesGauge } from '../ops/metrics.js';
import { type Storage, openStorage } from '../storage/open-storage.js';
import { hasStorageRole } from './service.js';

/** What the storage roles hear from the databases below them. */
export interface StorageEvents {
  /** A compaction commit wrote events: their contacts' profiles need a refresh. */
  onCompacted(listener: (report: CommitReport) => void): void;
  /** A new storage process took over (sends the old one recorded may not have been delivered). */
  onRestarted(listener: () => void): void;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Present with the compactor or flows role. */
    orgStorage: Storage | undefined;
    storageEvents: StorageEvents;
  }
}

export const orgStoragePlugin = fp(
  async (app: FastifyInstance) => {
    const { config, metrics } = app;
    const compacted: Array<(report: CommitReport) => void> = [];
    const restarted: Array<() => void> = [];
    app.decorate('storageEvents', { onCompacted: (listener) => void compacted.push(listener), onRestarted: (listener) => void restarted.push(listener) });
    if (!hasStorageRole(config)) {
      app.decorate('orgStorage', undefined);
      return;
    }
    const storage = await openStorage({
      config,
      ctx: app.ctx,
      log: app.eventLog!,
      metrics,
      onMetric: (update) => applyMetric(metrics, update),
      logger: app.log,
      onCompacted: (report) => compacted.forEach((listener) => listener(report)),
      onRestarted: (_reason, queryKilled) => {
        metrics.storageRestarts.inc({ cause: queryKilled ? 'query_killed' : 'ended' });
        restarted.forEach((listener) => listener());
      },
    });
    app.addHook('onClose', () => storage.close());
    registerOrgDatabasesGauge(metrics, storage.poolStats);
    app.decorate('orgStorage', storage);
  },
  { name: 'audience-org-storage', dependencies: ['audience-service', 'audience-data-dir', 'audience-event-log'] },
);
