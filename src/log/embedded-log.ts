/**
 * The embedded log: one append-only file of frames (frame.ts), for single-node installs without NATS.
 * Durability: the file is opened O_DSYNC, so `write` resolves only once the frame is on stable storage
 * (one syscall per group commit instead of write + fdatasync: half the thread-pool round trips).
 * A kill -9 can leave at most a half-written last frame; `open` finds it by length and checksum and cuts it off, so what was acknowledged survives and
 * what was not leaves no trace. One process owns the file: nothing stops a second one from opening it.
 */
import { constants } from 'node:fs';
import { mkdir, open, stat, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { AppendSignal } from './append-signal.js';
import { EmbeddedReader, type FrameSource } from './embedded-reader.js';
import type { FrameLayout } from './embedded-tail.js';
import { encodeFrame, type Frame } from './frame.js';
import { readRecordFrames, scanFrames, writeFully } from './frame-file.js';
import { RecentIds } from './recent-ids.js';
import { LogUnavailableError, type LogBackend, type LogHealth, type LogReader, type WriteResult } from './types.js';

export const EMBEDDED_LOG_FILE = 'events.log';
/** Records whose ids are remembered for dedupe; a retry arrives within seconds, far fewer records back. */
const DEDUPE_WINDOW = 100_000;
/** What `health` writes (and cuts off again) past the last frame while the log is unwritable: one page. */
const PROBE_WRITE_BYTES = 4096;

/** A torn or corrupt tail that `open` removed. */
export interface TornTail {
  file: string;
  /** File size before and after the cut. */
  fileBytes: number;
  keptBytes: number;
  /** Whole records kept. */
  records: number;
  reason: string;
}

export interface EmbeddedLogOptions {
  /** Told when `open` cuts a torn tail off; the log itself stays silent (no console noise in tests). */
  onTornTail?: (tail: TornTail) => void;
}

export class EmbeddedLog implements LogBackend {
  readonly kind = 'embedded';
  /** One file, read whole by the one process that owns DATA_DIR. */
  readonly perOrg = false;
  private readonly signal = new AppendSignal();
  private closing = false;
  private closed = false;
  private readonly appendListeners: Array<(offset: number, end: number) => void> = [];
  /** Tail of the write chain: one write at a time, in call order. */
  private queue: Promise<unknown> = Promise.resolve();
  /** Why the last durable write failed (ENOSPC, EIO, …); cleared by the next write that succeeds. */
  private writeFailure: string | undefined;

  /** What readers see of the log (embedded-reader.ts). */
  private readonly source: FrameSource = {
    signal: this.signal,
    count: () => this.offsets.length,
    isOpen: () => !this.closed,
    readRecords: (from, to) => this.readRecords(from, to),
  };

  private constructor(
    private readonly file: string,
    private readonly handle: FileHandle,
    /** Byte offset of each record's frame; index = seq - 1. */
    private readonly offsets: number[],
    private end: number,
    private readonly recent: RecentIds,
  ) {}

  static async open(dir: string, options: EmbeddedLogOptions = {}): Promise<EmbeddedLog> {
    await mkdir(dir, { recursive: true });
    const file = join(dir, EMBEDDED_LOG_FILE);
    const existed = await stat(file).then(
      () => true,
      () => false,
    );
    // Not O_APPEND: writes go to an explicit offset, which also overwrites the remains of a failed write.
    const handle = await open(file, constants.O_RDWR | constants.O_CREAT | constants.O_DSYNC, 0o644);
    try {
      if (!existed) await syncDirectory(dir);
      const fileBytes = (await handle.stat()).size;
      const offsets: number[] = [];
      const recent = new RecentIds(DEDUPE_WINDOW);
      const scan = await scanFrames(handle, fileBytes, (offset, _length, id) => {
        offsets.push(offset);
        recent.add(id, offsets.length);
      });
      if (scan.validBytes < fileBytes) {
        await handle.truncate(scan.validBytes);
        await handle.datasync();
        options.onTornTail?.({
          file,
          fileBytes,
          keptBytes: scan.validBytes,
          records: offsets.length,
          reason: scan.stopReason ?? 'unknown',
        });
      }
      return new EmbeddedLog(file, handle, offsets, scan.validBytes, recent);
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  write(recordId: string, payload: Uint8Array): Promise<WriteResult> {
    if (this.closing) return Promise.reject(new LogUnavailableError('embedded log is closed'));
    const result = this.queue.then(() => this.append(recordId, payload));
    this.queue = result.catch(() => {});
    return result;
  }

  /** Where the durable frames are now, and every later append reported to `listener` (the storage
   *  worker tails the file this way: embedded-tail.ts). Taken together, so no append falls between. */
  share(listener: (offset: number, end: number) => void): FrameLayout {
    this.appendListeners.push(listener);
    return { file: this.file, offsets: [...this.offsets], end: this.end };
  }

  openReader(afterSeq: number): Promise<LogReader> {
    return Promise.resolve(new EmbeddedReader(this.source, afterSeq));
  }

  headSeq(): Promise<number> {
    return Promise.resolve(this.offsets.length);
  }

  isAvailable(): boolean {
    return !this.closing;
  }

  /** The directory the log file lives in (its file system's free space is worth watching). */
  get directory(): string {
    return dirname(this.file);
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

  /** Lets queued writes finish, then closes the file; waiting readers wake and see the log closed. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    await this.queue;
    this.closed = true;
    await this.handle.close();
    this.signal.notify();
  }

  /** Records `from`..`to` (1-based, inclusive), read in one positional read. */
  private async readRecords(from: number, to: number): Promise<Frame[]> {
    if (this.closed) throw new LogUnavailableError('embedded log is closed');
    return readRecordFrames(this.handle, this.offsets, this.end, from, to);
  }

  private async append(recordId: string, payload: Uint8Array): Promise<WriteResult> {
    const known = this.recent.get(recordId);
    if (known !== undefined) return { seq: known, duplicate: true };
    const frame = encodeFrame(recordId, payload);
    const offset = this.end;
    try {
      await writeFully(this.handle, offset, frame);
    } catch (error) {
      // Best effort: leave no unacknowledged frame behind (the next write would overwrite it anyway).
      await this.handle.truncate(offset).catch(() => {});
      this.writeFailure = describeIoError(error);
      throw new LogUnavailableError(`embedded log write failed: ${this.writeFailure}`, { cause: error });
    }
    this.writeFailure = undefined;
    this.end = offset + frame.length;
    this.offsets.push(offset);
    const seq = this.offsets.length;
    this.recent.add(recordId, seq);
    this.signal.notify();
    for (const listener of this.appendListeners) listener(offset, this.end);
    return { seq, duplicate: false };
  }

  /** Runs in the write chain, so no append is between the probe bytes and their removal. */
  private async probeWrite(): Promise<void> {
    if (this.writeFailure === undefined || this.closing) return;
    try {
      await writeFully(this.handle, this.end, Buffer.alloc(PROBE_WRITE_BYTES));
      this.writeFailure = undefined;
    } catch (error) {
      this.writeFailure = describeIoError(error);
    } finally {
      await this.handle.truncate(this.end).catch(() => {});
    }
  }
}

/** "ENOSPC (no space left on device)": the errno code first, as operators search for it. */
function describeIoError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return code ? `${code} (${message})` : message;
}

/** Makes a newly created file's directory entry durable, not only its contents. */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
