/**
 * Rate limiting contracts. The in-memory GCRA (gcra-limiter.ts) serves one process; the interface
 * allows a Promise so a shared Redis-backed limiter can replace it when several API processes serve one
 * org. That implementation runs the same GCRA atomically as a Lua script (EVALSHA) on one key per
 * limited thing holding its TAT (theoretical arrival time, epoch ms):
 *
 *   tat = max(tonumber(GET key) or now, now)
 *   if tat - tau > now then return {denied, retryAfter = tat - tau - now, reset = tat - now}
 *   SET key (tat + T) PX ceil(tat + T - now)     -- the expiry is the idle-key eviction
 *   return {allowed, remaining = floor((now + tau - (tat + T)) / T) + 1, reset = tat + T - now}
 *
 * with T = 1000 / ratePerSecond and tau = (burst - 1) * T. `now` should come from Redis `TIME` so that
 * API processes with skewed clocks agree.
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
  /** Counts one request for `key` at `nowMs` (epoch ms, from the Context clock) and decides it. */
  consume(key: string, policy: RatePolicy, nowMs: number): RateDecision | Promise<RateDecision>;
}
