/**
 * Async work on an interval: never two runs at once (a tick during a run is skipped), the timer never
 * keeps the process alive, and stop() waits for the run in progress, so shutdown can close what it uses.
 * kick() runs the work now, outside the interval (e.g. when new events are stored); a kick during a run
 * runs it once more right after, so what the kick announced is never left to the next tick.
 */
export class PeriodicTask {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;

  constructor(
    private readonly work: () => Promise<void>,
    private readonly onError: (error: unknown) => void,
  ) {}

  start(intervalMs: number): void {
    this.timer ??= setInterval(() => {
      if (!this.running) this.launch();
    }, intervalMs).unref();
  }

  /** Runs the work now, or once more after the run in progress; nothing before start() or after stop(). */
  kick(): void {
    if (this.timer === undefined) return;
    if (this.running) this.again = true;
    else this.launch();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    this.again = false;
    await this.running;
  }

  private launch(): void {
    this.running = this.work()
      .catch(this.onError)
      .finally(() => {
        this.running = undefined;
        if (this.again && this.timer !== undefined) {
          this.again = false;
          this.launch();
        }
      });
  }
}
