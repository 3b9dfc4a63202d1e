/**
 * The GCRA script on the machine's Redis: the same decisions and headers as the in-memory limiter, and
 * one budget for several processes. Redis decides with its own `TIME`; the script also returns the time
 * it used, so the in-memory limiter is fed exactly that time and must agree to the last bit. That the
 * time is Redis's TIME is checked too: each request runs as MULTI { TIME, script, TIME }, which Redis
 * executes with nothing in between, so the script's time must lie between the two.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import t from 'tap';
import { type GcraReply, withGcraCommand } from '../../src/ratelimit/gcra-script.js';
import { GcraLimiter } from '../../src/ratelimit/gcra-limiter.js';
import { rateLimitHeaders } from '../../src/ratelimit/headers.js';
import { ADMIN_AUTH_POLICY, AUTH_FAILURE_POLICY, orgRatePolicy } from '../../src/ratelimit/policies.js';
import { decisionOf, RedisGcraLimiter } from '../../src/ratelimit/redis-gcra-limiter.js';
import type { RateDecision, RatePolicy } from '../../src/ratelimit/types.js';
import { inspectRedis, redisUrl, redisUrlIfReachable, uniquePrefix } from '../helpers/redis-server.js';

interface Scenario {
  name: string;
  policy: RatePolicy;
  /** Each step sleeps, then sends its requests at once; `cost`: each counts as that many (a batch lookup). */
  steps: Array<{ sleepMs: number; requests: number; cost?: number }>;
}

const scenarios: Scenario[] = [
  { name: 'org 50/s: burst of 50, the 51st waits 20 ms, one more 25 ms later, refilled after 1 s', policy: orgRatePolicy({ rateLimit: 50 }), steps: [{ sleepMs: 0, requests: 52 }, { sleepMs: 25, requests: 2 }, { sleepMs: 1050, requests: 52 }] },
  { name: 'fractional interval (rate 3): exactly the burst, then one per 333 ms', policy: { ratePerSecond: 3, burst: 3 }, steps: [{ sleepMs: 0, requests: 4 }, { sleepMs: 340, requests: 2 }, { sleepMs: 1000, requests: 4 }] },
  { name: 'slow (0.5/s, burst 1): seconds round up to 2', policy: { ratePerSecond: 0.5, burst: 1 }, steps: [{ sleepMs: 0, requests: 1 }, { sleepMs: 500, requests: 2 }] },
  { name: 'auth policy (10/s)', policy: AUTH_FAILURE_POLICY, steps: [{ sleepMs: 0, requests: 12 }, { sleepMs: 150, requests: 3 }] },
  { name: 'a burst below 1 counts as 1', policy: { ratePerSecond: 5, burst: 0 }, steps: [{ sleepMs: 0, requests: 2 }, { sleepMs: 210, requests: 2 }] },
  { name: 'costs (batches): 10 at 50/s, 5 fit, then singles and a 3 after 70 ms', policy: orgRatePolicy({ rateLimit: 50 }), steps: [{ sleepMs: 0, requests: 6, cost: 10 }, { sleepMs: 70, requests: 2, cost: 3 }, { sleepMs: 0, requests: 2 }] },
];

/** Redis TIME as epoch ms, computed as the script computes it. */
const timeMs = ([seconds, micros]: [string, string]): number => Number(seconds) * 1000 + Number(micros) / 1000;

const url = await redisUrlIfReachable();
if (url === undefined) {
  t.comment(`skipped: Redis not reachable at ${redisUrl()}`);
  t.test('Redis GCRA', { skip: `Redis not reachable at ${redisUrl()}` }, () => {});
} else {
  const redis = withGcraCommand(inspectRedis(t, url));
  const prefix = uniquePrefix();

  async function bracketed(key: string, policy: RatePolicy, peek = false, cost = 1): Promise<{ decision: RateDecision; nowMs: number; beforeMs: number; afterMs: number }> {
    const multi = redis.multi().time() as unknown as { audienceGcra(...args: string[]): { time(): typeof multi }; exec(): Promise<Array<[Error | null, unknown]>> };
    const extra = peek ? ['1'] : cost === 1 ? [] : ['0', String(cost)];
    const results = await multi.audienceGcra(key, String(policy.ratePerSecond), String(policy.burst), ...extra).time().exec();
    const [before, reply, after] = results.map(([error, value]) => {
      if (error) throw error;
      return value;
    });
    const gcra = reply as GcraReply;
    return { decision: decisionOf(gcra), nowMs: Number(gcra[4]), beforeMs: timeMs(before as [string, string]), afterMs: timeMs(after as [string, string]) };
  }

  for (const scenario of scenarios) {
    t.test(`same decisions and headers as in memory: ${scenario.name}`, async (t) => {
      const key = `${prefix}:scenario:${scenario.name}`;
      const memory = new GcraLimiter();
      const mismatches: object[] = [];
      const outcomes = { allowed: 0, denied: 0 };
      for (const [s, step] of scenario.steps.entries()) {
        await sleep(step.sleepMs);
        // Sent at once on one connection: Redis runs them in this order, as a burst.
        const burst = await Promise.all(Array.from({ length: step.requests }, () => bracketed(key, scenario.policy, false, step.cost)));
        for (const [i, { decision, nowMs, beforeMs, afterMs }] of burst.entries()) {
          const expected = memory.consume(key, scenario.policy, nowMs, step.cost);
          const same =
            JSON.stringify(decision) === JSON.stringify(expected) &&
            JSON.stringify(rateLimitHeaders('org', scenario.policy, decision)) === JSON.stringify(rateLimitHeaders('org', scenario.policy, expected));
          if (!same) mismatches.push({ step: s, request: i, redis: decision, memory: expected });
          if (!(beforeMs <= nowMs && nowMs <= afterMs)) mismatches.push({ step: s, request: i, notRedisTime: { beforeMs, nowMs, afterMs } });
          outcomes[decision.allowed ? 'allowed' : 'denied']++;
        }
      }
      t.same(mismatches, [], 'every decision and its headers equal, at the Redis time');
      t.ok(outcomes.allowed > 0 && outcomes.denied > 0, `the scenario allows and denies (${JSON.stringify(outcomes)})`);
    });
  }

  t.test('peek: the same decisions as in memory, and nothing counted (admin auth: 10 at once, then 1/s)', async (t) => {
    const key = `${prefix}:peek`;
    const memory = new GcraLimiter();
    const mismatches: object[] = [];
    const allowedPeeks: boolean[] = [];
    // Peeks between the consumes of a burst: each must see what a consume would, and leave it unchanged.
    for (let i = 0; i < 12; i++) {
      for (const peek of [true, true, false]) {
        const { decision, nowMs } = await bracketed(key, ADMIN_AUTH_POLICY, peek);
        const expected = peek ? memory.peek(key, ADMIN_AUTH_POLICY, nowMs) : memory.consume(key, ADMIN_AUTH_POLICY, nowMs);
        if (JSON.stringify(decision) !== JSON.stringify(expected)) mismatches.push({ i, peek, redis: decision, memory: expected });
        if (peek) allowedPeeks.push(decision.allowed);
      }
    }
    t.same(mismatches, [], 'every peek and consume equal, at the Redis time');
    t.same(allowedPeeks.slice(0, 20), Array(20).fill(true), 'peeks before the 10th consume are allowed');
    t.ok(allowedPeeks.slice(-2).every((allowed) => !allowed), 'and refused once the burst is consumed: peeks did not count');
    await bracketed(`${prefix}:peek-only`, ADMIN_AUTH_POLICY, true);
    t.equal(await redis.exists(`${prefix}:peek-only`), 0, 'a peek writes no key');
  });

  t.test('keys carry the prefix and expire when their TAT passes (idle eviction)', async (t) => {
    const limiter = new RedisGcraLimiter(redis, `${prefix}:ratelimit:org:`, 1000);
    const slow = { ratePerSecond: 1, burst: 1 };
    t.match(await limiter.consume('org:acme', slow), { allowed: true, remaining: 0, retryAfterSeconds: 0 });
    t.equal(await redis.exists(`${prefix}:ratelimit:org:org:acme`), 1, 'the key is <prefix><key>');

    // Read in the same transaction as the script, so no time passes between them.
    const key = `${prefix}:expiry`;
    const multi = redis.multi() as unknown as { audienceGcra(...args: string[]): { pttl(key: string): { exec(): Promise<Array<[Error | null, number]>> } } };
    const [, [, ttl]] = (await multi.audienceGcra(key, '50', '50').pttl(key).exec()) as [unknown, [null, number]];
    t.ok(ttl >= 19 && ttl <= 20, `expires with its TAT, 20 ms ahead (${ttl} ms)`);
    await sleep(40);
    t.equal(await redis.exists(key), 0, 'gone once idle');
  });

  t.test('a reply that arrived while the event loop was held past the timeout is no timeout (a frozen Redis: fallback-limiter.test.ts)', async (t) => {
    const limiter = new RedisGcraLimiter(redis, `${prefix}:held:`, 100);
    const policy = orgRatePolicy({ rateLimit: 50 });
    await limiter.consume('warm-up', policy);
    const pending = limiter.consume('org:acme', policy);
    // Longer than the timeout, on this thread: Redis answers meanwhile, and the timer is due before the
    // socket is read again.
    const until = performance.now() + 300;
    while (performance.now() < until);
    t.match(await pending, { allowed: true, remaining: 49 }, 'the reply counts');
  });

  t.test('two limiters on two connections (two processes) share one budget: 300 at once at rate 100 → about 100', async (t) => {
    const connections = [new Redis(url), new Redis(url)];
    t.teardown(() => connections.forEach((c) => c.disconnect()));
    const limiters = connections.map((c) => new RedisGcraLimiter(c, `${prefix}:shared:`, 1000));
    const policy = orgRatePolicy({ rateLimit: 100 });
    // Connected, and the script cached, before the burst.
    await Promise.all(limiters.map((l) => l.consume('warm-up', policy)));
    const started = performance.now();
    const decisions = await Promise.all(Array.from({ length: 300 }, (_, i) => limiters[i % 2]!.consume('org:acme', policy)));
    const refill = Math.floor(((performance.now() - started) / 1000) * 100);
    const allowed = decisions.filter((d) => d.allowed).length;
    t.ok(allowed >= 90 && allowed <= 110 + refill, `${allowed} allowed (100 ± 10 %, + ${refill} refilled during the burst)`);
    const byEach = [0, 1].map((p) => decisions.filter((d, i) => i % 2 === p && d.allowed).length);
    t.ok(byEach.every((n) => n > 0), `both processes served part of it (${byEach.join(' + ')})`);
    t.ok(decisions.filter((d) => !d.allowed).every((d) => d.remaining === 0 && d.retryAfterSeconds > 0), 'denials say when to retry');
  });
}
