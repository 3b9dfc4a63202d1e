/** A cursor over the embedded log; reads records with positional reads, waits on the append signal. */
import type { AppendSignal } from './append-signal.js';
import { LogUnavailableError, type LogReader, type StoredRecord } from './types.js';

/** What a reader needs from the log (embedded-log.ts). */
export interface FrameSource {
  readonly signal: AppendSignal;
  /** Seq of the first record stored after `seq`: older ones may be compacted and their segment deleted,
   *  and positions skipped where numbering resumed above a lost tail hold none (segments.ts). */
  nextSeq(seq: number): number;
  /** The head seq: no record is stored above it. */
  count(): number;
  isOpen(): boolean;
  readRecords(from: number, to: number): Promise<StoredRecord[]>;
}

export class EmbeddedReader implements LogReader {
  private closed = false;

  constructor(
    private readonly source: FrameSource,
    /** Every position up to here is read. */
    private at: number,
  ) {}

  get position(): number {
    return this.at;
  }

  async read(max: number, waitMs: number): Promise<StoredRecord[]> {
    if (this.closed) throw new Error('log reader is closed');
    const seen = this.source.signal.current;
    if (this.source.nextSeq(this.at) > this.source.count()) await this.source.signal.wait(seen, waitMs);
    if (!this.source.isOpen()) throw new LogUnavailableError('embedded log is closed');
    // A reader opened below the oldest segment (a lost checkpoint) starts at the oldest record kept.
    const first = this.source.nextSeq(this.at);
    const head = this.source.count();
    if (first > head) {
      // Nothing stored after this position up to the head: the positions between hold no record.
      this.at = Math.max(this.at, head);
      return [];
    }
    const last = Math.min(head, first - 1 + Math.max(0, max));
    if (last < first) return [];
    const records = await this.source.readRecords(first, last);
    this.at = last;
    return records;
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}
