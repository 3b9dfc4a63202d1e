/**
 * Async work on an interval: never two runs at once (a tick during a run is skipped), the timer never
 * keeps the process alive, and stop() waits for the run in progress, so shutdown can close what it uses.
 */
export class PeriodicTask {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly work: () => Promise<void>,
    private readonly onError: (error: unknown) => void,
  ) {}

  start(intervalMs: number): void {
    this.timer ??= setInterval(() => {
      this.running ??= this.work()
        .catch(this.onError)
        .finally(() => (this.running = undefined));
    }, intervalMs).unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
