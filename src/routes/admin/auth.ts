/**
 * `Authorization: Bearer <ADMIN_KEY>` on every /admin/v1 route, compared in constant time, and failed
 * attempts limited per client address (ADMIN_AUTH_POLICY), so the key cannot be guessed at speed.
 *
 * A failure consumes from its address's budget; a success only peeks at it. Each request's answer thus
 * comes from one atomic step of the limiter: an address over its budget is answered 429 whatever key it
 * sends (the answer says nothing about the key), concurrent guesses cannot all pass through one free
 * slot, and a valid key is never refused because of failures from another address, nor by its own
 * successful requests.
 */
import type { FastifyRequest } from 'fastify';
import type { Clock } from '../../core/context.js';
import { AppError } from '../../core/errors.js';
import { bearerToken } from '../../http/bearer.js';
import type { Metrics } from '../../ops/metrics.js';
import { matchesHash } from '../../core/secrets.js';
import { clientAddressKey } from '../../ratelimit/client-address.js';
import { rateLimitHeaders } from '../../ratelimit/headers.js';
import { ADMIN_AUTH_POLICY, ADMIN_AUTH_POLICY_NAME } from '../../ratelimit/policies.js';
import type { RateLimiter } from '../../ratelimit/types.js';
import { isRelayed } from '../../cluster/replay-request.js';

export interface AdminAuthOptions {
  /** SHA-256 of ADMIN_KEY. */
  keyHash: string;
  /** Failed attempts per client address: the API's `auth` limiter (shared through Redis with REDIS_URL). */
  limiter: RateLimiter;
  clock: Clock;
  metrics?: Pick<Metrics, 'rateLimited'>;
}

export function adminAuth(options: AdminAuthOptions) {
  const { keyHash, limiter, clock, metrics } = options;
  return async (request: FastifyRequest): Promise<void> => {
    const valid = matchesHash(bearerToken(request.headers.authorization) ?? '', keyHash);
    if (isRelayed(request)) {
      if (!valid) throw invalidKey({});
      return;
    }
    const key = `admin:${clientAddressKey(request.ip)}`;
    const now = clock.now();
    const decision = valid ? await limiter.peek(key, ADMIN_AUTH_POLICY, now) : await limiter.consume(key, ADMIN_AUTH_POLICY, now);
    const headers = rateLimitHeaders(ADMIN_AUTH_POLICY_NAME, ADMIN_AUTH_POLICY, decision);
    if (!decision.allowed) {
      metrics?.rateLimited.inc({ policy: ADMIN_AUTH_POLICY_NAME });
      throw new AppError(
        'rate_limited',
        `too many failed admin-key attempts from this address; try again in ${headers['Retry-After']} s with the right key (ADMIN_KEY, or DATA_DIR/admin.key)`,
        { headers },
      );
    }
    if (!valid) throw invalidKey(headers);
  };
}

function invalidKey(headers: Record<string, string>): AppError {
  return new AppError('invalid_admin_key', 'Send Authorization: Bearer <ADMIN_KEY>.', {
    headers: { ...headers, 'WWW-Authenticate': 'Bearer realm="audience-admin"' },
  });
}
