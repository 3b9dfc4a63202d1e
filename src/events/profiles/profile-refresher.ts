/**
 * Coalesces profile refreshes: compaction batches only enqueue the contacts they touched, and one
 * refresh at a time recomputes everything queued. Under load many batches share one refresh, so
 * profile recomputation no longer sits inside each compaction transaction's critical path.
 */
import type { ContactKey, ProfileMaterializer } from './profile-materializer.js';

/**
 * The next refresh starts at least MIN_INTERVAL_MS, and at least PAUSE_PER_REFRESH times as long as
 * the last refresh took, after the last one ended. Refreshing then holds DuckDB (one connection) at
 * most a quarter of the time, so compaction keeps up. On an idle service refreshes are short, and the
 * pause is MIN_INTERVAL_MS.
 */
const MIN_INTERVAL_MS = 50;
const PAUSE_PER_REFRESH = 3;
/**
 * While compaction works through a backlog, refreshes run at most this often: profiles are stale until
 * the backlog is drained anyway, and DuckDB's time goes to draining it (a 300,000-event drain: 31k
 * events/s without refreshes, 25k with refreshes paced as above, 15k with back-to-back refreshes).
 */
const BACKLOG_INTERVAL_MS = 5_000;

export class ProfileRefresher {
  private queued: ContactKey[] = [];
  private running: Promise<void> | undefined;
  private lastEnded = Number.NEGATIVE_INFINITY;
  private lastTook = 0;
  /** As told by the latest enqueue. */
  private backlog = false;
  /** Ends the current wait early when the due time may have moved closer. */
  private wake: (() => void) | undefined;

  constructor(
    private readonly materializer: ProfileMaterializer,
    private readonly onError: (error: unknown) => void,
    private readonly backlogIntervalMs = BACKLOG_INTERVAL_MS,
  ) {}

  /** `backlog`: the compaction batch that touched these contacts was read from a backlog. */
  enqueue(keys: ContactKey[], options: { backlog?: boolean } = {}): void {
    for (const key of keys) this.queued.push(key);
    const backlogEnded = this.backlog && !options.backlog;
    this.backlog = options.backlog ?? false;
    if (backlogEnded) this.wake?.();
    this.running ??= this.drain().finally(() => {
      this.running = undefined;
    });
  }

  /** Resolves when everything enqueued so far is in the serving index. */
  async settled(): Promise<void> {
    while (this.running) await this.running;
  }

  private async drain(): Promise<void> {
    while (this.queued.length > 0) {
      if (this.dueAt() > performance.now()) await this.untilDue();
      const keys = this.queued;
      this.queued = [];
      const started = performance.now();
      try {
        await this.materializer.refresh(keys);
      } catch (error) {
        this.onError(error);
      }
      this.lastEnded = performance.now();
      this.lastTook = this.lastEnded - started;
    }
  }

  private dueAt(): number {
    const pause = Math.max(MIN_INTERVAL_MS, PAUSE_PER_REFRESH * this.lastTook);
    return this.lastEnded + (this.backlog ? Math.max(pause, this.backlogIntervalMs) : pause);
  }

  private async untilDue(): Promise<void> {
    for (let wait = this.dueAt() - performance.now(); wait > 0; wait = this.dueAt() - performance.now()) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }
}
