/** Messages between the main thread (storage-client.ts) and the storage worker (storage-worker.ts). */
import type { CommitReport } from '../compaction/compactor.js';
import type { JetStreamLogOptions } from '../log/jetstream-log.js';
import type { LayoutChange, SegmentLayout } from '../log/segments.js';
import type { AppendTarget } from '../db/sql.js';
import type { OrgDatabaseLimits } from './org-databases.js';
import type { Shard } from './shard.js';
import type { WireCell, WireParams } from '../db/value-codec.js';

export interface StorageWorkerData {
  /** DATA_DIR/orgs: one DuckDB file per org. */
  orgsDir: string;
  limits: OrgDatabaseLimits;
  /** Where the compactor keeps the log position every org has reached (checkpoint.ts). */
  checkpointFile: string;
  /** The orgs this process compacts (SHARD). */
  shard: Shard;
  /** How the worker's compactor reads the log; absent when this process does not compact. */
  log?: { kind: 'jetstream'; natsUrl: string; options: Omit<JetStreamLogOptions, 'servers'> } | { kind: 'embedded'; layout: SegmentLayout[] };
}

/**
 * A call that waits for its reply. `db` names the org whose database it uses; `session` a connection
 * held across calls (Database.exclusive, transaction, untrusted).
 */
export type Call =
  | { op: 'open'; db: string; untrusted?: boolean }
  | { op: 'release'; session: number }
  | { op: 'abandon'; session: number }
  | { op: 'read'; session: number; sql: string; params: WireParams; maxRows: number }
  | ({ op: 'all' | 'run'; sql: string; params: WireParams } & ({ db: string } | { session: number }))
  | { op: 'slugs' }
  | { op: 'drop'; slug: string }
  | { op: 'pool' }
  | { op: 'append'; session: number; target: AppendTarget; rows: WireCell[][] }
  | { op: 'columns'; session: number; sql: string }
  | { op: 'compactor.start' }
  | { op: 'compactor.stop' }
  | { op: 'close' }
  /** Answered at once by the thread's event loop, DuckDB untouched (health: the thread is alive). */
  | { op: 'ping' };

export type ToWorker =
  | { type: 'call'; id: number; call: Call }
  | { type: 'interrupt'; session: number }
  | { type: 'log-changed'; change: LayoutChange };

export type MetricUpdate =
  | { metric: 'compactionBatchSeconds'; seconds: number }
  | { metric: 'eventsQuarantined'; code: string }
  | { metric: 'duplicatesDropped'; count: number }
  | { metric: 'compactionLag'; records: number }
  | { metric: 'compactionLagSeconds'; seconds: number };

export type FromWorker =
  | { type: 'ready' }
  | { type: 'reply'; id: number; ok: true; value: unknown }
  | { type: 'reply'; id: number; ok: false; error: { name: string; message: string } }
  | { type: 'compacted'; report: CommitReport }
  | { type: 'progress'; seq: number }
  | ({ type: 'metric' } & MetricUpdate)
  | { type: 'log'; level: 'error'; details: object; message: string };

