/**
 * The Audience API's authentication, an `onRequest` hook of its routes (as admin/auth.ts is of the admin
 * routes): the bearer token, then the org's access to the API, then the org's rate limit, so every answer
 * after authentication carries the org's RateLimit headers. Failed authentications are limited per
 * client address (AUTH_FAILURE_POLICY). The org reaches the route as `request.audienceOrg`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Context } from '../../core/context.js';
import { AppError } from '../../core/errors.js';
import { bearerToken } from '../../http/bearer.js';
import type { Metrics } from '../../ops/metrics.js';
import type { OrgStore } from '../../control/org-store.js';
import type { Org } from '../../generated/org.js';
import { policyHeader, rateLimitHeaders, remainingHeader } from '../../ratelimit/headers.js';
import { AUTH_FAILURE_POLICY, AUTH_FAILURE_POLICY_NAME, ORG_POLICY_NAME, orgRatePolicy, rateLimitedError } from '../../ratelimit/policies.js';
import type { RateDecision, RateLimiter, RatePolicy } from '../../ratelimit/types.js';
import type { TokenMemo, TokenStore } from '../../control/token-store.js';
import { isRelayed } from '../../cluster/replay-request.js';


declare module 'fastify' {
  interface FastifyRequest {
    /** The org whose token the Audience API request carries (set by audienceAuth). */
    audienceOrg: Org | null;
  }
}

export interface AudienceAuthDeps {
  ctx: Context;
  tokens: TokenStore;
  orgs: OrgStore;
  /** Per-org budget, shared by all the org's tokens. */
  orgLimiter: RateLimiter;
  /** Per client address, failed authentications only. */
  authLimiter: RateLimiter;
  metrics: Metrics;
}

const WWW_AUTHENTICATE = 'Bearer realm="audience", error="invalid_token"';

/** Per keep-alive connection, the last token that authenticated on it (TokenStore.authenticate): gone with the socket. */
const memos = new WeakMap<object, TokenMemo>();

function memoOf(socket: object | null | undefined): TokenMemo | undefined {
  // inject() has no real socket worth remembering (and relayed calls come one per request).
  if (!socket) return undefined;
  let memo = memos.get(socket);
  if (!memo) memos.set(socket, (memo = { token: '', hash: '' }));
  return memo;
}

export function audienceAuth(deps: AudienceAuthDeps) {
  const { ctx, tokens, orgs, metrics } = deps;
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const now = ctx.clock.now();
    const auth = tokens.authenticate(bearerToken(request.headers.authorization), now, memoOf(request.raw.socket));
    if (!auth.ok) {
      const decision = await deps.authLimiter.consume(`auth:${request.ip}`, AUTH_FAILURE_POLICY, now);
      const headers = rateLimitHeaders(AUTH_FAILURE_POLICY_NAME, AUTH_FAILURE_POLICY, decision);
      if (!decision.allowed) {
        metrics.rateLimited.inc({ policy: AUTH_FAILURE_POLICY_NAME });
        throw rateLimitedError(headers);
      }
      throw new AppError('invalid_token', `the bearer token is ${auth.reason}`, {
        headers: { ...headers, 'WWW-Authenticate': WWW_AUTHENTICATE },
      });
    }

    const org = orgs.cached(auth.org);
    if (!org) throw new AppError('invalid_token', 'the bearer token is unknown', { headers: { 'WWW-Authenticate': WWW_AUTHENTICATE } });
    if (!org.audienceApi) {
      throw new AppError(
        'audience_api_not_enabled',
        `The Audience API is not enabled for this org. An operator enables it with \`npx audiencectl org update ${org.slug} --audience-api\` ` +
          `(or PATCH /admin/v1/orgs/${org.slug} with {"audienceApi": true}).`,
      );
    }
    // The in-memory limiter decides at once: no await (a microtask per lookup) unless Redis is asked.
    // A call relayed from another process (routes answered by the org's shard) was charged there.
    const charged = isRelayed(request) ? undefined : chargeOrg(deps, org, reply, now, 1);
    if (charged) await charged;
    request.audienceOrg = org;
  };
}

/**
 * The org of a token that passes audienceAuth, or undefined for any other token (missing, unknown,
 * revoked, expired, its org gone or without the API): audienceAuth's passing case without its answers,
 * for a path that leaves every other case to it (contacts-first.ts).
 */
export function permittedOrg(deps: Pick<AudienceAuthDeps, 'tokens' | 'orgs'>, authorization: string | undefined, now: number, socket: object | null | undefined): Org | undefined {
  const auth = deps.tokens.authenticate(bearerToken(authorization), now, memoOf(socket));
  if (!auth.ok) return undefined;
  const org = deps.orgs.cached(auth.org);
  return org?.audienceApi ? org : undefined;
}

/** An org's budget as the hot path needs it: made once per org settings object (a change is a new one). */
export interface OrgBudget {
  rateLimit: number;
  policy: RatePolicy;
  key: string;
  policyHeader: string;
}
const budgets = new WeakMap<Org, OrgBudget>();

export function budgetOf(org: Org): OrgBudget {
  const known = budgets.get(org);
  if (known && known.rateLimit === org.rateLimit) return known;
  const policy = orgRatePolicy(org);
  const budget = { rateLimit: org.rateLimit, policy, key: `org:${org.slug}`, policyHeader: policyHeader(ORG_POLICY_NAME, policy) };
  budgets.set(org, budget);
  return budget;
}

/**
 * Draws `cost` units (at most the org's burst: the caller's to keep) from the org's budget: 429
 * `rate_limited` when they are not there, the RateLimit headers of what is left otherwise. Returns a
 * promise only when the limiter answers with one (Redis).
 */
export function chargeOrg(deps: Pick<AudienceAuthDeps, 'orgLimiter' | 'metrics'>, org: Org, reply: FastifyReply, now: number, cost: number): Promise<void> | undefined {
  const budget = budgetOf(org);
  const consumed = deps.orgLimiter.consume(budget.key, budget.policy, now, cost);
  return consumed instanceof Promise ? consumed.then((decision) => settle(deps, budget, reply, decision)) : settle(deps, budget, reply, consumed);
}

function settle(deps: Pick<AudienceAuthDeps, 'metrics'>, budget: OrgBudget, reply: FastifyReply, decision: RateDecision): undefined {
  if (!decision.allowed) {
    deps.metrics.rateLimited.inc({ policy: ORG_POLICY_NAME });
    throw rateLimitedError(rateLimitHeaders(ORG_POLICY_NAME, budget.policy, decision));
  }
  reply.header('RateLimit-Policy', budget.policyHeader);
  reply.header('RateLimit', remainingHeader(ORG_POLICY_NAME, decision));
  return undefined;
}
