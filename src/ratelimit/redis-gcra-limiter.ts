/**
 * GCRA on Redis: one budget per key for every process using the same Redis and key prefix. Decisions
 * equal gcra-limiter.ts's for the same request times (gcra-script.ts is the same arithmetic); the time is
 * Redis's, so `nowMs` is not used. A failed or timed-out call rejects: fallback-limiter.ts decides then.
 */
import type { Redis } from 'ioredis';
import { type GcraRedis, type GcraReply, withGcraCommand } from './gcra-script.js';
import type { RateDecision, RateLimiter, RatePolicy } from './types.js';

export class RedisGcraLimiter implements RateLimiter {
  private readonly redis: GcraRedis;

  /** `keyPrefix` keeps limiters and deployments sharing one Redis apart, e.g. `audience:ratelimit:org:`. */
  constructor(
    redis: Redis,
    private readonly keyPrefix: string,
  ) {
    this.redis = withGcraCommand(redis);
  }

  async consume(key: string, policy: RatePolicy): Promise<RateDecision> {
    return decisionOf(await this.redis.audienceGcra(this.keyPrefix + key, String(policy.ratePerSecond), String(policy.burst)));
  }
}

export function decisionOf([allowed, remaining, resetMs, retryAfterMs]: GcraReply): RateDecision {
  return {
    allowed: allowed === 1,
    remaining: Number(remaining),
    resetSeconds: Number(resetMs) / 1000,
    retryAfterSeconds: Number(retryAfterMs) / 1000,
  };
}
