/**
 * Whether this process's rate-limit decisions go to the shared Redis budget right now, for both limiters
 * at once (they share one connection). Changes are logged and reported once each way, not per request.
 *
 * While Redis answers, every decision asks it. Once a call fails, decisions are local, and one request
 * per RETRY_MS asks Redis again (only one at a time): a frozen Redis then costs one request the command
 * timeout per second instead of every request, and a restarted one is used again within about a second.
 */

/** Between probes of a Redis that failed: short enough to rejoin the shared budget soon after a restart. */
export const RETRY_MS = 1000;

export interface AvailabilityLogger {
  warn(details: object, message: string): void;
  info(details: object, message: string): void;
}

export class RedisAvailability {
  private sharedNow = true;
  private probing = false;
  private retryAt = -Infinity;

  constructor(
    private readonly logger: AvailabilityLogger,
    private readonly onChange: (shared: boolean) => void,
    private readonly retryMs = RETRY_MS,
  ) {}

  /** True while decisions use the shared budget (the last Redis call succeeded). */
  get shared(): boolean {
    return this.sharedNow;
  }

  /** Whether this decision should ask Redis; a true answer in fallback must be followed by succeeded or failed. */
  shouldAsk(nowMs: number): boolean {
    if (this.sharedNow) return true;
    if (this.probing || nowMs < this.retryAt) return false;
    this.probing = true;
    return true;
  }

  succeeded(): void {
    this.probing = false;
    if (this.sharedNow) return;
    this.sharedNow = true;
    this.logger.info({}, 'rate limits: Redis answers again; decisions use the shared budget');
    this.onChange(true);
  }

  failed(nowMs: number, error: unknown): void {
    this.probing = false;
    this.retryAt = nowMs + this.retryMs;
    if (!this.sharedNow) return;
    this.sharedNow = false;
    const err = error instanceof Error ? error.message : String(error);
    this.logger.warn({ err }, 'rate limits: Redis unavailable; this process limits to its share until Redis answers again');
    this.onChange(false);
  }
}
