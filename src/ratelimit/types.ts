/**
 * Rate limiting contracts. The in-memory GCRA (gcra-limiter.ts) serves one process; with REDIS_URL the
 * same GCRA runs atomically in Redis (gcra-script.ts, redis-gcra-limiter.ts) so every API process draws
 * on one budget, and fallback-limiter.ts decides with this process's share while Redis cannot answer.
 * open-rate-limiters.ts picks between them; the interface allows a Promise for the Redis round trip.
 */

export interface RatePolicy {
  /** Sustained requests per second. */
  ratePerSecond: number;
  /** Requests allowed at once after an idle period (at least 1). */
  burst: number;
}

/** Times are exact (fractional) seconds; headers.ts rounds them up for HTTP. */
export interface RateDecision {
  allowed: boolean;
  /** Further requests that would be allowed right now, after this one. */
  remaining: number;
  /** Until the full burst is available again. */
  resetSeconds: number;
  /** Until a request would be allowed; 0 when this one was. */
  retryAfterSeconds: number;
}

export interface RateLimiter {
  /**
   * Counts one request for `key` at `nowMs` (epoch ms, from the Context clock) and decides it; `cost`
   * requests at once (a batch lookup: one per 10 identities), allowed only if all of them are.
   */
  consume(key: string, policy: RatePolicy, nowMs: number, cost?: number): RateDecision | Promise<RateDecision>;
  /**
   * Decides a request for `key` at `nowMs` as `consume` would, counting nothing (`remaining` is how many
   * would be allowed now). For budgets that only failures draw on (admin authentication): a request
   * that succeeds peeks, one that fails consumes, each one atomic step, so concurrent requests cannot
   * all be let through by one free slot.
   */
  peek(key: string, policy: RatePolicy, nowMs: number): RateDecision | Promise<RateDecision>;
}
