/**
 * The embedded log's segments: files `<first seq, 20 digits>.log` in the log directory, each holding the
 * frames of consecutive records. Only the last segment is written; older ones are deleted whole once
 * every record in them is compacted (embedded-log.ts `release`). A segment may start above the end of
 * the one before it: where the log resumed numbering above the high-water mark after losing records
 * (embedded-log.ts `open`); the positions between hold no record. Both the thread that owns the log and
 * the storage worker that tails it (embedded-tail.ts) read records through a `SegmentChain`.
 */
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { readRecordFrames } from './frame-file.js';
import type { EmptyRange, StoredRecord } from './types.js';

/** Where one segment's durable frames are: what the owner hands a tailing thread (plain data). */
export interface SegmentLayout {
  file: string;
  /** Seq of the segment's first record. */
  firstSeq: number;
  /** Byte offset of each record's frame; index = seq - firstSeq. */
  offsets: number[];
  /** End of the last durable frame. */
  end: number;
  /** Numbering resumed here above a lost tail (embedded-log.ts `open`, reported then): the positions
   *  between the segment before (or 0) and this one never held a record this log can give. */
  resumed?: boolean;
}

/** A change to the layout that a tailing thread follows: durable appends (the frames at `offsets`, in order,
 *  of the segment starting at `firstSeq`, ending at `end`), or old segments deleted. */
export type LayoutChange =
  | { kind: 'appended'; file: string; firstSeq: number; offsets: number[]; end: number }
  | { kind: 'released'; firstSeq: number };

const NAME = /^(\d{20})\.log$/;

export function segmentFile(dir: string, firstSeq: number): string {
  return join(dir, `${String(firstSeq).padStart(20, '0')}.log`);
}

/** The first seq a directory entry names, or undefined when it is not a segment. */
export function segmentFirstSeq(name: string): number | undefined {
  const match = NAME.exec(name);
  return match ? Number(match[1]) : undefined;
}

export function lastSeqOf(segment: SegmentLayout): number {
  return segment.firstSeq + segment.offsets.length - 1;
}

/** A read found fewer records than its range holds (a segment went while it was read): nothing of it is returned. */
export class IncompleteReadError extends Error {
  override name = 'IncompleteReadError';
}

/** A segment as read by one thread: its layout and, once needed, an open handle. */
export interface OpenSegment extends SegmentLayout {
  handle?: Promise<FileHandle>;
}

/** The live segments, oldest first; never empty. */
export class SegmentChain {
  /** The last seq of the segments `release` deleted (0: none yet). */
  private releasedThrough = 0;

  constructor(
    readonly segments: OpenSegment[],
    /** Opens a segment's file for reading, the first time a record of it is read. */
    private readonly openFile: (file: string) => Promise<FileHandle>,
  ) {}

  /** Seq of the newest record (0 when the log is empty). */
  get headSeq(): number {
    return lastSeqOf(this.last);
  }

  get last(): OpenSegment {
    return this.segments[this.segments.length - 1]!;
  }

  /** Seq of the first record stored after `seq` (past the head when there is none). */
  nextSeq(seq: number): number {
    const segment = this.segments.find((s) => lastSeqOf(s) > seq);
    return segment ? Math.max(seq + 1, segment.firstSeq) : Math.max(seq, this.headSeq) + 1;
  }

  /** The last seq of the run of records that holds `seq`: where the next position holding none is. */
  runEnd(seq: number): number {
    const index = this.segments.findIndex((s) => s.firstSeq <= seq && lastSeqOf(s) >= seq);
    if (index === -1) return seq;
    let end = lastSeqOf(this.segments[index]!);
    for (const next of this.segments.slice(index + 1)) {
      if (next.firstSeq !== end + 1) break;
      end = lastSeqOf(next);
    }
    return end;
  }

  /**
   * Every record `from`..`to` (inclusive), a range within one run (`runEnd`), or IncompleteReadError.
   * The segments are taken before the first await: a `release` while the read waits on the disk takes
   * them out of `this.segments`, and a loop over that array would then step over live ones.
   */
  async read(from: number, to: number): Promise<StoredRecord[]> {
    const covering = this.segments.filter((s) => lastSeqOf(s) >= from && s.firstSeq <= to);
    const records: StoredRecord[] = [];
    for (const segment of covering) {
      const first = Math.max(from, segment.firstSeq);
      const last = Math.min(to, lastSeqOf(segment));
      segment.handle ??= this.openFile(segment.file);
      const handle = await segment.handle;
      const frames = await readRecordFrames(handle, segment.offsets, segment.end, first - segment.firstSeq + 1, last - segment.firstSeq + 1);
      if (frames.length !== last - first + 1) throw new IncompleteReadError(`read ${frames.length} records of ${first}..${last} from ${segment.file}`);
      records.push(...frames.map((frame, i) => ({ seq: first + i, payload: frame.payload })));
    }
    if (records.length !== to - from + 1 || records[0]?.seq !== from) {
      throw new IncompleteReadError(`read ${records.length} records of ${from}..${to}: part of the range is in no segment`);
    }
    return records;
  }

  /** Why positions `from`..`to`, which no kept segment holds, hold no record (see EmptyRange). */
  describeEmpty(from: number, to: number): EmptyRange[] {
    const ranges: EmptyRange[] = [];
    const add = (a: number, b: number, kind: EmptyRange['kind']) => {
      if (a <= b) ranges.push({ from: a, to: b, kind });
    };
    // Released in this run, then below the oldest kept segment (released in an earlier run, unless
    // numbering resumed there), then between segments (only where numbering resumed).
    const oldest = this.segments[0]!;
    add(from, Math.min(to, this.releasedThrough), 'released');
    add(Math.max(from, this.releasedThrough + 1), Math.min(to, oldest.firstSeq - 1), oldest.resumed ? 'gap' : 'released');
    add(Math.max(from, oldest.firstSeq), to, 'gap');
    return ranges;
  }

  /** A tailing thread's view of appends: records at `offsets` of the segment starting at `firstSeq`. */
  appended(change: Extract<LayoutChange, { kind: 'appended' }>): void {
    if (this.last.firstSeq !== change.firstSeq) this.segments.push({ file: change.file, firstSeq: change.firstSeq, offsets: [], end: 0 });
    for (const offset of change.offsets) this.last.offsets.push(offset);
    this.last.end = change.end;
  }

  /** Forgets the segments before the one starting at `firstSeq` and closes their handles (once reads on them end). */
  async release(firstSeq: number): Promise<OpenSegment[]> {
    const count = this.segments.findIndex((segment) => segment.firstSeq >= firstSeq);
    const released = this.segments.splice(0, count === -1 ? this.segments.length - 1 : count);
    for (const segment of released) this.releasedThrough = Math.max(this.releasedThrough, lastSeqOf(segment));
    await Promise.all(released.map(closeSegment));
    return released;
  }

  async close(): Promise<void> {
    await Promise.all(this.segments.map(closeSegment));
  }
}

async function closeSegment(segment: OpenSegment): Promise<void> {
  const handle = await segment.handle?.catch(() => undefined);
  await handle?.close();
}
