/**
 * Opens the orgs' databases (a pool, org-databases.ts) and, for the compactor role, compaction: in the
 * supervised storage process (STORAGE_PROCESS=child, the default) or on this thread (inline). Either way
 * the rest of the service gets one Database per org and a Compaction with the same behaviour.
 */
import { join } from 'node:path';
import { Compactor } from '../events/compaction/compactor.js';
import type { CommitReport, Compaction, CompactorMetrics } from '../events/compaction/compaction.js';
import type { Config } from '../core/config.js';
import { jetStreamOptions } from '../events/log/jetstream-log.js';
import { type Context, systemClock } from '../core/context.js';
import { EmbeddedLog } from '../events/log/embedded-log.js';
import type { LogBackend } from '../events/log/types.js';
import { CHECKPOINT_FILE, LogCheckpoint } from './checkpoint.js';
import { type OrgDatabaseLimits, OrgDatabases } from './org-databases.js';
import { ORGS_DIR } from './org-files.js';
import type { OrgStorage } from '../db/org-storage.js';
import { LocalOrgStorage } from './org-storage.js';
import { StorageProcess } from './storage-client.js';
import type { MetricUpdate } from '../ops/metrics.js';
import { SERVICE_NODE_FLAGS } from '../core/node-flags.js';
import { LayoutRelay } from '../events/log/layout-relay.js';
import { UNTRUSTED_LIMITS } from './untrusted-gate.js';

/** An org database's memory limit is never set below this, however many may be open. */
const MIN_ORG_MEMORY_BYTES = 64 * 1024 * 1024;
/**
 * libuv's pool in the storage process: every DuckDB statement holds one of its threads while it runs.
 * Untrusted SQL may hold UNTRUSTED_LIMITS.total of them; the rest keep compaction, profile refreshes and
 * flow writes going, and the log's reads.
 */
const STORAGE_THREAD_POOL_SIZE = 2 * UNTRUSTED_LIMITS.total;
/** V8's heap in the storage process: rows of a 100,000-row trigger result cross as JS objects. */
const STORAGE_HEAP_MB = 1024;
/**
 * The storage process's address space beyond the runtime's (spawn-process.ts): DuckDB's buffer memory
 * (DUCKDB_MEMORY_LIMIT) twice over, since allocations outside its buffer manager (strings, lists,
 * constant folding) are not counted in it and its allocator keeps freed address space mapped (1.1–1.9 GB
 * above the resident size in a measured run), V8's heap, and 25 MB of thread stacks per open database.
 * Past it an allocation fails: the statement making it gets DuckDB's out-of-memory error, and nothing
 * else is killed.
 */
function storageAddressSpace(config: Config): number {
  return 2 * bytesOf(config.duckdbMemoryLimit) + 2 * STORAGE_HEAP_MB * 1024 ** 2 + config.orgDatabasesMaxOpen * 25 * 1024 ** 2;
}
/** Collect and lookups (this process) come first when the cores are busy; compaction catches up after. */
const STORAGE_NICE = 10;

export interface Storage {
  orgs: OrgStorage;
  compaction: Compaction | undefined;
  /** The supervised storage process (STORAGE_PROCESS=child); undefined inline. */
  process: StorageProcess | undefined;
  /** Org databases open now, and the most open at once since start. */
  poolStats(): Promise<{ open: number; highWater: number }>;
  /** Orgs whose database cannot be opened, with the reason (org-databases.ts, OrgUnavailable). */
  unavailable(): Promise<Record<string, string>>;
  close(): Promise<void>;
}

export interface StorageOptions {
  config: Config;
  ctx: Context;
  log: LogBackend;
  /** The compactor's metrics (in the storage process, its updates arrive as messages: onMetric). */
  metrics: CompactorMetrics;
  onMetric(update: MetricUpdate): void;
  logger: { error(details: object, message: string): void; warn(details: object, message: string): void };
  /** A compaction commit wrote events (their contacts' profiles need a refresh). */
  onCompacted: (report: CommitReport) => void;
  /** A new storage process took over: sessions and calls of the old one are gone (`queryKilled`: we killed it to stop a query). */
  onRestarted: (reason: string, queryKilled: boolean) => void;
}

export async function openStorage(options: StorageOptions): Promise<Storage> {
  const { config, ctx, log, metrics, onMetric, logger, onCompacted } = options;
  const orgsDir = join(config.dataDir, ORGS_DIR);
  const checkpointFile = join(orgsDir, CHECKPOINT_FILE);
  const limits = orgDatabaseLimits(config);
  const compacts = config.roles.includes('compactor');
  if (config.storageProcess === 'inline') {
    const pool = new OrgDatabases(orgsDir, limits, ctx.clock);
    const orgs = new LocalOrgStorage(pool);
    const compaction = compacts
      ? new Compactor({ orgs, checkpoint: new LogCheckpoint(checkpointFile), log, shard: config.shard, ctx, metrics, logger, afterCommit: async (report) => onCompacted(report) })
      : undefined;
    return {
      orgs,
      compaction,
      process: undefined,
      poolStats: async () => ({ open: pool.openCount, highWater: pool.highWater }),
      unavailable: async () => pool.unavailable(),
      close: () => pool.close(),
    };
  }
  // The storage process's compactor keeps time with the system clock; a test clock cannot follow it there.
  if (ctx.clock !== systemClock) throw new Error('an injected clock needs STORAGE_PROCESS=inline');
  let storage: StorageProcess | undefined;
  const embedded = compacts && log instanceof EmbeddedLog ? log : undefined;
  // Every later change of the log's segments goes to the process running then; a new process starts
  // from the segments as they are when it is started.
  const relay = new LayoutRelay((change) => storage?.send({ type: 'log-changed', change }));
  embedded?.share((change) => relay.push(change));
  storage = await StorageProcess.start({
    data: {
      orgsDir,
      limits,
      checkpointFile,
      shard: config.shard,
      threadPoolSize: STORAGE_THREAD_POOL_SIZE,
      ...(embedded ? { log: { kind: 'embedded' as const } } : compacts && config.natsUrl ? { log: { kind: 'jetstream' as const, natsUrl: config.natsUrl, options: jetStreamOptions(config) } } : {}),
    },
    ...(embedded
      ? {
          layout: () => {
            relay.discard();
            return embedded.layout();
          },
        }
      : {}),
    process: {
      addressSpaceBytes: storageAddressSpace(config),
      nice: STORAGE_NICE,
      nodeOptions: [...SERVICE_NODE_FLAGS, `--max-old-space-size=${STORAGE_HEAP_MB}`],
      env: { UV_THREADPOOL_SIZE: String(STORAGE_THREAD_POOL_SIZE) },
    },
    events: {
      onCompacted,
      onMetric,
      onError: (details, message) => logger.error(details, message),
      onRestarted: (reason, queryKilled) => {
        logger.warn({ reason }, 'a new storage process took over');
        options.onRestarted(reason, queryKilled);
      },
    },
  });
  const started = storage;
  return {
    orgs: started,
    compaction: started.compaction,
    process: started,
    // Probes (metrics, /readyz) do not wait for a restart: they ask the process only while it runs.
    poolStats: () => (started.running ? started.poolStats() : Promise.reject(new Error('the storage process is restarting'))),
    unavailable: () =>
      started.running ? started.call<Record<string, string>>({ op: 'unavailable' }) : Promise.reject(new Error('the storage process is restarting')),
    close: () => {
      relay.flush();
      return started.close();
    },
  };
}

/**
 * An org's share of DUCKDB_MEMORY_LIMIT: each open org database gets one, so together they stay under
 * it, and an org's SQL check runs in that much (triggers/sql-checker.ts).
 */
export function orgMemoryShare(config: Pick<Config, 'duckdbMemoryLimit' | 'orgDatabasesMaxOpen'>): { limit: string; bytes: number } {
  const mib = Math.floor(Math.max(MIN_ORG_MEMORY_BYTES, bytesOf(config.duckdbMemoryLimit) / config.orgDatabasesMaxOpen) / 2 ** 20);
  return { limit: `${mib}MiB`, bytes: mib * 2 ** 20 };
}

function orgDatabaseLimits(config: Config): OrgDatabaseLimits {
  return {
    maxOpen: config.orgDatabasesMaxOpen,
    memoryLimit: orgMemoryShare(config).limit,
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
