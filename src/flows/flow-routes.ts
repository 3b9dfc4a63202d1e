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
import { microsToIso, newestVisibleAt } from '../compaction/visible-at.js';
import { QueryFailed, runSandboxed, windowOf, withSandbox } from '../triggers/sandbox.js';
import { QUERY_NAME } from '../triggers/trigger-store.js';
import { eventData, messageFor, resolveEmail } from './decide.js';
import type { TemplateRenderer } from './template-renderer.js';

/** A message preview renders against the first row the trigger returns over this window. */
const MESSAGE_PREVIEW_HOURS = 24;

const flowParams = { type: 'object', properties: { slug: slugSchema, id: { type: 'string' } }, required: ['slug', 'id'] } as const;
const listQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { identity: { type: 'string' }, status: { type: 'string' }, limit: { type: 'string', pattern: '^[0-9]{1,4}$' } },
} as const;

type Params = { slug: string; id: string };
const messagePreviewBody = {
  type: 'object',
  additionalProperties: false,
  required: ['trigger', 'message'],
  properties: {
    trigger: { type: 'string', pattern: QUERY_NAME.source },
    message: { type: 'object' },
    branches: { type: 'array' },
    experiment: { type: 'object' },
    flowName: { type: 'string', minLength: 1, maxLength: 200 },
    variant: { type: 'string', pattern: '^[A-Za-z0-9 _.-]{1,64}$' },
  },
} as const;
type ListQuery = { identity?: string; status?: string; limit?: string };

export function registerFlowRoutes(
  app: FastifyInstance,
  deps: {
    storage: OrgStorage;
    orgs: OrgStore;
    flows: FlowStore;
    triggers: TriggerStore;
    runner: FlowRunner | undefined;
    renderer: Pick<TemplateRenderer, 'render'> | undefined;
    profiles: ProfileIndex;
    /** TRIGGER_TIMEOUT_MS: the trigger query of a message preview. */
    timeoutMs: number;
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

  /**
   * A message as the flow would send it, rendered against the first row the trigger returns over the last
   * 24 hours, with that contact's profile: the template editor's live preview. With `branches` and
   * `experiment`, the message the run would pick for that row (and `variant`). Nothing is sent or stored.
   */
  app.post<{ Params: { slug: string }; Body: { trigger: string; message: unknown; branches?: unknown; experiment?: unknown; flowName?: string; variant?: string } }>(
    '/admin/v1/orgs/:slug/flows/message-preview',
    { schema: { params: slugParams, body: messagePreviewBody } },
    async (request) => {
      const org = await orgs.get(request.params.slug);
      if (!deps.renderer) throw new AppError('invalid_request', 'this process does not run flows (ROLES has no flows)');
      const { trigger, message, branches, experiment, flowName = 'Preview', variant } = request.body;
      const definition = await check(org.slug, {
        id: 'preview',
        name: flowName,
        category: 'triggered',
        entry: 'when_contact_triggers_event',
        trigger,
        message,
        ...(branches === undefined ? {} : { branches }),
        ...(experiment === undefined ? {} : { experiment }),
      });
      const live = deps.triggers.live(org.slug, 'trigger', trigger)!;
      const db = storage.org(org.slug);
      const end = await db.exclusive(newestVisibleAt);
      const start = end - BigInt(MESSAGE_PREVIEW_HOURS * 3600) * 1_000_000n;
      let rows;
      try {
        rows = (await withSandbox(db, deps.timeoutMs, (c) => runSandboxed(c, live.checked, windowOf(start, end), 1))).rows;
      } catch (error) {
        if (error instanceof QueryFailed) throw new AppError('trigger_query_failed', error.reason);
        throw error;
      }
      const window = { from: microsToIso(start), to: microsToIso(end) };
      const row = rows[0];
      if (!row) return { window, row: null, rendered: null, error: `trigger ${trigger} returns no row over this window: send a sample event first` };
      const state = { profile: (type: 'email' | 'user_id' | 'email-hash', value: string) => deps.profiles.find(org.slug, type, value) };
      const email = resolveEmail(row.identity as string | null, row.identity_type as string | null, state);
      const data = {
        event: eventData(row),
        contact: { ...((email && deps.profiles.find(org.slug, 'email', email)) || { email_address: email }) },
        flow: { id: definition.id, name: definition.name },
        variant: variant ? { label: variant } : null,
      };
      // The message the run would pick: the variant's own, else the first branch that holds, else the flow's.
      const chosen = messageFor(definition, definition.experiment?.variants.find((v) => v.label === variant), data);
      const [result] = await deps.renderer.render([{ message: chosen, data }]);
      return { window, row: jsonRow(row), rendered: result!.ok ? result!.message : null, error: result!.ok ? null : result!.reason };
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
