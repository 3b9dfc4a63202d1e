/** A cursor over the embedded log; reads records with positional reads, waits on the append signal. */
import type { AppendSignal } from './append-signal.js';
import type { Frame } from './frame.js';
import { LogUnavailableError, type LogReader, type StoredRecord } from './types.js';

/** What a reader needs from the log (embedded-log.ts). */
export interface FrameSource {
  readonly signal: AppendSignal;
  /** Seq of the oldest record still stored (older ones were compacted and their segment deleted). */
  firstSeq(): number;
  /** Records stored so far (= head seq). */
  count(): number;
  isOpen(): boolean;
  readRecords(from: number, to: number): Promise<Frame[]>;
}

export class EmbeddedReader implements LogReader {
  private closed = false;

  constructor(
    private readonly source: FrameSource,
    /** Seq of the last record handed out. */
    private position: number,
  ) {}

  async read(max: number, waitMs: number): Promise<StoredRecord[]> {
    if (this.closed) throw new Error('log reader is closed');
    // A reader opened below the oldest segment (a lost checkpoint) starts at the oldest record kept.
    this.position = Math.max(this.position, this.source.firstSeq() - 1);
    const seen = this.source.signal.current;
    if (this.position >= this.source.count()) await this.source.signal.wait(seen, waitMs);
    if (!this.source.isOpen()) throw new LogUnavailableError('embedded log is closed');
    const last = Math.min(this.source.count(), this.position + Math.max(0, max));
    if (last <= this.position) return [];
    const first = this.position + 1;
    const frames = await this.source.readRecords(first, last);
    this.position = last;
    return frames.map((frame, i) => ({ seq: first + i, payload: frame.payload }));
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}
