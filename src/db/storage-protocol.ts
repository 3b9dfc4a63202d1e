/** Messages between the main thread (storage-client.ts) and the storage worker (storage-worker.ts). */
import type { CommitReport } from '../compaction/compactor.js';
import type { FrameLayout } from '../log/embedded-tail.js';
import type { AppendTarget } from './sql.js';
import type { WireCell, WireParams } from './value-codec.js';

export interface StorageWorkerData {
  dbPath: string;
  memoryLimit: string;
  /** How the worker's compactor reads the log; absent when this process does not compact. */
  log?: { kind: 'jetstream'; natsUrl: string } | { kind: 'embedded'; layout: FrameLayout };
}

/** A call that waits for its reply. `session` names a held connection (Database.exclusive). */
export type Call =
  | { op: 'open'; untrusted?: boolean }
  | { op: 'release'; session: number }
  | { op: 'abandon'; session: number }
  | { op: 'read'; session: number; sql: string; params: WireParams; maxRows: number }
  | { op: 'all' | 'run'; sql: string; params: WireParams; session?: number }
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
  | { type: 'log-appended'; offset: number; end: number };

export type MetricUpdate =
  | { metric: 'compactionBatchSeconds'; seconds: number }
  | { metric: 'eventsQuarantined'; code: string }
  | { metric: 'duplicatesDropped'; count: number }
  | { metric: 'compactionLag'; records: number };

export type FromWorker =
  | { type: 'ready' }
  | { type: 'reply'; id: number; ok: true; value: unknown }
  | { type: 'reply'; id: number; ok: false; error: { name: string; message: string } }
  | { type: 'compacted'; report: CommitReport }
  | { type: 'progress'; seq: number }
  | ({ type: 'metric' } & MetricUpdate)
  | { type: 'log'; level: 'error'; details: object; message: string };

