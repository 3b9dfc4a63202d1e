/**
 * The storage process's compactor seen as a Compaction: started, stopped and reloaded by calls, its
 * progress reported by the process.
 */
import type { Compaction } from '../events/compaction/compaction.js';
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

  constructor(private readonly storage: CompactionCalls) {}

  get compactedSeq(): number {
    return this.cursor;
  }

  get retainFromSeq(): number {
    return this.retainFrom;
  }

  async start(): Promise<void> {
    this.storage.setCompacting(true);
    const { seq, retainFromSeq } = await this.storage.call<{ seq: number; retainFromSeq: number }>({ op: 'compactor.start' });
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

  progress(seq: number, retainFromSeq: number): void {
    this.cursor = Math.max(this.cursor, seq);
    // Not max: a held org that recovers replays from the checkpoint, which holds it where it was.
    this.retainFrom = retainFromSeq;
    this.waiters.reached(this.cursor);
  }
}
