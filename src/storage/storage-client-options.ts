/**
 * What the storage client (storage-client.ts) is started with and tells the service, and how long it
 * waits before starting a new process after one ended.
 */
import type { ChildProcessOptions } from '../core/spawn-process.js';
import type { CommitReport } from '../events/compaction/compaction.js';
import type { SegmentLayout } from '../events/log/segments.js';
import type { MetricUpdate } from '../ops/metrics.js';
import type { StorageProcessData } from './storage-protocol.js';

export interface StorageEvents {
  /** A compaction commit wrote events (before its progress is reported). */
  onCompacted(report: CommitReport): void;
  onMetric(update: MetricUpdate): void;
  onError(details: object, message: string): void;
  /**
   * A new storage process took over from one that ended: whatever the old one held is gone.
   * `queryKilled`: it was killed to stop an org's query.
   */
  onRestarted(reason: string, queryKilled: boolean): void;
}

export interface StorageProcessOptions {
  /** What each new process is started with; `layout` is the embedded log as it is at that moment. */
  data: Omit<StorageProcessData, 'log'> & { log?: Exclude<StorageProcessData['log'], { kind: 'embedded' }> | { kind: 'embedded' } };
  layout?: () => SegmentLayout[];
  process: ChildProcessOptions;
  events: StorageEvents;
}

/** A process that ran this long before it ended is restarted at once; one that died sooner, after a pause. */
const STABLE_RUN_MS = 30_000;
const FIRST_RESTART_PAUSE_MS = 250;
const MAX_RESTART_PAUSE_MS = 15_000;

/** The pause before the next start: none after a long run, else doubling from the first to the maximum. */
export function restartPause(ranMs: number, previousMs: number): number {
  return ranMs >= STABLE_RUN_MS ? 0 : Math.min(MAX_RESTART_PAUSE_MS, Math.max(FIRST_RESTART_PAUSE_MS, previousMs * 2));
}
