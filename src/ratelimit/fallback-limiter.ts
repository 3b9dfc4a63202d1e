/**
 * The shared (Redis) limiter, or this process's share of the budget when Redis cannot answer. Never
 * throws and never allows without limit: a failed or timed-out call is decided by an in-memory GCRA
 * holding the policy divided by the API processes this process knows of, so together they stay within
 * the org's rate while Redis is gone.
 */
import { GcraLimiter } from './gcra-limiter.js';
import type { RedisAvailability } from './redis-availability.js';
import type { RateDecision, RateLimiter, RatePolicy } from './types.js';

export interface FallbackLimiterDeps {
  shared: RateLimiter;
  availability: RedisAvailability;
  /** Live API processes this one knows of (itself included); anything below 1 counts as 1. */
  liveApiProcesses: () => number;
  /** Called once per decision made locally (the fallback counter). */
  onLocalDecision: () => void;
}

export class FallbackLimiter implements RateLimiter {
  private readonly local = new GcraLimiter();

  constructor(private readonly deps: FallbackLimiterDeps) {}

  consume(key: string, policy: RatePolicy, nowMs: number, cost = 1): Promise<RateDecision> {
    // A process's share may have a smaller burst than the cost the whole policy allows: at most all of it.
    return this.decide(policy, nowMs, (limiter, p) => limiter.consume(key, p, nowMs, Math.min(cost, p.burst)));
  }

  peek(key: string, policy: RatePolicy, nowMs: number): Promise<RateDecision> {
    return this.decide(policy, nowMs, (limiter, p) => limiter.peek(key, p, nowMs));
  }

  /** `ask` of the shared limiter with the policy, or of the local one with this process's share of it. */
  private async decide(policy: RatePolicy, nowMs: number, ask: (limiter: RateLimiter, policy: RatePolicy) => RateDecision | Promise<RateDecision>): Promise<RateDecision> {
    const { shared, availability } = this.deps;
    if (availability.shouldAsk(nowMs)) {
      try {
        const decision = await ask(shared, policy);
        availability.succeeded();
        return decision;
      } catch (error) {
        availability.failed(nowMs, error);
      }
    }
    this.deps.onLocalDecision();
    return ask(this.local, processShare(policy, this.deps.liveApiProcesses()));
  }
}

/**
 * One process's part of a policy shared by `processes`. The burst is rounded down (at least 1), so the
 * processes' bursts together never exceed the policy's; the rate divides exactly.
 */
export function processShare(policy: RatePolicy, processes: number): RatePolicy {
  const n = Number.isFinite(processes) && processes >= 1 ? Math.floor(processes) : 1;
  return { ratePerSecond: policy.ratePerSecond / n, burst: Math.max(1, Math.floor(policy.burst / n)) };
}
