/**
 * In-memory GCRA (generic cell rate algorithm), one number per key: its TAT, the time at which the key
 * would be fully idle again if requests arrived exactly at the sustained rate. With emission interval
 * T = 1000 / rate ms and burst tolerance tau = (burst - 1) * T, a request at `now` is allowed when
 * TAT - tau <= now, and then moves TAT to max(TAT, now) + T; `cost` requests at once when
 * TAT + (cost - 1) * T - tau <= now, moving TAT by cost * T. A key whose TAT is in the past is
 * indistinguishable from an unknown key, which is what makes eviction safe.
 */
import type { RateDecision, RateLimiter, RatePolicy } from './types.js';

// Float arithmetic on T = 1000 / rate (e.g. 333.33… ms) must not deny a request that lands exactly on
// its boundary; a microsecond of slack is far below any rate we serve.
const EPSILON_MS = 0.001;

export interface GcraLimiterOptions {
  /** How often (in `nowMs` time) keys whose TAT has passed are dropped. Default: 10000 (ms) */
  sweepIntervalMs?: number;
  /**
   * Hard cap on tracked keys, against floods of distinct keys (e.g. many client addresses). Past it, the
   * least recently limited key is forgotten, which only gives that key a fresh burst. Default: 100000
   */
  maxKeys?: number;
}

export class GcraLimiter implements RateLimiter {
  /** key → TAT (epoch ms). Map order is least recently updated first (updates delete and re-insert). */
  private readonly tats = new Map<string, number>();
  private lastSweep = -Infinity;
  private readonly sweepIntervalMs: number;
  private readonly maxKeys: number;

  constructor(options: GcraLimiterOptions = {}) {
    this.sweepIntervalMs = options.sweepIntervalMs ?? 10_000;
    this.maxKeys = options.maxKeys ?? 100_000;
  }

  consume(key: string, policy: RatePolicy, nowMs: number, cost = 1): RateDecision {
    this.maybeSweep(nowMs);
    const { interval, tau, tat, denial } = this.state(key, policy, nowMs, cost);
    if (denial) return denial;
    const next = tat + cost * interval;
    this.tats.delete(key);
    this.tats.set(key, next);
    if (this.tats.size > this.maxKeys) this.evictOldest();
    return {
      allowed: true,
      remaining: Math.max(0, Math.floor((nowMs + tau - next + EPSILON_MS) / interval) + 1),
      resetSeconds: (next - nowMs) / 1000,
      retryAfterSeconds: 0,
    };
  }

  peek(key: string, policy: RatePolicy, nowMs: number): RateDecision {
    const { interval, tau, tat, denial } = this.state(key, policy, nowMs);
    if (denial) return denial;
    return { allowed: true, remaining: Math.floor((nowMs + tau - tat + EPSILON_MS) / interval) + 1, resetSeconds: (tat - nowMs) / 1000, retryAfterSeconds: 0 };
  }

  private state(key: string, policy: RatePolicy, nowMs: number, cost = 1) {
    const interval = 1000 / policy.ratePerSecond;
    const tau = (Math.max(1, policy.burst) - 1) * interval;
    const tat = Math.max(this.tats.get(key) ?? nowMs, nowMs);
    const last = tat + (cost - 1) * interval;
    const denial: RateDecision | undefined =
      last - tau > nowMs + EPSILON_MS
        ? { allowed: false, remaining: 0, resetSeconds: (tat - nowMs) / 1000, retryAfterSeconds: (last - tau - nowMs) / 1000 }
        : undefined;
    return { interval, tau, tat, denial };
  }

  /** Keys currently tracked (for tests and metrics). */
  get size(): number {
    return this.tats.size;
  }

  /** Drops every key whose TAT has passed: those hold no state an unknown key would not have. */
  sweep(nowMs: number): void {
    this.lastSweep = nowMs;
    for (const [key, tat] of this.tats) if (tat <= nowMs) this.tats.delete(key);
  }

  private maybeSweep(nowMs: number): void {
    if (nowMs - this.lastSweep >= this.sweepIntervalMs) this.sweep(nowMs);
  }

  private evictOldest(): void {
    const oldest = this.tats.keys().next();
    if (!oldest.done) this.tats.delete(oldest.value);
  }
}
