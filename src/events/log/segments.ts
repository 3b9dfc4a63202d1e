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
import type { StoredRecord } from './types.js';

/** Where one segment's durable frames are: what the owner hands a tailing thread (plain data). */
export interface SegmentLayout {
  file: string;
  /** Seq of the segment's first record. */
  firstSeq: number;
  /** Byte offset of each record's frame; index = seq - firstSeq. */
  offsets: number[];
  /** End of the last durable frame. */
  end: number;
}

/** A change to the layout that a tailing thread follows: a durable append, or old segments deleted. */
export type LayoutChange =
  | { kind: 'appended'; file: string; firstSeq: number; offset: number; end: number }
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

/** A segment as read by one thread: its layout and, once needed, an open handle. */
export interface OpenSegment extends SegmentLayout {
  handle?: Promise<FileHandle>;
}

/** The live segments, oldest first; never empty. */
export class SegmentChain {
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

  /** Records `from`..`to` (inclusive); positions without one (deleted, skipped) are left out. One read per segment. */
  async read(from: number, to: number): Promise<StoredRecord[]> {
    const records: StoredRecord[] = [];
    for (const segment of this.segments) {
      const first = Math.max(from, segment.firstSeq);
      const last = Math.min(to, lastSeqOf(segment));
      if (first > last) continue;
      segment.handle ??= this.openFile(segment.file);
      const handle = await segment.handle;
      const frames = await readRecordFrames(handle, segment.offsets, segment.end, first - segment.firstSeq + 1, last - segment.firstSeq + 1);
      records.push(...frames.map((frame, i) => ({ seq: first + i, payload: frame.payload })));
    }
    return records;
  }

  /** A tailing thread's view of an append: a record at `offset` of the segment starting at `firstSeq`. */
  appended(change: Extract<LayoutChange, { kind: 'appended' }>): void {
    if (this.last.firstSeq !== change.firstSeq) this.segments.push({ file: change.file, firstSeq: change.firstSeq, offsets: [], end: 0 });
    this.last.offsets.push(change.offset);
    this.last.end = change.end;
  }

  /** Forgets the segments before the one starting at `firstSeq` and closes their handles. */
  async release(firstSeq: number): Promise<OpenSegment[]> {
    const count = this.segments.findIndex((segment) => segment.firstSeq >= firstSeq);
    const released = this.segments.splice(0, count === -1 ? this.segments.length - 1 : count);
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
