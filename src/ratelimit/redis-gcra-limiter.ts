/**
 * GCRA on Redis: one budget per key for every process using the same Redis and key prefix. Decisions
 * equal gcra-limiter.ts's for the same request times (gcra-script.ts is the same arithmetic); the time is
 * Redis's, so `nowMs` is not used. A failed call, or one not answered within `timeoutMs`, rejects:
 * fallback-limiter.ts decides then.
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
    private readonly timeoutMs: number,
  ) {
    this.redis = withGcraCommand(redis);
  }

  async consume(key: string, policy: RatePolicy, _nowMs?: number, cost = 1): Promise<RateDecision> {
    const reply = this.redis.audienceGcra(this.keyPrefix + key, String(policy.ratePerSecond), String(policy.burst), '0', String(cost));
    return decisionOf(await answeredWithin(reply, this.timeoutMs));
  }

  async peek(key: string, policy: RatePolicy): Promise<RateDecision> {
    const reply = this.redis.audienceGcra(this.keyPrefix + key, String(policy.ratePerSecond), String(policy.burst), '1');
    return decisionOf(await answeredWithin(reply, this.timeoutMs));
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

/**
 * Not a plain timer (nor ioredis' commandTimeout, which is one): after the event loop was held longer
 * than `ms` (a burst of hundreds of requests on a busy machine), timers run before the socket is read,
 * so a reply already received would count as none. Deferring the verdict to setImmediate lets the
 * poll phase read it first; only a Redis that really did not answer times out. Seen in tests: bursts of
 * 300 lookups on two starved cores fell back although Redis had answered.
 */
function answeredWithin<T>(reply: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => setImmediate(() => reject(new Error(`Redis did not answer within ${ms} ms`))), ms);
    reply.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
