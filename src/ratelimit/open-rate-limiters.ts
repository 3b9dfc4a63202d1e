/**
 * The API's two limiters: with REDIS_URL one budget per org (and per failing client address) across
 * every API process, each falling back to its own share while Redis does not answer; without it, in
 * memory per process. Two limiters, so a flood of failed authentications cannot evict the orgs' keys.
 */
import { Redis, type RedisOptions } from 'ioredis';
import type { Clock } from '../core/context.js';
import type { Metrics } from '../ops/metrics.js';
import { FallbackLimiter } from './fallback-limiter.js';
import { GcraLimiter } from './gcra-limiter.js';
import { AUTH_FAILURE_POLICY_NAME, ORG_POLICY_NAME } from './policies.js';
import { type AvailabilityLogger, RedisAvailability } from './redis-availability.js';
import { RedisGcraLimiter } from './redis-gcra-limiter.js';
import type { RateLimiter } from './types.js';

/**
 * How long a lookup waits for Redis before deciding alone. The script answers in well under 1 ms on a
 * healthy Redis (a few ms under a 300-request burst), so only a stuck or unreachable Redis is this slow.
 */
export const REDIS_COMMAND_TIMEOUT_MS = 250;
/** A connection attempt (also start-up's wait for Redis): a black-holed host must not hold start-up longer. */
export const REDIS_CONNECT_TIMEOUT_MS = 1000;

const CLIENT_OPTIONS: RedisOptions = {
  // Never queue a request behind a reconnect: refuse at once while disconnected, and fail commands cut
  // off by a dropped connection instead of resending them later. The fallback decides meanwhile.
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  autoResendUnfulfilledCommands: false,
  // A Redis that keeps the connection open but stops answering (stuck, stopped, black-holed) is dropped
  // after 2 s of silence with commands pending, which fails them and starts reconnecting; otherwise
  // they would pile up until TCP keep-alive gives up, minutes later.
  socketTimeout: 2000,
  connectTimeout: REDIS_CONNECT_TIMEOUT_MS,
  // ioredis 6 backs off to 5 s; 1 s at most lets a restarted Redis be used again within ~2 s.
  retryStrategy: (attempt) => Math.min(100 * attempt, 1000),
};

export interface RateLimiters {
  /** Per org (`org:<slug>`), shared by all its tokens. */
  org: RateLimiter;
  /** Per client address (`auth:<ip>`), failed authentications only. */
  auth: RateLimiter;
  close(): Promise<void>;
}

export interface RateLimitersOptions {
  redisUrl: string | undefined;
  /** REDIS_KEY_PREFIX: keys are `<prefix>:ratelimit:<policy>:<key>`. */
  keyPrefix: string;
  metrics: Metrics;
  logger: AvailabilityLogger;
  clock: Clock;
  /** API processes this one knows to be live, itself included. Default: 1 (no discovery yet). */
  liveApiProcesses?: () => number;
}

export async function openRateLimiters(options: RateLimitersOptions): Promise<RateLimiters> {
  const { redisUrl, metrics } = options;
  if (redisUrl === undefined) {
    metrics.rateLimitShared.set(0);
    return { org: new GcraLimiter(), auth: new GcraLimiter(), close: async () => {} };
  }
  const redis = new Redis(redisUrl, CLIENT_OPTIONS);
  // Without a listener ioredis prints every failed reconnect; RedisAvailability logs the outage once.
  redis.on('error', () => {});
  metrics.rateLimitShared.set(1);
  const availability = new RedisAvailability(options.logger, (shared) => metrics.rateLimitShared.set(shared ? 1 : 0));
  const startError = await connected(redis);
  // Start-up goes on without Redis: the first requests already get this process's share.
  if (startError) availability.failed(options.clock.now(), startError);

  const liveApiProcesses = options.liveApiProcesses ?? (() => 1);
  const limiter = (policy: string): RateLimiter =>
    new FallbackLimiter({
      shared: new RedisGcraLimiter(redis, `${options.keyPrefix}:ratelimit:${policy}:`, REDIS_COMMAND_TIMEOUT_MS),
      availability,
      liveApiProcesses,
      onLocalDecision: () => metrics.rateLimitFallback.inc({ policy }),
    });
  return {
    org: limiter(ORG_POLICY_NAME),
    auth: limiter(AUTH_FAILURE_POLICY_NAME),
    // Requests have finished when this runs (Fastify closes first), so nothing waits on a reply.
    close: async () => redis.disconnect(),
  };
}

/** Resolves with undefined once ready, or with why not at the first error or after the connect timeout. */
function connected(redis: Redis): Promise<Error | undefined> {
  return new Promise((resolve) => {
    const done = (error: Error | undefined): void => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      redis.off('error', done);
      resolve(error);
    };
    const onReady = (): void => done(undefined);
    const timer = setTimeout(() => done(new Error(`no answer within ${REDIS_CONNECT_TIMEOUT_MS} ms`)), REDIS_CONNECT_TIMEOUT_MS);
    redis.once('ready', onReady);
    redis.once('error', done);
  });
}
