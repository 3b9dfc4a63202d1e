/**
 * DATA_DIR: locked before anything in it is opened (the embedded log first), released last; a DATA_DIR
 * from before per-org storage is split into one database per org here, once, before any file is opened.
 * A NATS-mode collector or api process keeps nothing there, so any number of them can share a machine.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { type DataDirLock, lockDataDir } from '../core/data-dir-lock.js';
import { SINGLE_FILE, SPLIT_SUFFIX, splitSingleFile } from '../storage/split-single-file.js';
import { hasStorageRole } from './service.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Held while this process writes DATA_DIR (embedded log, org databases); absent otherwise. */
    dataDirLock: DataDirLock | undefined;
  }
}

export const dataDirPlugin = fp(
  async (app: FastifyInstance) => {
    const { config } = app;
    const usesDataDir = hasStorageRole(config) || config.natsUrl === undefined;
    const lock = usesDataDir ? lockDataDir(config.dataDir) : undefined;
    app.decorate('dataDirLock', lock);
    app.addHook('onClose', () => lock?.release());
    if (!lock) return;
    const split = await splitSingleFile(config.dataDir);
    if (split) app.log.info({ orgs: split.length }, `split ${SINGLE_FILE} into one database per org (the old file is kept as ${SINGLE_FILE}${SPLIT_SUFFIX})`);
  },
  { name: 'audience-data-dir', dependencies: ['audience-service'] },
);
