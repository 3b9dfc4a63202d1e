/**
 * Wakes readers waiting for an append. A version counter instead of a bare event: a reader notes the
 * version before it looks for records, so an append that lands between the look and the wait is not missed.
 */
export class AppendSignal {
  private version = 0;
  private readonly waiters = new Set<() => void>();

  get current(): number {
    return this.version;
  }

  notify(): void {
    this.version++;
    for (const wake of this.waiters) wake();
    this.waiters.clear();
  }

  /** Resolves on the first notify after version `seen` (at once if one already happened), or after `ms`. */
  wait(seen: number, ms: number): Promise<void> {
    if (this.version !== seen || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.waiters.add(wake);
    });
  }
}
