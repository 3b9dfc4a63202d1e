/**
 * Admin API for flows (SPEC 8): create, list, get, replace, start, pause, run now, the sends, and per
 * contact the decision taken on each trigger row. Registered inside the admin scope.
 */
import type { FastifyInstance } from 'fastify';
import { limitOf, slugParams, slugSchema } from '../admin/route-params.js';
import { parseIdentity } from '../audience/parse-identity.js';
import { webhookSecretFor } from '../channels/webhook-signing.js';
import type { OrgStorage } from '../storage/org-storage.js';
import { AppError } from '../errors.js';
import type { OrgStore } from '../orgs/org-store.js';
import type { ProfileIndex } from '../profiles/profile-index.js';
import { jsonRow } from '../triggers/json-row.js';
import type { TriggerStore } from '../triggers/trigger-store.js';
import type { FlowRunner } from './flow-runner.js';
import { type FlowStore, toApiFlow } from './flow-store.js';
import { checkFlow } from './validate-flow.js';

const flowParams = { type: 'object', properties: { slug: slugSchema, id: { type: 'string' } }, required: ['slug', 'id'] } as const;
const listQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { identity: { type: 'string' }, status: { type: 'string' }, limit: { type: 'string', pattern: '^[0-9]{1,4}$' } },
} as const;

type Params = { slug: string; id: string };
type ListQuery = { identity?: string; status?: string; limit?: string };

export function registerFlowRoutes(
  app: FastifyInstance,
  deps: {
    storage: OrgStorage;
    orgs: OrgStore;
    flows: FlowStore;
    triggers: TriggerStore;
    runner: FlowRunner | undefined;
    profiles: ProfileIndex;
    webhookAllowPrivate: boolean;
    smtpConfigured: boolean;
    signingKey: string;
  },
): void {
  const { storage, orgs, flows } = deps;
  const check = async (org: string, body: unknown) => {
    // A trigger or segment file saved a moment ago counts as saved, not as the last poll saw it.
    const named = body as { trigger?: unknown; segmentFilter?: { segment?: unknown } } | null;
    if (typeof named?.trigger === 'string') await deps.triggers.refresh(org, 'trigger', named.trigger);
    if (typeof named?.segmentFilter?.segment === 'string') await deps.triggers.refresh(org, 'segment', named.segmentFilter.segment);
    return checkFlow(body, { org, triggers: deps.triggers, webhookAllowPrivate: deps.webhookAllowPrivate, smtpConfigured: deps.smtpConfigured });
  };

  app.post<{ Params: { slug: string } }>('/admin/v1/orgs/:slug/flows', { schema: { params: slugParams } }, async (request, reply) => {
    const org = await orgs.get(request.params.slug);
    return reply.code(201).send(toApiFlow(await flows.create(org.slug, await check(org.slug, request.body))));
  });

  app.get<{ Params: { slug: string } }>('/admin/v1/orgs/:slug/flows', { schema: { params: slugParams } }, async (request) => {
    const org = await orgs.get(request.params.slug);
    return { flows: flows.list(org.slug).map(toApiFlow) };
  });

  app.get<{ Params: Params }>('/admin/v1/orgs/:slug/flows/:id', { schema: { params: flowParams } }, async (request) => {
    const org = await orgs.get(request.params.slug);
    return toApiFlow(flows.get(org.slug, request.params.id));
  });

  app.put<{ Params: Params }>('/admin/v1/orgs/:slug/flows/:id', { schema: { params: flowParams } }, async (request) => {
    const org = await orgs.get(request.params.slug);
    const definition = await check(org.slug, request.body);
    if (definition.id !== request.params.id) throw new AppError('invalid_flow', `the body's id "${definition.id}" is not the flow's id "${request.params.id}"`);
    return toApiFlow(await flows.replace(org.slug, definition));
  });

  app.post<{ Params: Params }>('/admin/v1/orgs/:slug/flows/:id/start', { schema: { params: flowParams } }, async (request) => {
    const org = await orgs.get(request.params.slug);
    const flow = flows.get(org.slug, request.params.id);
    // The trigger may have been refused since the flow was saved: check again before going live.
    await check(org.slug, flow.definition);
    return toApiFlow(await flows.start(org.slug, request.params.id));
  });

  app.post<{ Params: Params }>('/admin/v1/orgs/:slug/flows/:id/pause', { schema: { params: flowParams } }, async (request) => {
    const org = await orgs.get(request.params.slug);
    return toApiFlow(await flows.pause(org.slug, request.params.id));
  });

  /** Runs the flow's window now instead of waiting for its schedule (a live flow only). */
  app.post<{ Params: Params }>('/admin/v1/orgs/:slug/flows/:id/run', { schema: { params: flowParams } }, async (request) => {
    const org = await orgs.get(request.params.slug);
    flows.get(org.slug, request.params.id);
    if (!deps.runner) throw new AppError('invalid_request', 'this process does not run flows (ROLES has no flows)');
    const summary = await deps.runner.run(org.slug, request.params.id);
    const outcomes: Record<string, number> = {};
    for (const d of summary.decisions) outcomes[d.outcome] = (outcomes[d.outcome] ?? 0) + 1;
    return { skipped: summary.skipped ?? null, rows: summary.rows, outcomes, flow: toApiFlow(flows.get(org.slug, request.params.id)) };
  });

  app.get<{ Params: Params; Querystring: ListQuery }>(
    '/admin/v1/orgs/:slug/flows/:id/sends',
    { schema: { params: flowParams, querystring: listQuery } },
    async (request) => {
      const org = await orgs.get(request.params.slug);
      flows.get(org.slug, request.params.id);
      const email = emailOf(org.slug, request.query.identity, deps.profiles);
      const rows = await storage.org(org.slug).all(
        `SELECT send_id AS "sendId", email, event_id AS "eventId", variant, channel, status, attempts,
                last_error AS "lastError", trigger_hash AS "triggerHash", created_at AS "createdAt", sent_at AS "sentAt"
           FROM flow_sends
          WHERE org = $1 AND flow_id = $2 AND ($3::VARCHAR IS NULL OR email = $3) AND ($4::VARCHAR IS NULL OR status = $4)
          ORDER BY created_at DESC, send_id LIMIT $5`,
        [org.slug, request.params.id, email, request.query.status ?? null, limitOf(request.query.limit, 100, 1000)],
      );
      return { sends: rows.map(jsonRow) };
    },
  );

  app.get<{ Params: Params; Querystring: ListQuery }>(
    '/admin/v1/orgs/:slug/flows/:id/decisions',
    { schema: { params: flowParams, querystring: listQuery } },
    async (request) => {
      const org = await orgs.get(request.params.slug);
      flows.get(org.slug, request.params.id);
      const email = emailOf(org.slug, request.query.identity, deps.profiles);
      const rawIdentity = request.query.identity?.slice(request.query.identity.indexOf(':') + 1) ?? null;
      const rows = await storage.org(org.slug).all<Record<string, unknown>>(
        // A `sent` decision whose delivery then failed or was dead-lettered reads as failed.
        `SELECT d.event_id AS "eventId", d.identity, d.identity_type AS "identityType", d.email,
                CASE WHEN d.outcome = 'sent' AND s.status IN ('failed', 'dead') THEN 'failed' ELSE d.outcome END AS outcome,
                d.variant, d.send_id AS "sendId", coalesce(s.last_error, d.reason) AS reason,
                s.status AS "deliveryStatus", s.attempts, d.trigger_hash AS "triggerHash", d.decided_at AS "decidedAt"
           FROM flow_decisions d
           LEFT JOIN flow_sends s ON s.send_id = d.send_id AND d.outcome IN ('sent', 'holdout')
          WHERE d.org = $1 AND d.flow_id = $2 AND ($3::VARCHAR IS NULL OR d.email = $3 OR d.identity = $4)
          ORDER BY d.decided_at DESC, d.event_id LIMIT $5`,
        [org.slug, request.params.id, email, rawIdentity, limitOf(request.query.limit, 100, 1000)],
      );
      return { decisions: rows.map(jsonRow) };
    },
  );

  /** The org's Standard Webhooks signing secret (derived from the master key, so never stored). */
  app.get<{ Params: { slug: string } }>('/admin/v1/orgs/:slug/webhook-secret', { schema: { params: slugParams } }, async (request) => {
    const org = await orgs.get(request.params.slug);
    return { secret: webhookSecretFor(deps.signingKey, org.slug) };
  });
}

/** `identity=<type>:<value>` to the contact's e-mail (null when absent); 400 when malformed. */
function emailOf(org: string, raw: string | undefined, profiles: ProfileIndex): string | null {
  if (raw === undefined) return null;
  const identity = parseIdentity(raw);
  if (!identity) throw new AppError('invalid_identity', 'identity must be email:<address>, email-hash:<sha256> or user_id:<id>');
  if (identity.type === 'email') return identity.value;
  return (profiles.find(org, identity.type, identity.value)?.email_address as string | undefined) ?? identity.value;
}
