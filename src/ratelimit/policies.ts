/** The named rate-limit policies of the Audience API (SPEC 6.2). */
import { AppError } from '../core/errors.js';
import type { RatePolicy } from './types.js';

/** Per org, shared by all its tokens: the org's `rateLimit` per second, with a burst of the same size. */
export const ORG_POLICY_NAME = 'org';
export function orgRatePolicy(org: { rateLimit: number }): RatePolicy {
  return { ratePerSecond: org.rateLimit, burst: org.rateLimit };
}

/**
 * Per client address, counting only requests whose token failed (missing, malformed, unknown, revoked,
 * expired), so tokens cannot be brute-forced. A correctly configured client never fails, so 10/s is
 * generous for it, and useless to a guesser facing ~178 bits.
 */
export const AUTH_FAILURE_POLICY_NAME = 'auth';
export const AUTH_FAILURE_POLICY: RatePolicy = { ratePerSecond: 10, burst: 10 };

/**
 * Per client address, failed admin authentications only. ADMIN_KEY may be chosen by a person (the
 * generated one has ~238 bits), so guessing must stay slow: a burst of 10 covers a person retyping a key
 * or a script started with a wrong one, then one failure per second (86,400 guesses a day per address).
 * An address over it is refused with 429 whatever key it sends, and a person who typed the key wrong
 * ten times waits at most 1 s before the right one works.
 */
export const ADMIN_AUTH_POLICY_NAME = 'admin-auth';
export const ADMIN_AUTH_POLICY: RatePolicy = { ratePerSecond: 1, burst: 10 };

/** A 429 problem carrying the rate-limit headers (from rateLimitHeaders, including Retry-After). */
export function rateLimitedError(headers: Record<string, string>): AppError {
  return new AppError('rate_limited', `too many requests; retry after ${headers['Retry-After'] ?? 1} s`, { headers });
}
