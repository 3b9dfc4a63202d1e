/**
 * GET /http/v1/status (issue 42): a partner sees, with its own credentials (HTTP Basic
 * `partnerId:partnerSecret`, or the write key as Basic's user name), what became of the events it sent to
 * its org environment, per event name over the last hour and the last 24 hours: accepted (stored, held for
 * an identity, or held then quarantined unresolved), stored, held, quarantined, plan violations, and the
 * five most frequent reasons. Nothing of another org or environment, no contact data: counts and reasons
 * (JSON pointers and schema messages). Counted from the org's database, so an event acknowledged a moment
 * ago shows once compaction has stored it (seconds). Limited per partner (1 a second, bursts of 10) and,
 * for failed authentications, per client address. A process without the org's database relays the
 * request to the one that has it (NATS mode), which authenticates the partner again and answers.
 */
import type { FastifyInstance } from 'fastify';
import type { PartnerIdentity, PartnerRegistry } from '../../control/partner-registry.js';
import type { Context } from '../../core/context.js';
import { AppError } from '../../core/errors.js';
import type { OrgStorage } from '../../db/org-storage.js';
import { type DeliveryCounts, deliveryCounts, topReasons } from '../../events/compaction/delivery-counts.js';
import { basicCredentials } from '../../http/bearer.js';
import { object, operationSchema } from '../../openapi/route-schema.js';
import { rateLimitHeaders } from '../../ratelimit/headers.js';
import { AUTH_FAILURE_POLICY, AUTH_FAILURE_POLICY_NAME, rateLimitedError } from '../../ratelimit/policies.js';
import type { RateLimiter, RatePolicy } from '../../ratelimit/types.js';
import type { ShardRelay } from '../../cluster/relay-to-shard.js';
import { isRelayed } from '../../cluster/replay-request.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const TOP_REASONS = 5;
/** Event names an answer lists (the most active first). */
const MAX_NAMES = 200;
const STATUS_POLICY_NAME = 'partner-status';
const STATUS_POLICY: RatePolicy = { ratePerSecond: 1, burst: 10 };

const counts = object({
  accepted: { type: 'integer', minimum: 0, description: 'Acknowledged and kept: stored, held, or held then quarantined as identity_unresolved' },
  stored: { type: 'integer', minimum: 0 },
  held: { type: 'integer', minimum: 0, description: 'Waiting for an identify of their clientId (up to 7 days)' },
  quarantined: { type: 'integer', minimum: 0, description: 'Refused (412/400 when sent) or held past 7 days' },
  violations: { type: 'integer', minimum: 0, description: 'Events that broke the tracking plan for their name (stored under observe, quarantined under enforce)' },
  reasons: { type: 'array', items: object({ reason: { type: 'string' }, count: { type: 'integer', minimum: 1 } }), description: `The ${TOP_REASONS} most frequent reasons: quarantine codes with their paths and messages, and plan violations` },
});

const schema = operationSchema({
  tag: 'Partners', operationId: 'partnerStatus', auth: 'partnerBasic',
  summary: 'What became of the events you sent: per event name, the last hour and the last 24 hours',
  description:
    'HTTP Basic with `partnerId:partnerSecret`, or the write key as the user name (no password). Your org environment only. ' +
    'Counted from what compaction has stored: an event acknowledged a second ago shows a few seconds later. At most 1 request a second per credential (bursts of 10).',
  ok: {
    status: 200,
    description: 'Per event name, the most active first',
    schema: object({
      org: { type: 'string' },
      environment: { type: 'string', enum: ['staging', 'production'] },
      asOf: { type: 'string', format: 'date-time' },
      events: { type: 'array', items: object({ eventName: { type: 'string' }, lastHour: counts, last24Hours: counts }) },
    }),
  },
  errors: ['invalid_credentials', 'rate_limited', 'shard_unavailable', 'storage_unavailable', 'org_unavailable'],
});

export interface StatusDeps {
  ctx: Context;
  registry: PartnerRegistry;
  storage: () => OrgStorage | undefined;
  /** Whether this process keeps the org's database. */
  owns: (org: string) => boolean;
  /** NATS mode: to the process that keeps it (it authenticates the partner again). */
  relay?: ShardRelay;
  limiter: RateLimiter;
}

export function registerStatusRoute(app: FastifyInstance, deps: StatusDeps): void {
  app.get('/http/v1/status', { schema }, async (request, reply) => {
    const now = deps.ctx.clock.now();
    const who = partnerOf(deps.registry, request.headers.authorization);
    if (!who) {
      const decision = await deps.limiter.consume(`auth:${request.ip}`, AUTH_FAILURE_POLICY, now);
      const headers = rateLimitHeaders(AUTH_FAILURE_POLICY_NAME, AUTH_FAILURE_POLICY, decision);
      if (!decision.allowed) throw rateLimitedError(headers);
      throw new AppError('invalid_credentials', 'Send HTTP Basic with partnerId:partnerSecret, or your write key as the user name and no password.', {
        headers: { ...headers, 'WWW-Authenticate': 'Basic realm="audience-collect"' },
      });
    }
    // A call relayed from another process was limited there.
    if (!isRelayed(request)) {
      const decision = await deps.limiter.consume(`status:${who.org}:${who.environment}`, STATUS_POLICY, now);
      const headers = rateLimitHeaders(STATUS_POLICY_NAME, STATUS_POLICY, decision);
      if (!decision.allowed) throw rateLimitedError(headers);
      void reply.headers(headers);
    }
    const storage = deps.storage();
    if (!storage || !deps.owns(who.org)) {
      if (deps.relay) return deps.relay.send(request, reply, { slug: who.org, body: Buffer.alloc(0), org: 'your org' });
      throw new AppError('shard_unavailable', 'this process keeps no database for your org and has no NATS to reach the one that does', { headers: { 'Retry-After': '1' } });
    }
    return { org: who.org, environment: who.environment, asOf: new Date(now).toISOString(), events: await deliveryStatus(storage, who, now) };
  });
}

/** Basic `partnerId:partnerSecret` (a partner), or `writeKey:` (a write key, Segment's form). */
export function partnerOf(registry: PartnerRegistry, authorization: string | undefined): PartnerIdentity | undefined {
  const basic = basicCredentials(authorization);
  if (!basic) return undefined;
  return basic.password === '' ? registry.authenticateWriteKey(basic.user) : registry.authenticate(basic.user, basic.password);
}

async function deliveryStatus(storage: OrgStorage, who: PartnerIdentity, now: number) {
  const names = await deliveryCounts(storage.org(who.org), { since: now - DAY_MS, recentSince: now - HOUR_MS, environment: who.environment, violations: true });
  const shown = (c: DeliveryCounts) => ({
    // Held, then never identified: it was accepted.
    accepted: c.stored + c.held + c.unresolved,
    stored: c.stored,
    held: c.held,
    quarantined: c.quarantined,
    violations: c.violations,
    reasons: topReasons(c.reasons, TOP_REASONS),
  });
  const busy = (c: DeliveryCounts) => c.stored + c.held + c.unresolved + c.quarantined;
  return names
    .sort((a, b) => busy(b.window) - busy(a.window) || (a.eventName < b.eventName ? -1 : 1))
    .slice(0, MAX_NAMES)
    .map(({ eventName, recent, window }) => ({ eventName, lastHour: shown(recent), last24Hours: shown(window) }));
}
