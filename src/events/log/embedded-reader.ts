/** A cursor over the embedded log; reads records with positional reads, waits on the append signal. */
import type { AppendSignal } from './append-signal.js';
import type { SegmentChain } from './segments.js';
import { type EmptyRange, LogUnavailableError, type LogReader, type StoredRecord } from './types.js';

/** What a reader needs from the log (embedded-log.ts). */
export interface FrameSource {
  readonly signal: AppendSignal;
  /** Seq of the first record stored after `seq`: older ones may be compacted and their segment deleted,
   *  and positions skipped where numbering resumed above a lost tail hold none (segments.ts). */
  nextSeq(seq: number): number;
  /** The last seq of the run of consecutive records that holds `seq` (segments.ts `runEnd`). */
  runEnd(seq: number): number;
  /** Why positions that no segment holds hold no record (segments.ts `describeEmpty`). */
  describeEmpty(from: number, to: number): EmptyRange[];
  /** The head seq: no record is stored above it. */
  count(): number;
  isOpen(): boolean;
  /** Every record of a range within one run, or a rejection: never part of it. */
  readRecords(from: number, to: number): Promise<StoredRecord[]>;
}

/** The source of a thread that reads `chain` (the owner's, or a tailing worker's), open while `isOpen`. */
export function chainSource(chain: SegmentChain, signal: AppendSignal, isOpen: () => boolean): FrameSource {
  return {
    signal,
    nextSeq: (seq) => chain.nextSeq(seq),
    runEnd: (seq) => chain.runEnd(seq),
    describeEmpty: (from, to) => chain.describeEmpty(from, to),
    count: () => chain.headSeq,
    isOpen,
    readRecords: (from, to) => (isOpen() ? chain.read(from, to) : Promise.reject(new LogUnavailableError('embedded log is closed'))),
  };
}

export class EmbeddedReader implements LogReader {
  private closed = false;
  private passed: EmptyRange[] = [];

  constructor(
    private readonly source: FrameSource,
    /** Every position up to here is read. */
    private at: number,
  ) {}

  get position(): number {
    return this.at;
  }

  get skipped(): readonly EmptyRange[] {
    return this.passed;
  }

  /**
   * The next records of one run (a read never spans positions that hold none), after saying in `skipped`
   * why the positions before them hold none. The position moves only past what was returned or skipped.
   */
  async read(max: number, waitMs: number): Promise<StoredRecord[]> {
    if (this.closed) throw new Error('log reader is closed');
    this.passed = [];
    if (max <= 0) return [];
    const seen = this.source.signal.current;
    if (this.source.nextSeq(this.at) > this.source.count()) await this.source.signal.wait(seen, waitMs);
    if (!this.source.isOpen()) throw new LogUnavailableError('embedded log is closed');
    const first = this.source.nextSeq(this.at);
    const head = this.source.count();
    // Positions after this one that hold no record: released segments below the oldest kept (a reader
    // opened below it, or one a release overtook), or where numbering resumed above a lost tail.
    const empty = this.source.describeEmpty(this.at + 1, Math.min(first, head + 1) - 1);
    if (first > head) {
      this.skip(empty);
      return [];
    }
    const last = Math.min(head, first - 1 + max, this.source.runEnd(first));
    const records = await this.source.readRecords(first, last);
    this.skip(empty);
    this.at = last;
    return records;
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }

  private skip(empty: EmptyRange[]): void {
    this.passed = empty;
    this.at = Math.max(this.at, ...empty.map((range) => range.to));
  }
}
