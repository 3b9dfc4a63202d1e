/**
 * The embedded log as the storage worker sees it: the thread that owns the segments (embedded-log.ts)
 * reports each durable append and each release of old segments, and this side reads those frames through
 * its own read-only handles. Only reported frames are ever read, so a frame still being written is never
 * seen half-done.
 */
import { open } from 'node:fs/promises';
import { AppendSignal } from './append-signal.js';
import { chainSource, EmbeddedReader, type FrameSource } from './embedded-reader.js';
import { type LayoutChange, SegmentChain, type SegmentLayout } from './segments.js';
import type { LogBackend, LogReader } from './types.js';

export class EmbeddedTail implements Pick<LogBackend, 'openReader' | 'headSeq'> {
  private readonly signal = new AppendSignal();
  private closed = false;
  private readonly chain: SegmentChain;
  private readonly source: FrameSource;

  constructor(layout: SegmentLayout[]) {
    this.chain = new SegmentChain(layout, (file) => open(file, 'r'));
    this.source = chainSource(this.chain, this.signal, () => !this.closed);
  }

  /** The owner made one more frame durable, or deleted old segments. */
  changed(change: LayoutChange): void {
    if (change.kind === 'appended') {
      this.chain.appended(change);
      this.signal.notify();
    } else {
      void this.chain.release(change.firstSeq);
    }
  }

  openReader(afterSeq: number): Promise<LogReader> {
    return Promise.resolve(new EmbeddedReader(this.source, afterSeq));
  }

  headSeq(): Promise<number> {
    return Promise.resolve(this.chain.headSeq);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.signal.notify();
    await this.chain.close();
  }
}
