/**
 * Coalesces profile refreshes: compaction batches only enqueue the contacts they touched, and one
 * refresh at a time recomputes everything queued. Under load many batches share one refresh, so
 * profile recomputation no longer sits inside each compaction transaction's critical path.
 */
import type { ContactKey, ProfileMaterializer } from './profile-materializer.js';

/**
 * Pause between refreshes while more keep arriving: at least this, and at least as long as the last
 * refresh took, so under load refreshing holds DuckDB at most about half the time and compaction
 * keeps up; an idle service refreshes at once.
 */
const MIN_INTERVAL_MS = 50;

export class ProfileRefresher {
  private queued: ContactKey[] = [];
  private running: Promise<void> | undefined;

  constructor(
    private readonly materializer: ProfileMaterializer,
    private readonly onError: (error: unknown) => void,
  ) {}

  enqueue(keys: ContactKey[]): void {
    for (const key of keys) this.queued.push(key);
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
      const keys = this.queued;
      this.queued = [];
      const started = performance.now();
      try {
        await this.materializer.refresh(keys);
      } catch (error) {
        this.onError(error);
      }
      const pause = Math.max(MIN_INTERVAL_MS, performance.now() - started);
      if (this.queued.length > 0) await new Promise((r) => setTimeout(r, pause));
    }
  }
}
