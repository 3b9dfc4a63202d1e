/** The event log (embedded file or JetStream), for the collector and storage roles. */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { jetStreamOptions } from '../events/log/jetstream-log.js';
import { openLog } from '../events/log/open-log.js';
import type { LogBackend } from '../events/log/types.js';
import { logPositions } from '../storage/checkpoint.js';
import { hasStorageRole } from './service.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Absent on a NATS-mode process with neither collector nor storage role. */
    eventLog: LogBackend | undefined;
  }
}

export const eventLogPlugin = fp(
  async (app: FastifyInstance) => {
    const { config } = app;
    const log =
      config.roles.includes('collector') || hasStorageRole(config)
        ? await openLog({
            natsUrl: config.natsUrl,
            dataDir: config.dataDir,
            jetstream: jetStreamOptions(config),
            embedded: { segmentBytes: config.logSegmentMb * 1024 * 1024, retentionMs: config.logRetentionHours * 60 * 60 * 1000 },
            onTornTail: (tail) => app.log.warn({ tail }, 'embedded log: cut a torn tail left by a crash'),
            // Numbering goes on above every position this process's org databases may hold.
            ...(app.dataDirLock ? { positions: logPositions(config.dataDir) } : {}),
            onBehind: (behind, message) => app.log.error({ behind }, message),
          })
        : undefined;
    app.decorate('eventLog', log);
    app.addHook('onClose', async () => log?.close());
  },
  { name: 'audience-event-log', dependencies: ['audience-service', 'audience-data-dir'] },
);
