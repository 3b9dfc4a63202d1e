/**
 * Admin API for flows (SPEC 8): create, list, get, replace, start, pause, run now, the sends, per
 * contact the decision taken on each trigger row, and the experiment's results. Registered inside the admin scope.
 */
import type { ConsentStore } from '../../../../reactions/consent/consent-store.js';
import type { UnsubscribeLinks } from '../../../../reactions/consent/unsubscribe-link.js';
import type { FastifyInstance } from 'fastify';
import { PAGE_LIMITS, pageOf, pageQuerySchema, pageRequest, withoutKey } from '../../../../db/paging.js';
import { parseIdentity } from '../../../../events/profiles/parse-identity.js';
import { webhookSecretFor } from '../../../../reactions/channels/webhook-signing.js';
import type { OrgStorage } from '../../../../db/org-storage.js';
import { AppError } from '../../../../core/errors.js';
import type { OrgStore } from '../../../../control/org-store.js';
import type { ProfileIndex } from '../../../../events/profiles/profile-index.js';
import { jsonRow } from '../../../../reactions/triggers/json-row.js';
import type { TriggerStore } from '../../../../reactions/triggers/trigger-store.js';
import type { TriggerRuns } from '../../../../reactions/flows/run/trigger-runs.js';
import { type FlowStore, toApiFlow } from '../../../../reactions/flows/store/flow-store.js';
import { checkFlow } from '../../../../reactions/flows/rules/validate-flow.js';
import { notTriggered, registerFlowSimulateRoute } from './simulate.js';
import { registerFlowWaitsRoute } from './waits.js';
import { registerFlowOccurrencesRoute } from './occurrences.js';
import { flowResults } from '../../../../reactions/flows/reports/flow-results.js';
import { flowActivity } from '../../../../reactions/flows/reports/flow-activity.js';
import { type RangeQuery, rangeQuerySchema, timeRange } from '../../../../db/time-buckets.js';
import { QUERY_NAME } from '../../../../reactions/triggers/trigger-store.js';
import { previewMessage } from '../../../../reactions/flows/render/message-preview.js';
import { DECISIONS_KEYSET, type DecisionRow, type SendDelivery, SENDS_KEYSET, type SendReports } from '../../../../reactions/flows/reports/send-reports.js';
import { WaitStore } from '../../../../reactions/flows/store/wait-store.js';
import { OccurrenceStore } from '../../../../reactions/flows/store/occurrence-store.js';
import { SendStore } from '../../../../reactions/flows/store/send-store.js';
import type { TemplateRenderer } from '../../../../reactions/flows/render/template-renderer.js';
import { validatedAs } from '../../../../openapi/route-schema.js';
import { definitionValidation, flowSchemas } from './schema.js';

const listQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { identity: { type: 'string' }, status: { type: 'string' }, ...pageQuerySchema },
} as const;
/** A `sent` decision whose delivery then failed or was dead-lettered reads as failed. */
function decisionAnswer(d: DecisionRow, send: SendDelivery | undefined) {
  return {
    eventId: d.event_id,
    identity: d.identity,
    identityType: d.identity_type,
    email: d.email,
    outcome: d.outcome === 'sent' && (send?.status === 'failed' || send?.status === 'dead') ? 'failed' : d.outcome,
    variant: d.variant,
    sendId: d.send_id,
    reason: send?.last_error ?? d.reason,
    deliveryStatus: send?.status ?? null,
    attempts: send?.attempts ?? null,
    triggerHash: d.trigger_hash,
    decidedAt: d.decided_at.toISOString(),
  };
}

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
type ListQuery = { identity?: string; status?: string; limit?: string; cursor?: string };

export function registerFlowRoutes(
  app: FastifyInstance,
  deps: {
    storage: OrgStorage;
    orgs: OrgStore;
    flows: FlowStore;
    /** What the routes read of sends and decisions, of entries in their steps, and of scheduled occurrences. */
    reports: SendReports;
    waits: Pick<WaitStore, 'list'>;
    occurrences: Pick<OccurrenceStore, 'page'>;
    triggers: TriggerStore;
    runner: TriggerRuns | undefined;
    renderer: Pick<TemplateRenderer, 'render'> | undefined;
    profiles: ProfileIndex;
    /** TRIGGER_TIMEOUT_MS: the trigger query of a message preview. */
    timeoutMs: number;
    webhookAllowPrivate: boolean;
    smtpConfigured: boolean;
    signingKey: string;
    consent: Pick<ConsentStore, 'topics'>;
    links: Pick<UnsubscribeLinks, 'forFlow'>;
    /** The context clock: where a results range without `to` ends. */
    now: () => number;
  },
): void {
  const { storage, orgs, flows } = deps;
  const sends = deps.reports;
  const check = async (org: string, body: unknown) => {
    // A trigger or segment file saved a moment ago counts as saved, not as the last poll saw it.
    const named = body as { trigger?: unknown; segmentFilter?: { segment?: unknown }; audience?: { segment?: unknown } } | null;
    if (typeof named?.trigger === 'string') await deps.triggers.refresh(org, 'trigger', named.trigger);
    if (typeof named?.segmentFilter?.segment === 'string') await deps.triggers.refresh(org, 'segment', named.segmentFilter.segment);
    if (typeof named?.audience?.segment === 'string') await deps.triggers.refresh(org, 'segment', named.audience.segment);
    const topics = new Set((await deps.consent.topics(org)).map((t) => t.topic));
    return checkFlow(body, { org, triggers: deps.triggers, topics, webhookAllowPrivate: deps.webhookAllowPrivate, smtpConfigured: deps.smtpConfigured });
  };

  app.post<{ Params: { slug: string } }>('/admin/v1/orgs/:slug/flows', { schema: flowSchemas.create, validatorCompiler: definitionValidation }, async (request, reply) => {
    const org = await orgs.get(request.params.slug);
    return reply.code(201).send(toApiFlow(await flows.create(org.slug, await check(org.slug, request.body))));
  });

  app.get<{ Params: { slug: string }; Querystring: { archived?: 'true' | 'false' } }>('/admin/v1/orgs/:slug/flows', { schema: flowSchemas.list }, async (request) => {
    const org = await orgs.get(request.params.slug);
    const archived = request.query.archived === 'true';
    return { flows: flows.list(org.slug).filter((f) => (f.status === 'archived') === archived).map(toApiFlow) };
  });

  app.delete<{ Params: Params }>('/admin/v1/orgs/:slug/flows/:id', { schema: flowSchemas.archive }, async (request) => {
    const org = await orgs.get(request.params.slug);
    const { flow, removed } = await flows.archive(org.slug, request.params.id, async (c) => ({
      sends: await SendStore.cancelFlow(c, request.params.id),
      entries: await WaitStore.removeFlow(c, request.params.id),
      occurrences: await OccurrenceStore.stopFlow(c, request.params.id, deps.now()),
    }));
    if (removed) request.logDetails = { ...request.logDetails, ...removed };
    return { flow: toApiFlow(flow), stopped: removed ?? { sends: 0, entries: 0, occurrences: 0 } };
  });

  app.get<{ Params: Params }>('/admin/v1/orgs/:slug/flows/:id', { schema: flowSchemas.get }, async (request) => {
    const org = await orgs.get(request.params.slug);
    return toApiFlow(flows.get(org.slug, request.params.id));
  });

  app.put<{ Params: Params }>('/admin/v1/orgs/:slug/flows/:id', { schema: flowSchemas.replace, validatorCompiler: definitionValidation }, async (request) => {
    const org = await orgs.get(request.params.slug);
    const definition = await check(org.slug, request.body);
    if (definition.id !== request.params.id) throw new AppError('invalid_flow', `the body's id "${definition.id}" is not the flow's id "${request.params.id}"`);
    return toApiFlow(await flows.replace(org.slug, definition));
  });

  app.post<{ Params: Params }>('/admin/v1/orgs/:slug/flows/:id/start', { schema: flowSchemas.start }, async (request) => {
    const org = await orgs.get(request.params.slug);
    const flow = flows.changeable(org.slug, request.params.id);
    // The trigger may have been refused since the flow was saved: check again before going live.
    await check(org.slug, flow.definition);
    return toApiFlow(await flows.start(org.slug, request.params.id));
  });

  app.post<{ Params: Params }>('/admin/v1/orgs/:slug/flows/:id/pause', { schema: flowSchemas.pause }, async (request) => {
    const org = await orgs.get(request.params.slug);
    return toApiFlow(await flows.pause(org.slug, request.params.id));
  });

  /** Runs the flow's window now instead of waiting for its schedule (a live flow only). */
  // No body is a run request too: validated as `{}`, so any member at all is refused by name.
  const noBodyIsEmpty = async (request: { body: unknown }) => void (request.body ??= {});
  app.post<{ Params: Params }>('/admin/v1/orgs/:slug/flows/:id/run', { schema: flowSchemas.run, preValidation: noBodyIsEmpty }, async (request) => {
    const org = await orgs.get(request.params.slug);
    notTriggered(flows.changeable(org.slug, request.params.id).definition);
    if (!deps.runner) throw new AppError('invalid_request', 'this process does not run flows (ROLES has no flows)');
    const summary = await deps.runner.run(org.slug, request.params.id);
    const outcomes: Record<string, number> = {};
    for (const d of summary.decisions) outcomes[d.outcome] = (outcomes[d.outcome] ?? 0) + 1;
    return { skipped: summary.skipped ?? null, rows: summary.rows, outcomes, flow: toApiFlow(flows.get(org.slug, request.params.id)) };
  });

  app.get<{ Params: Params; Querystring: ListQuery }>(
    '/admin/v1/orgs/:slug/flows/:id/sends',
    { schema: flowSchemas.sends, validatorCompiler: validatedAs({ querystring: listQuery }) },
    async (request) => {
      const org = await orgs.get(request.params.slug);
      flows.get(org.slug, request.params.id);
      const email = emailOf(org.slug, request.query.identity, deps.profiles);
      const status = request.query.status ?? null;
      const page = pageRequest(request.query, PAGE_LIMITS.sends, ['sends', org.slug, request.params.id, email ?? '', status ?? ''], SENDS_KEYSET);
      const rows = await sends.sendsPage(org.slug, request.params.id, { email, status }, page);
      const { items, nextCursor } = pageOf(rows, page, (row) => jsonRow(withoutKey(row)), SENDS_KEYSET);
      return { sends: items, nextCursor };
    },
  );

  app.get<{ Params: Params; Querystring: ListQuery }>(
    '/admin/v1/orgs/:slug/flows/:id/decisions',
    { schema: flowSchemas.decisions, validatorCompiler: validatedAs({ querystring: listQuery }) },
    async (request) => {
      const org = await orgs.get(request.params.slug);
      flows.get(org.slug, request.params.id);
      const email = emailOf(org.slug, request.query.identity, deps.profiles);
      const rawIdentity = request.query.identity?.slice(request.query.identity.indexOf(':') + 1) ?? null;
      const page = pageRequest(request.query, PAGE_LIMITS.decisions, ['decisions', org.slug, request.params.id, request.query.identity ?? ''], DECISIONS_KEYSET);
      const rows = await sends.decisionsPage(org.slug, request.params.id, { email, identity: rawIdentity }, page);
      // The delivery of the page's sends only (a query of its own: see SendStore.deliveries).
      const entered = (d: DecisionRow) => (d.outcome === 'sent' || d.outcome === 'holdout' ? d.send_id : null);
      const deliveries = await sends.deliveries(org.slug, rows.flatMap((d) => entered(d) ?? []));
      const { items, nextCursor } = pageOf(rows, page, (d) => decisionAnswer(d, deliveries.get(entered(d) ?? '')), DECISIONS_KEYSET);
      return { decisions: items, nextCursor };
    },
  );

  /** Entered, sent and converted per variant and for the holdout, with the statistics (flow-results.ts). */
  app.get<{ Params: Params; Querystring: { from?: string; to?: string } }>(
    '/admin/v1/orgs/:slug/flows/:id/results',
    { schema: flowSchemas.results },
    async (request) => {
      const org = await orgs.get(request.params.slug);
      const flow = flows.get(org.slug, request.params.id);
      const fromMs = request.query.from === undefined ? null : Date.parse(request.query.from);
      // Without `to`, every entry so far (one made this millisecond included); the answer says until now.
      const toMs = request.query.to === undefined ? null : Date.parse(request.query.to);
      if (fromMs !== null && toMs !== null && fromMs >= toMs) throw new AppError('invalid_request', `from (${request.query.from}) must be before to (${request.query.to})`);
      const days = await sends.resultsByDay(org.slug, flow.definition.id, flow.definition.goal ?? null, fromMs, toMs);
      return flowResults(flow.definition, days, { fromMs, toMs: toMs ?? deps.now() });
    },
  );

  /** Sends per status over time and the funnel (flow-activity.ts). */
  app.get<{ Params: Params; Querystring: RangeQuery }>(
    '/admin/v1/orgs/:slug/flows/:id/activity',
    { schema: flowSchemas.activity, validatorCompiler: validatedAs({ querystring: { type: 'object', additionalProperties: false, properties: rangeQuerySchema } }) },
    async (request) => {
      const org = await orgs.get(request.params.slug);
      const flow = flows.get(org.slug, request.params.id);
      const range = timeRange(request.query, deps.now());
      return flowActivity(flow.definition.id, range, await sends.activity(org.slug, flow.definition.id, range.fromMs, range.toMs, range.bucketMs));
    },
  );

  /**
   * A message as the flow would send it, rendered against the first row the trigger returns over the last
   * 24 hours, with that contact's profile: the template editor's live preview. With `branches` and
   * `experiment`, the message the run would pick for that row (and `variant`). Nothing is sent or stored.
   */
  app.post<{ Params: { slug: string }; Body: { trigger: string; message: unknown; branches?: unknown; experiment?: unknown; flowName?: string; variant?: string } }>(
    '/admin/v1/orgs/:slug/flows/message-preview',
    { schema: flowSchemas.messagePreview, validatorCompiler: validatedAs({ body: messagePreviewBody }) },
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
      return previewMessage({ storage, triggers: deps.triggers, profiles: deps.profiles, renderer: deps.renderer, timeoutMs: deps.timeoutMs, links: deps.links }, org.slug, definition, variant);
    },
  );

  registerFlowSimulateRoute(app, { ...deps, check });
  registerFlowWaitsRoute(app, deps);
  registerFlowOccurrencesRoute(app, deps);

  /** The org's Standard Webhooks signing secret (derived from the master key, so never stored). */
  app.get<{ Params: { slug: string } }>('/admin/v1/orgs/:slug/webhook-secret', { schema: flowSchemas.webhookSecret }, async (request) => {
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
