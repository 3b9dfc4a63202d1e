/**
 * Rate-limit response headers (SPEC 6.2), in the structured-field form of the IETF
 * draft-ietf-httpapi-ratelimit-headers: `RateLimit-Policy: "org";q=50;w=1` and
 * `RateLimit: "org";r=<remaining>;t=<seconds>`, plus `Retry-After` on a denial.
 */
import type { RateDecision, RatePolicy } from './types.js';

// Policy names are ours, but they become a quoted sf-string: keep them to characters needing no escape.
const POLICY_NAME = /^[a-z][a-z0-9_-]*$/;

/**
 * `q` is the burst (what `r` counts down from) and `w` the seconds the quota takes to refill from empty
 * at the sustained rate; for the org policy (rate = burst) that is SPEC's `q=<rateLimit>;w=1`.
 * `t` and `Retry-After` are rounded up to whole seconds (a client that waits that long is allowed);
 * `Retry-After` is at least 1.
 */
export function rateLimitHeaders(policyName: string, policy: RatePolicy, decision: RateDecision): Record<string, string> {
  const headers: Record<string, string> = {
    'RateLimit-Policy': policyHeader(policyName, policy),
    RateLimit: remainingHeader(policyName, decision),
  };
  if (!decision.allowed) headers['Retry-After'] = String(Math.max(1, Math.ceil(decision.retryAfterSeconds)));
  return headers;
}

/** `RateLimit-Policy` alone (rateLimitHeaders's, for a path that sets its headers one by one). */
export function policyHeader(policyName: string, policy: RatePolicy): string {
  if (!POLICY_NAME.test(policyName)) throw new Error(`invalid rate-limit policy name: ${policyName}`);
  return `"${policyName}";q=${policy.burst};w=${Math.max(1, Math.ceil(policy.burst / policy.ratePerSecond))}`;
}

/** `RateLimit` alone. */
export function remainingHeader(policyName: string, decision: RateDecision): string {
  return `"${policyName}";r=${decision.remaining};t=${Math.ceil(decision.resetSeconds)}`;
}
