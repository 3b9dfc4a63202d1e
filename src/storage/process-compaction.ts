/**
 * The storage process's compactor seen as a Compaction: started, stopped and reloaded by calls, its
 * progress reported by the process.
 */
import type { CommitReport, Compaction } from '../events/compaction/compaction.js';
import { SeqWaiters } from '../events/compaction/seq-waiters.js';
import { StorageUnavailable } from '../core/unavailable.js';
import type { Call } from './storage-protocol.js';

/** What it needs of the storage client (storage-client.ts). */
export interface CompactionCalls {
  /** Compaction was started (and so runs again in every new process) or stopped. */
  setCompacting(on: boolean): void;
  call<T = unknown>(call: Call): Promise<T>;
}

export class ProcessCompaction implements Compaction {
  private cursor = 0;
  private retainFrom = 0;
  private readonly waiters = new SeqWaiters();
  /**
   * The commit time (µs) of the last report received: a new process tells again the commits from then on,
   * which its predecessor may have made without its report reaching here (compactor.ts, report-again.ts).
   * Before any report, this process's start: the first storage process had committed nothing before.
   */
  private reportedSince = Date.now() * 1000;

  constructor(private readonly storage: CompactionCalls) {}

  get compactedSeq(): number {
    return this.cursor;
  }

  get retainFromSeq(): number {
    return this.retainFrom;
  }

  async start(): Promise<void> {
    this.storage.setCompacting(true);
    const { seq, retainFromSeq } = await this.storage.call<{ seq: number; retainFromSeq: number }>({ op: 'compactor.start', reportedSince: this.reportedSince });
    this.progress(seq, retainFromSeq);
  }

  async stop(): Promise<void> {
    this.storage.setCompacting(false);
    await this.storage.call({ op: 'compactor.stop' }).catch((error: unknown) => {
      // A process that is gone compacts nothing: stopped either way.
      if (!(error instanceof StorageUnavailable)) throw error;
    });
  }

  whenCompacted(seq: number): Promise<void> {
    return this.waiters.wait(seq, this.cursor);
  }

  holds(org: string, messageId: string): Promise<boolean> {
    return this.storage.call<boolean>({ op: 'compactor.holds', org, messageId });
  }

  async reload(org: string): Promise<void> {
    await this.storage.call({ op: 'compactor.reload', org });
  }

  /** A report reached the service (told before its listeners are). */
  reported(report: CommitReport): void {
    this.reportedSince = Math.max(this.reportedSince, report.committedAt);
  }

  progress(seq: number, retainFromSeq: number): void {
    this.cursor = Math.max(this.cursor, seq);
    // Not max: a held org that recovers replays from the checkpoint, which holds it where it was.
    this.retainFrom = retainFromSeq;
    this.waiters.reached(this.cursor);
  }
}
