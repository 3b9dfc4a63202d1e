/**
 * Admin API for flows (SPEC 8): create, list, get, replace, start, pause, run now, the sends, and per
 * contact the decision taken on each trigger row. Registered inside the admin scope.
 */
import { listValue } from '@duckdb/node-api';
import type { FastifyInstance } from 'fastify';
import { type Keyset, PAGE_LIMITS, pageOf, pageQuerySchema, pageRequest, readPage, withoutKey } from '../../../db/paging.js';
import { parseIdentity } from '../../../events/profiles/parse-identity.js';
import { webhookSecretFor } from '../../../reactions/channels/webhook-signing.js';
import type { OrgStorage } from '../../../storage/org-storage.js';
import { AppError } from '../../../core/errors.js';
import type { OrgStore } from '../../../control/org-store.js';
import type { ProfileIndex } from '../../../events/profiles/profile-index.js';
import { jsonRow } from '../../../reactions/triggers/json-row.js';
import type { TriggerStore } from '../../../reactions/triggers/trigger-store.js';
import type { FlowRunner } from '../../../reactions/flows/flow-runner.js';
import { type FlowStore, toApiFlow } from '../../../reactions/flows/flow-store.js';
import { checkFlow } from '../../../reactions/flows/validate-flow.js';
import { microsToIso, newestVisibleAt } from '../../../events/compaction/visible-at.js';
import { QueryFailed, runSandboxed, windowOf, withSandbox } from '../../../reactions/triggers/sandbox.js';
import { QUERY_NAME } from '../../../reactions/triggers/trigger-store.js';
import { eventData, messageFor, resolveEmail } from '../../../reactions/flows/decide.js';
import type { TemplateRenderer } from '../../../reactions/flows/template-renderer.js';
import { validatedAs } from '../../../openapi/route-schema.js';
import { definitionValidation, flowSchemas } from './flows-schema.js';

/** A message preview renders against the first row the trigger returns over this window. */
const MESSAGE_PREVIEW_HOURS = 24;

const listQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { identity: { type: 'string' }, status: { type: 'string' }, ...pageQuerySchema },
} as const;
/** Newest first; send_id is the table's key. */
const SENDS_KEYSET: Keyset = {
  columns: [
    { sql: 'created_at', kind: 'micros', desc: true },
    { sql: 'send_id', kind: 'text', desc: false },
  ],
  rowid: 'rowid',
};
/** Newest run first, its rows by event id; a trigger returning one row twice makes identical decisions. */
const DECISIONS_KEYSET: Keyset = {
  columns: [
    { sql: 'decided_at', kind: 'micros', desc: true },
    { sql: "coalesce(event_id, '')", kind: 'text', desc: false },
  ],
  rowid: 'rowid',
};

interface DecisionRow {
  event_id: string | null;
  identity: string | null;
  identity_type: string | null;
  email: string | null;
  outcome: string;
  variant: string | null;
  send_id: string | null;
  reason: string | null;
  trigger_hash: string;
  decided_at: Date;
}

interface SendDelivery {
  send_id: string;
  status: string;
  attempts: number;
  last_error: string | null;
}

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

  app.post<{ Params: { slug: string } }>('/admin/v1/orgs/:slug/flows', { schema: flowSchemas.create, validatorCompiler: definitionValidation }, async (request, reply) => {
    const org = await orgs.get(request.params.slug);
    return reply.code(201).send(toApiFlow(await flows.create(org.slug, await check(org.slug, request.body))));
  });

  app.get<{ Params: { slug: string } }>('/admin/v1/orgs/:slug/flows', { schema: flowSchemas.list }, async (request) => {
    const org = await orgs.get(request.params.slug);
    return { flows: flows.list(org.slug).map(toApiFlow) };
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
    const flow = flows.get(org.slug, request.params.id);
    // The trigger may have been refused since the flow was saved: check again before going live.
    await check(org.slug, flow.definition);
    return toApiFlow(await flows.start(org.slug, request.params.id));
  });

  app.post<{ Params: Params }>('/admin/v1/orgs/:slug/flows/:id/pause', { schema: flowSchemas.pause }, async (request) => {
    const org = await orgs.get(request.params.slug);
    return toApiFlow(await flows.pause(org.slug, request.params.id));
  });

  /** Runs the flow's window now instead of waiting for its schedule (a live flow only). */
  app.post<{ Params: Params }>('/admin/v1/orgs/:slug/flows/:id/run', { schema: flowSchemas.run }, async (request) => {
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
    { schema: flowSchemas.sends, validatorCompiler: validatedAs({ querystring: listQuery }) },
    async (request) => {
      const org = await orgs.get(request.params.slug);
      flows.get(org.slug, request.params.id);
      const email = emailOf(org.slug, request.query.identity, deps.profiles);
      const status = request.query.status ?? null;
      const page = pageRequest(request.query, PAGE_LIMITS.sends, ['sends', org.slug, request.params.id, email ?? '', status ?? ''], SENDS_KEYSET);
      const rows = await readPage(
        storage.org(org.slug),
        {
          select: `send_id AS "sendId", email, event_id AS "eventId", variant, channel, status, attempts,
                   last_error AS "lastError", trigger_hash AS "triggerHash", created_at AS "createdAt", sent_at AS "sentAt"`,
          from: 'flow_sends',
          where: 'org = $1 AND flow_id = $2 AND ($3::VARCHAR IS NULL OR email = $3) AND ($4::VARCHAR IS NULL OR status = $4)',
          params: [org.slug, request.params.id, email, status],
          keyset: SENDS_KEYSET,
        },
        page,
      );
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
      const db = storage.org(org.slug);
      const rows = await readPage<DecisionRow>(
        db,
        {
          select: 'event_id, identity, identity_type, email, outcome, variant, send_id, reason, trigger_hash, decided_at',
          from: 'flow_decisions',
          where: 'org = $1 AND flow_id = $2 AND ($3::VARCHAR IS NULL OR email = $3 OR identity = $4)',
          params: [org.slug, request.params.id, email, rawIdentity],
          keyset: DECISIONS_KEYSET,
        },
        page,
      );
      // The delivery of the page's sends only: joined in the query, DuckDB compared every decision with
      // every send (a nested loop join: 10,000 of each took 2 s).
      const sendIds = rows.filter((r) => r.send_id !== null && (r.outcome === 'sent' || r.outcome === 'holdout')).map((r) => r.send_id!);
      const deliveries = new Map<string, SendDelivery>();
      if (sendIds.length > 0) {
        const sends = await db.all<SendDelivery>('SELECT send_id, status, attempts, last_error FROM flow_sends WHERE send_id IN (SELECT unnest($1::VARCHAR[]))', [listValue(sendIds)]);
        for (const send of sends) deliveries.set(send.send_id, send);
      }
      const { items, nextCursor } = pageOf(rows, page, (d) => decisionAnswer(d, d.outcome === 'sent' || d.outcome === 'holdout' ? deliveries.get(d.send_id ?? '') : undefined), DECISIONS_KEYSET);
      return { decisions: items, nextCursor };
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
