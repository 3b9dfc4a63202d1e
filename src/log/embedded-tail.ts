/**
 * The embedded log as the storage worker sees it: the thread that owns the file (embedded-log.ts)
 * reports each durable append, and this side reads those frames through its own read-only handle.
 * Only reported frames are ever read, so a frame still being written is never seen half-done.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { AppendSignal } from './append-signal.js';
import { EmbeddedReader, type FrameSource } from './embedded-reader.js';
import type { Frame } from './frame.js';
import { readRecordFrames } from './frame-file.js';
import { LogUnavailableError, type LogBackend, type LogReader } from './types.js';

/** Where the durable frames of the embedded log are: what the owner hands over at start. */
export interface FrameLayout {
  file: string;
  /** Byte offset of each record's frame; index = seq - 1. */
  offsets: number[];
  /** End of the last durable frame. */
  end: number;
}

export class EmbeddedTail implements Pick<LogBackend, 'openReader' | 'headSeq'> {
  private readonly signal = new AppendSignal();
  private closed = false;
  private readonly source: FrameSource = {
    signal: this.signal,
    count: () => this.layout.offsets.length,
    isOpen: () => !this.closed,
    readRecords: (from, to) => this.readRecords(from, to),
  };

  private constructor(
    private readonly handle: FileHandle,
    private readonly layout: FrameLayout,
  ) {}

  static async open(layout: FrameLayout): Promise<EmbeddedTail> {
    return new EmbeddedTail(await open(layout.file, 'r'), layout);
  }

  /** The owner made one more frame durable. */
  appended(offset: number, end: number): void {
    this.layout.offsets.push(offset);
    this.layout.end = end;
    this.signal.notify();
  }

  openReader(afterSeq: number): Promise<LogReader> {
    return Promise.resolve(new EmbeddedReader(this.source, afterSeq));
  }

  headSeq(): Promise<number> {
    return Promise.resolve(this.layout.offsets.length);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.signal.notify();
    await this.handle.close();
  }

  private readRecords(from: number, to: number): Promise<Frame[]> {
    if (this.closed) return Promise.reject(new LogUnavailableError('embedded log is closed'));
    return readRecordFrames(this.handle, this.layout.offsets, this.layout.end, from, to);
  }
}
