/**
 * The embedded log: append-only segment files of frames (frame.ts, segments.ts), for single-node installs
 * without NATS. Durability: each segment is opened O_DSYNC, so `write` resolves only once the frame is on
 * stable storage (one syscall per group commit instead of write + fdatasync: half the thread-pool round
 * trips). A write that would take the last segment past `segmentBytes` starts a new one, so the log is
 * deleted a segment at a time once compacted (`release`). A kill -9 can leave at most a half-written last
 * frame of the last segment; `open` finds it by length and checksum and cuts it off, so what was
 * acknowledged survives and what was not leaves no trace. One process owns the directory (data-dir-lock.ts).
 * A log that ends below the high-water mark (its tail cut, the directory removed, an older copy put back)
 * gets a new segment starting above the mark at `open`: positions never go backwards (checkpoint.ts).
 */
import { mkdir, open, unlink } from 'node:fs/promises';
import { AppendSignal } from './append-signal.js';
import { chainSource, EmbeddedReader, type FrameSource } from './embedded-reader.js';
import { encodeFrame } from './frame.js';
import { writeFully } from './frame-file.js';
import { RecentIds } from './recent-ids.js';
import { type LayoutChange, lastSeqOf, SegmentChain, type SegmentLayout, segmentFile } from './segments.js';
import { type LogBehind, LogUnavailableError, type LogBackend, type LogHealth, type LogReader, type WriteResult } from './types.js';
import { syncDirectory } from '../../core/sync-directory.js';
import { dropIdsBeyond, type OpenedSegment, openSegment, type OwnedSegment, rememberRecentIds, segmentsIn, type TornTail, WRITE_FLAGS } from './embedded-segments.js';
import { removeSegmentIndex, writeSegmentIndex } from './segment-index.js';

/** Records whose ids are remembered for dedupe; a retry arrives within seconds, far fewer records back. */
const DEDUPE_WINDOW = 100_000;
/** What `health` writes (and cuts off again) past the last frame while the log is unwritable: one page. */
const PROBE_WRITE_BYTES = 4096;

export interface EmbeddedLogOptions {
  /** A segment is closed and a new one started once a write would take it past this size (LOG_SEGMENT_MB). */
  segmentBytes?: number;
  /** How long a closed segment whose records are all compacted is kept (LOG_RETENTION_HOURS); 0: not at all. */
  retentionMs?: number;
  /** Told when `open` cuts a torn tail off; the log itself stays silent (no console noise in tests). */
  onTornTail?: (tail: TornTail) => void;
  /** No record at or below this position may be written (the high-water mark, storage/checkpoint.ts),
   *  and the checkpoint, for the report. Default: 0. */
  highWater?: number;
  compactedSeq?: number;
  /** Told when the log ended below `highWater` and numbering resumed above it. */
  onBehind?: (behind: LogBehind) => void;
}

export class EmbeddedLog implements LogBackend {
  readonly kind = 'embedded';
  /** One directory, read whole by the one process that owns DATA_DIR. */
  readonly perOrg = false;
  private readonly signal = new AppendSignal();
  private closing = false;
  private closed = false;
  private readonly layoutListeners: Array<(change: LayoutChange) => void> = [];
  /** Tail of the write chain: one write at a time, in call order. */
  private queue: Promise<unknown> = Promise.resolve();
  /** Why the last durable write failed (ENOSPC, EIO, …); cleared by the next write that succeeds. */
  private writeFailure: string | undefined;
  private readonly segmentBytes: number;
  private readonly retentionMs: number;

  /** What readers see of the log (embedded-reader.ts). */
  private readonly source: FrameSource;

  private constructor(
    readonly directory: string,
    private readonly chain: SegmentChain,
    private readonly recent: RecentIds,
    options: EmbeddedLogOptions,
  ) {
    this.source = chainSource(chain, this.signal, () => !this.closed);
    this.segmentBytes = options.segmentBytes ?? Number.POSITIVE_INFINITY;
    this.retentionMs = options.retentionMs ?? Number.POSITIVE_INFINITY;
  }

  static async open(dir: string, options: EmbeddedLogOptions = {}): Promise<EmbeddedLog> {
    await mkdir(dir, { recursive: true });
    const highWater = options.highWater ?? 0;
    const firstSeqs = await segmentsIn(dir);
    const opened: OpenedSegment[] = [];
    const segments: OwnedSegment[] = [];
    const recent = new RecentIds(DEDUPE_WINDOW);
    const add = ({ segment, ids }: OpenedSegment, resumed: boolean) => {
      opened.push({ segment: resumed ? { ...segment, resumed } : segment, ids });
      segments.push(opened.at(-1)!.segment);
      dropIdsBeyond(opened, DEDUPE_WINDOW);
    };
    try {
      for (const [i, firstSeq] of firstSeqs.entries()) {
        const previous = segments.at(-1);
        const expected = previous ? lastSeqOf(previous) + 1 : firstSeq;
        // A segment may start above the one before only where numbering resumed above the mark (below).
        if (firstSeq < expected || (firstSeq > expected && firstSeq - 1 > highWater)) {
          throw new Error(`embedded log: ${segmentFile(dir, firstSeq)} starts at record ${firstSeq} but the segment before it ends at ${expected - 1}`);
        }
        add(await openSegment(dir, firstSeq, i === firstSeqs.length - 1, options), previous !== undefined && firstSeq > expected);
      }
      const last = segments.at(-1);
      const headSeq = last ? lastSeqOf(last) : 0;
      if (!last || headSeq < highWater) {
        if (last) {
          last.closedAt = Date.now();
          // Sealed now: the next open reads its offsets instead of scanning it.
          await writeSegmentIndex(last.file, last.firstSeq, last.offsets, last.end);
        }
        const firstSeq = Math.max(headSeq, highWater) + 1;
        add(await openSegment(dir, firstSeq, true, options), firstSeq > 1);
        if (headSeq < highWater) options.onBehind?.({ headSeq, highWater, compactedSeq: options.compactedSeq ?? 0 });
      }
      await rememberRecentIds(opened, recent, DEDUPE_WINDOW);
    } catch (error) {
      await Promise.all(segments.map(async (segment) => (await segment.handle).close()));
      throw error;
    }
    return new EmbeddedLog(dir, new SegmentChain(segments, () => Promise.reject(new Error('every segment is open'))), recent, options);
  }

  write(recordId: string, payload: Uint8Array): Promise<WriteResult> {
    if (this.closing) return Promise.reject(new LogUnavailableError('embedded log is closed'));
    const result = this.queue.then(() => this.writeFrame(recordId, payload));
    this.queue = result.catch(() => {});
    return result;
  }

  /** Every later change of the segments reported to `listener` (the storage process tails the log
   *  this way: embedded-tail.ts), and the segments as they are now. */
  share(listener: (change: LayoutChange) => void): SegmentLayout[] {
    this.layoutListeners.push(listener);
    return this.layout();
  }

  /** The segments as they are now; with `share`'s changes after it, the whole log (this thread reports both). */
  layout(): SegmentLayout[] {
    return this.chain.segments.map(({ file, firstSeq, offsets, end, resumed }) => ({ file, firstSeq, offsets: [...offsets], end, ...(resumed ? { resumed } : {}) }));
  }

  openReader(afterSeq: number): Promise<LogReader> {
    return Promise.resolve(new EmbeddedReader(this.source, afterSeq));
  }

  headSeq(): Promise<number> {
    return Promise.resolve(this.chain.headSeq);
  }

  isAvailable(): boolean {
    return !this.closing;
  }

  /** Bytes of durable frames in the live segments. */
  get bytes(): number {
    return this.chain.segments.reduce((sum, segment) => sum + segment.end, 0);
  }

  get segmentCount(): number {
    return this.chain.segments.length;
  }

  /**
   * Deletes the oldest segments whose records all have seq <= `compactedSeq` and that were closed at
   * least `retentionMs` before `now`; never the segment being written. Returns how many were deleted.
   */
  async release(compactedSeq: number, now = Date.now()): Promise<number> {
    if (this.closing) return 0;
    const segments = this.chain.segments as OwnedSegment[];
    let count = 0;
    while (count < segments.length - 1 && lastSeqOf(segments[count]!) <= compactedSeq && now - segments[count]!.closedAt >= this.retentionMs) count++;
    if (count === 0) return 0;
    const keptFrom = segments[count]!.firstSeq;
    for (const listener of this.layoutListeners) listener({ kind: 'released', firstSeq: keptFrom });
    const released = await this.chain.release(keptFrom);
    // Deleted oldest first: should a crash interrupt this, the segments left still follow each other.
    for (const segment of released) {
      await removeSegmentIndex(segment.file);
      await unlink(segment.file);
    }
    return released.length;
  }

  /**
   * Unwritable after a failed write until a write succeeds. While unwritable, a probe write (zeros past
   * the last frame, cut off again) asks the disk directly: a load balancer that stops sending events to
   * a not-ready instance must not keep it not-ready for good once space is freed. Zeros never read as a
   * frame, so should a crash leave them behind, `open` cuts them off like any torn tail.
   */
  async health(): Promise<LogHealth> {
    if (this.closing) return { ok: false, reason: 'embedded log is closed', fatal: true };
    if (this.writeFailure === undefined) return { ok: true };
    const attempt = this.queue.then(() => this.probeWrite());
    this.queue = attempt.catch(() => {});
    await attempt;
    if (this.writeFailure === undefined) return { ok: true };
    return { ok: false, reason: `embedded log cannot write: ${this.writeFailure}`, fatal: false };
  }

  /** Lets queued writes finish, then closes the files; waiting readers wake and see the log closed. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    await this.queue;
    this.closed = true;
    await this.chain.close();
    this.signal.notify();
  }

  private get current(): OwnedSegment {
    return this.chain.last as OwnedSegment;
  }

  private async writeFrame(recordId: string, payload: Uint8Array): Promise<WriteResult> {
    const known = this.recent.get(recordId);
    if (known !== undefined) return { seq: known, duplicate: true };
    const frame = encodeFrame(recordId, payload);
    let segment = this.current;
    try {
      if (segment.end > 0 && segment.end + frame.length > this.segmentBytes) segment = await this.startSegment();
      await writeFully(await segment.handle, segment.end, frame);
    } catch (error) {
      // Best effort: leave no unacknowledged frame behind (the next write would overwrite it anyway).
      await (await segment.handle).truncate(segment.end).catch(() => {});
      this.writeFailure = describeIoError(error);
      throw new LogUnavailableError(`embedded log write failed: ${this.writeFailure}`, { cause: error });
    }
    this.writeFailure = undefined;
    const offset = segment.end;
    segment.end = offset + frame.length;
    segment.offsets.push(offset);
    const seq = lastSeqOf(segment);
    this.recent.add(recordId, seq);
    this.signal.notify();
    for (const listener of this.layoutListeners) listener({ kind: 'appended', file: segment.file, firstSeq: segment.firstSeq, offsets: [offset], end: segment.end });
    return { seq, duplicate: false };
  }

  /** Closes the current segment and starts the next, named after the seq its first record gets. */
  private async startSegment(): Promise<OwnedSegment> {
    const firstSeq = this.chain.headSeq + 1;
    const file = segmentFile(this.directory, firstSeq);
    const handle = await open(file, WRITE_FLAGS, 0o644);
    try {
      await syncDirectory(this.directory);
    } catch (error) {
      await handle.close();
      throw error;
    }
    const sealed = this.current;
    sealed.closedAt = Date.now();
    // The next open reads its offsets from this instead of scanning it (segment-index.ts).
    await writeSegmentIndex(sealed.file, sealed.firstSeq, sealed.offsets, sealed.end);
    const segment: OwnedSegment = { file, firstSeq, offsets: [], end: 0, handle: Promise.resolve(handle), closedAt: Number.POSITIVE_INFINITY };
    this.chain.segments.push(segment);
    return segment;
  }

  /** Runs in the write chain, so no append is between the probe bytes and their removal. */
  private async probeWrite(): Promise<void> {
    if (this.writeFailure === undefined || this.closing) return;
    const segment = this.current;
    const handle = await segment.handle;
    try {
      await writeFully(handle, segment.end, Buffer.alloc(PROBE_WRITE_BYTES));
      this.writeFailure = undefined;
    } catch (error) {
      this.writeFailure = describeIoError(error);
    } finally {
      await handle.truncate(segment.end).catch(() => {});
    }
  }
}

/** "ENOSPC (no space left on device)": the errno code first, as operators search for it. */
function describeIoError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return code ? `${code} (${message})` : message;
}

