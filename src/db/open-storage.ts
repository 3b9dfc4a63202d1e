/**
 * Opens DuckDB and, for the compactor role, compaction: in the storage worker thread (STORAGE_THREAD=
 * worker, the default) or on this thread (main). Either way the rest of the service gets a Database
 * and a Compaction with the same behaviour. The caller migrates the file (db/migrate.ts) before anything uses it.
 */
import { join } from 'node:path';
import { type CommitReport, Compactor, type Compaction } from '../compaction/compactor.js';
import type { Config } from '../config.js';
import { type Context, systemClock } from '../context.js';
import { EmbeddedLog } from '../log/embedded-log.js';
import type { LogBackend } from '../log/types.js';
import type { Metrics } from '../ops/metrics.js';
import { LocalDatabase } from './database.js';
import type { Database } from './sql.js';
import { StorageWorker } from './storage-client.js';
import type { MetricUpdate, StorageWorkerData } from './storage-protocol.js';

export interface Storage {
  db: Database;
  compaction: Compaction | undefined;
  /** The storage worker thread (STORAGE_THREAD=worker), for its health; undefined on the main thread. */
  worker: StorageWorker | undefined;
}

export interface StorageOptions {
  config: Config;
  ctx: Context;
  log: LogBackend;
  metrics: Metrics;
  logger: { error(details: object, message: string): void };
  /** A compaction commit wrote events (their contacts' profiles need a refresh). */
  onCompacted: (report: CommitReport) => void;
}

export async function openStorage(options: StorageOptions): Promise<Storage> {
  const { config, ctx, log, metrics, logger, onCompacted } = options;
  const dbPath = join(config.dataDir, 'audience.duckdb');
  const compacts = config.roles.includes('compactor');
  if (config.storageThread === 'main') {
    const db = await LocalDatabase.open(dbPath, { memoryLimit: config.duckdbMemoryLimit });
    const compaction = compacts
      ? new Compactor({ db, log, ctx, metrics, logger, afterCommit: async (report) => onCompacted(report) })
      : undefined;
    return { db, compaction, worker: undefined };
  }
  // The worker's compactor keeps time with the system clock; a test clock cannot follow it there.
  if (ctx.clock !== systemClock) throw new Error('an injected clock needs STORAGE_THREAD=main');
  let worker: StorageWorker | undefined;
  /** Appends made while the worker starts, reported once it runs (nothing is listening yet, but cheap to be sure). */
  const early: Array<{ offset: number; end: number }> = [];
  const data: StorageWorkerData = { dbPath, memoryLimit: config.duckdbMemoryLimit };
  if (compacts && log instanceof EmbeddedLog) {
    const layout = log.share((offset, end) => {
      if (worker) worker.send({ type: 'log-appended', offset, end });
      else early.push({ offset, end });
    });
    data.log = { kind: 'embedded', layout };
  } else if (compacts && config.natsUrl) {
    data.log = { kind: 'jetstream', natsUrl: config.natsUrl };
  }
  worker = await StorageWorker.start(data, {
    onCompacted,
    onMetric: (update) => applyMetric(metrics, update),
    onError: (details, message) => logger.error(details, message),
  });
  for (const append of early) worker.send({ type: 'log-appended', ...append });
  return { db: worker.db, compaction: worker.compaction, worker };
}

function applyMetric(metrics: Metrics, update: MetricUpdate): void {
  switch (update.metric) {
    case 'compactionBatchSeconds':
      return metrics.compactionBatchSeconds.observe(update.seconds);
    case 'eventsQuarantined':
      return metrics.eventsQuarantined.inc({ code: update.code });
    case 'duplicatesDropped':
      return metrics.duplicatesDropped.inc(update.count);
    case 'compactionLag':
      return metrics.compactionLag.set(update.records);
  }
}
