/** Callers waiting for the compacted position to reach a log seq (Compaction.whenCompacted). */
export class SeqWaiters {
  private readonly waiting: Array<{ seq: number; resolve: () => void }> = [];

  /** Resolves once the position reaches `seq`: at once if `position` already has. */
  wait(seq: number, position: number): Promise<void> {
    if (position >= seq) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push({ seq, resolve }));
  }

  /** The position is now `position`: wakes everyone waiting for it or less. */
  reached(position: number): void {
    for (let i = this.waiting.length - 1; i >= 0; i--) {
      const waiter = this.waiting[i]!;
      if (waiter.seq <= position) {
        this.waiting.splice(i, 1);
        waiter.resolve();
      }
    }
  }
}
