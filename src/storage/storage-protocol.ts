/** Messages between the service (storage-client.ts) and the storage process (storage-process.ts). */
import type { CommitReport } from '../events/compaction/compaction.js';
import type { JetStreamLogOptions } from '../events/log/jetstream-log.js';
import type { LayoutChange, SegmentLayout } from '../events/log/segments.js';
import type { AppendTarget } from '../db/sql.js';
import type { OrgDatabaseLimits } from './org-databases.js';
import type { Shard } from '../core/shard.js';
import type { WireCell, WireParams } from '../db/value-codec.js';
import type { MetricUpdate } from '../ops/metrics.js';

export interface StorageProcessData {
  /** DATA_DIR/orgs: one DuckDB file per org. */
  orgsDir: string;
  limits: OrgDatabaseLimits;
  /** Where the compactor keeps the log position every org has reached (checkpoint.ts). */
  checkpointFile: string;
  /** The orgs this process compacts (SHARD). */
  shard: Shard;
  /** Threads libuv's pool must have (threadpool.ts): the parent sets UV_THREADPOOL_SIZE, the process checks. */
  threadPoolSize: number;
  /** How the storage process's compactor reads the log; absent when it does not compact. With the
   *  embedded log, the segments as they were when the process was started (later changes follow as
   *  `log-changed` messages). */
  log?: { kind: 'jetstream'; natsUrl: string; options: Omit<JetStreamLogOptions, 'servers'> } | { kind: 'embedded'; layout: SegmentLayout[] };
}

/**
 * A call that waits for its reply. `db` names the org whose database it uses; `session` a connection
 * held across calls (Database.exclusive, transaction, untrusted).
 */
export type Call =
  /** `begin`: the session starts in a transaction (BEGIN sent with the open, not after it). */
  | { op: 'open'; db: string; untrusted?: boolean; begin?: boolean }
  /** `end`: COMMIT (ROLLBACK when it fails, and the failure answered) or ROLLBACK before the connection is given back. */
  | { op: 'release'; session: number; end?: 'commit' | 'rollback' }
  /** Like release, but an untrusted connection is closed rather than reused (an interrupt may still be pending on it). */
  | { op: 'abandon'; session: number }
  /** Answers the first page of rows (ReadPage); `read-more` the next ones, until `more` is false. */
  | { op: 'read'; session: number; sql: string; params: WireParams; maxRows: number }
  | { op: 'read-more'; session: number }
  | ({ op: 'all' | 'run'; sql: string; params: WireParams } & ({ db: string } | { session: number }))
  | { op: 'slugs' }
  | { op: 'drop'; slug: string }
  | { op: 'pool' }
  /** Orgs whose database cannot be opened, with the reason. */
  | { op: 'unavailable' }
  | { op: 'append-rows'; session: number; target: AppendTarget; rows: WireCell[][] }
  | { op: 'columns'; session: number; sql: string }
  | { op: 'compactor.start'; reportedSince: number }
  | { op: 'compactor.stop' }
  | { op: 'compactor.reload'; org: string }
  | { op: 'compactor.holds'; org: string; messageId: string }
  | { op: 'close' }
  /** Answered at once by the process's event loop, DuckDB untouched (health: the process is alive). */
  | { op: 'ping' };

/**
 * Rows cross the process boundary a page at a time: a 100,000-row result in one message took ~0.5 s to
 * deserialize on the service's event loop, holding every collect and lookup that long; a page of
 * READ_PAGE_ROWS takes milliseconds, and the service's other work runs between pages.
 */
export const READ_PAGE_ROWS = 2_000;

export interface ReadPage {
  /** Up to READ_PAGE_ROWS rows, as columns (Sql.read). */
  names: string[];
  columns: unknown[][];
  /** The query had more rows than `maxRows` (Sql.read). */
  truncated: boolean;
  /** More pages of this result wait in the storage process (`read-more`). */
  more: boolean;
}

export type ToStorage =
  | { type: 'init'; data: StorageProcessData }
  | { type: 'call'; id: number; call: Call }
  | { type: 'interrupt'; session: number }
  | { type: 'log-changed'; change: LayoutChange };

/** An error as it crosses: name and message, and what OrgUnavailable / OrgDeletedError carry. */
export interface WireError {
  name: string;
  message: string;
  slug?: string;
  reason?: string;
}

export type FromStorage =
  | { type: 'ready' }
  | { type: 'reply'; id: number; ok: true; value: unknown }
  | { type: 'reply'; id: number; ok: false; error: WireError }
  | { type: 'compacted'; report: CommitReport }
  | { type: 'progress'; seq: number; retainFromSeq: number }
  | ({ type: 'metric' } & MetricUpdate)
  | { type: 'log'; level: 'error'; details: object; message: string };

