/**
 * Opens the orgs' databases (a pool, org-databases.ts) and, for the compactor role, compaction: in the
 * storage worker thread (STORAGE_THREAD=worker, the default) or on this thread (main). Either way the
 * rest of the service gets one Database per org and a Compaction with the same behaviour.
 */
import { join } from 'node:path';
import { type CommitReport, Compactor, type Compaction, type CompactorMetrics } from '../compaction/compactor.js';
import { type Config, jetStreamOptions } from '../config.js';
import { type Context, systemClock } from '../context.js';
import { EmbeddedLog } from '../log/embedded-log.js';
import type { LayoutChange } from '../log/segments.js';
import type { LogBackend } from '../log/types.js';
import { CHECKPOINT_FILE, LogCheckpoint } from './checkpoint.js';
import { type OrgDatabaseLimits, OrgDatabases, ORGS_DIR } from './org-databases.js';
import { LocalOrgStorage, type OrgStorage } from './org-storage.js';
import { StorageWorker } from './storage-client.js';
import type { MetricUpdate, StorageWorkerData } from './storage-protocol.js';

/** An org database's memory limit is never set below this, however many may be open. */
const MIN_ORG_MEMORY_BYTES = 64 * 1024 * 1024;

export interface Storage {
  orgs: OrgStorage;
  compaction: Compaction | undefined;
  /** The storage worker thread (STORAGE_THREAD=worker), for its health; undefined on the main thread. */
  worker: StorageWorker | undefined;
  /** Org databases open now, and the most open at once since start. */
  poolStats(): Promise<{ open: number; highWater: number }>;
  close(): Promise<void>;
}

export interface StorageOptions {
  config: Config;
  ctx: Context;
  log: LogBackend;
  /** The compactor's metrics (in the storage worker, its updates arrive as messages: onMetric). */
  metrics: CompactorMetrics;
  onMetric(update: MetricUpdate): void;
  logger: { error(details: object, message: string): void };
  /** A compaction commit wrote events (their contacts' profiles need a refresh). */
  onCompacted: (report: CommitReport) => void;
}

export async function openStorage(options: StorageOptions): Promise<Storage> {
  const { config, ctx, log, metrics, onMetric, logger, onCompacted } = options;
  const orgsDir = join(config.dataDir, ORGS_DIR);
  const checkpointFile = join(orgsDir, CHECKPOINT_FILE);
  const limits = orgDatabaseLimits(config);
  const compacts = config.roles.includes('compactor');
  if (config.storageThread === 'main') {
    const pool = new OrgDatabases(orgsDir, limits);
    const orgs = new LocalOrgStorage(pool);
    const compaction = compacts
      ? new Compactor({ orgs, checkpoint: new LogCheckpoint(checkpointFile), log, shard: config.shard, ctx, metrics, logger, afterCommit: async (report) => onCompacted(report) })
      : undefined;
    return {
      orgs,
      compaction,
      worker: undefined,
      poolStats: async () => ({ open: pool.openCount, highWater: pool.highWater }),
      close: () => pool.close(),
    };
  }
  // The worker's compactor keeps time with the system clock; a test clock cannot follow it there.
  if (ctx.clock !== systemClock) throw new Error('an injected clock needs STORAGE_THREAD=main');
  let worker: StorageWorker | undefined;
  /** Changes made while the worker starts, reported once it runs (nothing is listening yet, but cheap to be sure). */
  const early: LayoutChange[] = [];
  const data: StorageWorkerData = { orgsDir, limits, checkpointFile, shard: config.shard };
  if (compacts && log instanceof EmbeddedLog) {
    const layout = log.share((change) => {
      if (worker) worker.send({ type: 'log-changed', change });
      else early.push(change);
    });
    data.log = { kind: 'embedded', layout };
  } else if (compacts && config.natsUrl) {
    data.log = { kind: 'jetstream', natsUrl: config.natsUrl, options: jetStreamOptions(config) };
  }
  const started = await StorageWorker.start(data, {
    onCompacted,
    onMetric,
    onError: (details, message) => logger.error(details, message),
  });
  worker = started;
  for (const change of early) started.send({ type: 'log-changed', change });
  return { orgs: started, compaction: started.compaction, worker: started, poolStats: () => started.poolStats(), close: () => started.close() };
}

/** Each open org database gets an equal share of DUCKDB_MEMORY_LIMIT, so together they stay under it. */
function orgDatabaseLimits(config: Config): OrgDatabaseLimits {
  const share = Math.max(MIN_ORG_MEMORY_BYTES, Math.floor(bytesOf(config.duckdbMemoryLimit) / config.orgDatabasesMaxOpen));
  return {
    maxOpen: config.orgDatabasesMaxOpen,
    memoryLimit: `${Math.floor(share / (1024 * 1024))}MiB`,
    threads: config.orgDatabaseThreads,
    idleCloseMs: config.orgDatabaseIdleMs,
  };
}

const UNITS: Record<string, number> = { KB: 1e3, MB: 1e6, GB: 1e9, TB: 1e12, KIB: 2 ** 10, MIB: 2 ** 20, GIB: 2 ** 30, TIB: 2 ** 40 };

/** "4GB", "512 MiB" (schemas/config.schema.json's pattern) in bytes. */
function bytesOf(limit: string): number {
  const [, amount, unit] = /^([0-9.]+)\s*([A-Za-z]+)$/.exec(limit.trim()) ?? [];
  return Number(amount) * (UNITS[(unit ?? '').toUpperCase()] ?? 1);
}
