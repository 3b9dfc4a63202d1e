/**
 * How far the org databases (and so profiles, lookups and flows) are behind the event log, asked when
 * /readyz or /metrics is probed: records = the log's head − the compacted position (exact); seconds = how
 * long a record above the compacted position has been known to wait. The log keeps no append time, so
 * each probe and each compaction commit (at most every 200 ms) notes the head it saw and when: the record
 * after the compacted position was appended by the first noted time whose head was above it. The figure
 * is a lower bound, as fine as the commits under traffic, as the probes when compaction is stuck, and
 * never an alarm about an event that just arrived.
 */
import type { Clock } from '../core/context.js';

export interface Lag {
  records: number;
  seconds: number;
}

/** Noted heads kept while behind; past it, later ones are dropped (the first, which counts, stays). */
const MAX_NOTED = 64;
/** After each compaction commit the head is noted too, at most this often: under traffic the figure is this fine. */
const NOTE_INTERVAL_MS = 200;
/** Above this, /readyz says how far behind profiles are (SPEC 6.1: an event shows in its profile within 1 s). */
export const LAG_NOTE_SECONDS = 1;

export class CompactionLag {
  /** Heads seen above the compacted position, oldest first, with when each was first seen. */
  private noted: Array<{ seq: number; at: number }> = [];
  private lastNotedAt = -Infinity;

  constructor(
    private readonly source: { headSeq(): Promise<number>; compactedSeq(): number },
    private readonly clock: Clock,
  ) {}

  async read(): Promise<Lag> {
    const head = await this.source.headSeq();
    const compacted = this.source.compactedSeq();
    const now = this.clock.now();
    this.note(head, compacted, now);
    return head <= compacted ? { records: 0, seconds: 0 } : { records: head - compacted, seconds: (now - this.noted[0]!.at) / 1000 };
  }

  /** A compaction batch committed: note the head now, so a steady lag is measured between probes too. */
  committed(): void {
    const now = this.clock.now();
    if (now - this.lastNotedAt < NOTE_INTERVAL_MS) return;
    this.lastNotedAt = now;
    this.source.headSeq().then(
      (head) => this.note(head, this.source.compactedSeq(), this.clock.now()),
      () => undefined, // the log's own check says why it does not answer
    );
  }

  private note(head: number, compacted: number, now: number): void {
    while (this.noted.length > 0 && this.noted[0]!.seq <= compacted) this.noted.shift();
    const last = this.noted.at(-1);
    if (head > compacted && (last === undefined || head > last.seq) && this.noted.length < MAX_NOTED) this.noted.push({ seq: head, at: now });
  }
}
