/**
 * When Redis is gone: decisions keep coming without waiting, at this process's share (never unlimited),
 * counted and logged once; and they go back to Redis when it returns. Against a private redis-server
 * that is killed, frozen and restarted, and a port where nothing listens.
 */
import t from 'tap';
import { systemClock } from '../../src/core/context.js';
import { createMetrics, type Metrics } from '../../src/ops/metrics.js';
import { processShare } from '../../src/ratelimit/fallback-limiter.js';
import { REDIS_COMMAND_TIMEOUT_MS, REDIS_CONNECT_TIMEOUT_MS, openRateLimiters } from '../../src/ratelimit/open-rate-limiters.js';
import { orgRatePolicy } from '../../src/ratelimit/policies.js';
import { RETRY_MS } from '../../src/ratelimit/redis-availability.js';
import type { RateLimiter } from '../../src/ratelimit/types.js';
import { waitFor } from '../helpers/app.js';
import { scaled } from '../helpers/deadline.js';
import { freePort } from '../helpers/free-port.js';
import { inspectRedis, startRedisServer, uniquePrefix, withoutRedisServer } from '../helpers/redis-server.js';

const policy = orgRatePolicy({ rateLimit: 20 });

function recordingLogger() {
  const lines: string[] = [];
  return { lines, warn: (_: object, message: string) => lines.push(`warn: ${message}`), info: (_: object, message: string) => lines.push(`info: ${message}`) };
}

async function value(metrics: Metrics, name: 'rateLimitShared' | 'rateLimitFallback', policyName?: string): Promise<number> {
  const values = (await metrics[name].get()).values;
  return values.find((v) => policyName === undefined || v.labels.policy === policyName)?.value ?? 0;
}

/**
 * 40 requests at once for one org: how many were allowed, how long the slowest took, and how many the
 * policy refilled meanwhile (at `share` of its rate), which a slow machine may legitimately allow more.
 */
async function burst(limiter: RateLimiter, share = 1): Promise<{ allowed: number; ms: number; refill: number }> {
  const started = performance.now();
  const decisions = await Promise.all(Array.from({ length: 40 }, () => limiter.consume('org:acme', policy, systemClock.now())));
  const ms = performance.now() - started;
  return { allowed: decisions.filter((d) => d.allowed).length, ms, refill: Math.ceil((ms / 1000) * policy.ratePerSecond * share) };
}

t.test("a process's share: rate and burst divided by the live API processes, burst at least 1", async (t) => {
  t.same(processShare({ ratePerSecond: 100, burst: 100 }, 1), { ratePerSecond: 100, burst: 100 });
  t.same(processShare({ ratePerSecond: 100, burst: 100 }, 3), { ratePerSecond: 100 / 3, burst: 33 }, 'burst rounded down: together never over');
  t.same(processShare({ ratePerSecond: 10, burst: 10 }, 40), { ratePerSecond: 0.25, burst: 1 });
  for (const odd of [0, -2, Number.NaN, Number.POSITIVE_INFINITY]) t.same(processShare({ ratePerSecond: 50, burst: 50 }, odd), { ratePerSecond: 50, burst: 50 }, `${odd} counts as 1`);
});

t.test('without REDIS_URL: in-memory limiters per process, not shared', async (t) => {
  const metrics = createMetrics();
  const limiters = await openRateLimiters({ redisUrl: undefined, keyPrefix: 'x', metrics, logger: recordingLogger(), clock: systemClock });
  const { allowed, refill } = await burst(limiters.org);
  t.ok(allowed >= 20 && allowed <= 20 + refill, `the burst of 20 (${allowed})`);
  t.equal(await value(metrics, 'rateLimitShared'), 0, 'audience_rate_limit_shared is 0');
  await limiters.close();
});

const skip = withoutRedisServer();
if (skip) t.comment(`skipped: ${skip}`);

t.test('Redis killed: answered at once at the share, counted, logged once; back to Redis after a restart', { skip }, async (t) => {
  const server = await startRedisServer(t);
  const metrics = createMetrics();
  const logger = recordingLogger();
  const prefix = uniquePrefix();
  const limiters = await openRateLimiters({ redisUrl: server.url, keyPrefix: prefix, metrics, logger, clock: systemClock, liveApiProcesses: () => 2 });
  t.teardown(() => limiters.close());

  const shared = await burst(limiters.org);
  t.ok(shared.allowed >= 20 && shared.allowed <= 20 + shared.refill, `shared: the whole burst of 20 (${shared.allowed})`);
  t.equal(await value(metrics, 'rateLimitShared'), 1, 'audience_rate_limit_shared is 1');
  t.equal(await inspectRedis(t, server.url).exists(`${prefix}:ratelimit:org:org:acme`), 1, 'decided in Redis under the prefix');

  await server.kill9();
  const alone = await burst(limiters.org, 1 / 2);
  t.ok(alone.ms < REDIS_COMMAND_TIMEOUT_MS, `answered without waiting for Redis (${alone.ms.toFixed(0)} ms)`);
  t.ok(alone.allowed >= 10 && alone.allowed <= 10 + alone.refill, `this process's share of 2: a burst of 10, not unlimited (${alone.allowed})`);
  t.equal(await value(metrics, 'rateLimitFallback', 'org'), 40, 'every local decision counted');
  t.equal(await value(metrics, 'rateLimitShared'), 0, 'audience_rate_limit_shared is 0');
  await limiters.auth.consume('auth:203.0.113.9', policy, systemClock.now());
  t.equal(await value(metrics, 'rateLimitFallback', 'auth'), 1, 'the auth limiter falls back too, counted under its policy');
  await burst(limiters.org);
  t.same(logger.lines.filter((l) => l.startsWith('warn')).length, 1, 'one warning for the outage, not one per request');

  await server.restart();
  await waitFor(async () => {
    await limiters.org.consume('org:probe', policy, systemClock.now());
    return (await value(metrics, 'rateLimitShared')) === 1;
  }, 5000);
  t.same(logger.lines.filter((l) => l.startsWith('info')), ['info: rate limits: Redis answers again; decisions use the shared budget']);
  const fallbacks = await value(metrics, 'rateLimitFallback', 'org');
  const back = await burst(limiters.org);
  t.ok(back.allowed >= 20, `the restarted (empty) Redis decides again: a whole burst, although the local share is spent (${back.allowed})`);
  t.equal(await value(metrics, 'rateLimitFallback', 'org'), fallbacks, 'no more local decisions');
  t.equal(await inspectRedis(t, server.url).exists(`${prefix}:ratelimit:org:org:acme`), 1);
});

t.test('Redis frozen: one request waits the command timeout, the next ones do not; thawed, Redis decides again', { skip }, async (t) => {
  const server = await startRedisServer(t);
  const metrics = createMetrics();
  const limiters = await openRateLimiters({ redisUrl: server.url, keyPrefix: uniquePrefix(), metrics, logger: recordingLogger(), clock: systemClock });
  t.teardown(() => limiters.close());
  t.match(await limiters.org.consume('org:acme', policy, systemClock.now()), { allowed: true, remaining: 19 });

  await server.freeze();
  const started = performance.now();
  const first = await limiters.org.consume('org:acme', policy, systemClock.now());
  const waited = performance.now() - started;
  t.ok(waited >= REDIS_COMMAND_TIMEOUT_MS - 10 && waited < REDIS_COMMAND_TIMEOUT_MS + scaled(500), `the first waited the command timeout (${waited.toFixed(0)} ms)`);
  t.match(first, { allowed: true }, 'then decided locally');
  const next = await burst(limiters.org);
  t.ok(next.ms < REDIS_COMMAND_TIMEOUT_MS, `the next 40 did not wait for Redis, which stays silent (${next.ms.toFixed(0)} ms)`);
  t.ok(next.allowed < 40, `still limited (${next.allowed} of 40)`);

  server.thaw();
  await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  await waitFor(async () => {
    await limiters.org.consume('org:probe', policy, systemClock.now());
    return (await value(metrics, 'rateLimitShared')) === 1;
  }, 5000);
  t.pass('back on Redis');
});

t.test('REDIS_URL unreachable at start: start-up goes on, decisions are local from the first request', async (t) => {
  const metrics = createMetrics();
  const logger = recordingLogger();
  const started = performance.now();
  const limiters = await openRateLimiters({ redisUrl: `redis://127.0.0.1:${await freePort()}`, keyPrefix: uniquePrefix(), metrics, logger, clock: systemClock });
  t.teardown(() => limiters.close());
  t.ok(performance.now() - started < REDIS_CONNECT_TIMEOUT_MS + scaled(500), 'start-up waited at most the connect timeout');
  t.equal(await value(metrics, 'rateLimitShared'), 0, 'audience_rate_limit_shared is 0');
  t.equal(logger.lines.length, 1, 'one line logged');
  t.match(logger.lines[0], /^warn: rate limits: Redis unavailable/);
  const { allowed, refill } = await burst(limiters.org);
  t.ok(allowed >= 20 && allowed <= 20 + refill, `the whole budget (one process known), not unlimited (${allowed})`);
  t.equal(await value(metrics, 'rateLimitFallback', 'org'), 40, 'every decision local');
});
