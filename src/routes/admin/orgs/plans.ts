/**
 * Tracking plans (issue 42): PUT/GET/DELETE /admin/v1/orgs/:slug/events/plans/:eventName, the list, the
 * versions kept, and the violations counted per reason over a range with the newest violating events.
 * Plans are control documents (events/plans/plan-store.ts); violations are rows of the org's database
 * that compaction writes (plan_violations).
 */
import type { FastifyInstance } from 'fastify';
import type { OrgStore } from '../../../control/org-store.js';
import type { OrgStorage } from '../../../db/org-storage.js';
import { ENVIRONMENTS, isEnvironment } from '../../../core/domain.js';
import { AppError } from '../../../core/errors.js';
import { rangeQuerySchema, type RangeQuery, timeRange } from '../../../db/time-buckets.js';
import { MAX_PLAN_SCHEMA_BYTES, MAX_PLAN_SCHEMA_DEPTH } from '../../../events/plans/compile-plan.js';
import { checkEventName, PLAN_MODES, type PlanInput, type PlanStore } from '../../../events/plans/plan-store.js';
import { inferPlan } from '../../../events/plans/infer-plan.js';
import { FileRefused } from '../../../core/regular-file.js';
import type { PlanFileSync } from '../../../reactions/triggers/plan-file-sync.js';
import { dateTime, object, operationSchema, validatedAs } from '../../../openapi/route-schema.js';
import { ORG_DATA, slugOnly, slugParam } from '../schema-parts.js';

const tag = 'Admin: org data' as const;
const auth = 'adminKey' as const;
/** The newest violating events a violations answer lists. */
const NEWEST = 20;
/** Events a draft is inferred from. */
const DEFAULT_SAMPLES = 500;
const MAX_SAMPLES = 5000;

const eventName = { type: 'string', minLength: 1, maxLength: 200, description: 'The event type as GET …/events/types lists it: custom_<eventName>' };
const planParams = { type: 'object', properties: { slug: slugParam, eventName }, required: ['slug', 'eventName'] };
const mode = { type: 'string', enum: [...PLAN_MODES], description: 'observe: events are stored and violations counted; enforce: violating events are quarantined (412 schema_violation, 400 message_rejected on the tracking API)' };
const environments = { type: 'array', items: { type: 'string', enum: [...ENVIRONMENTS] }, minItems: 1, maxItems: 2, uniqueItems: true, description: 'The environments whose events the plan checks' };
const planBody = {
  type: 'object',
  additionalProperties: false,
  required: ['schema', 'mode', 'environments'],
  properties: {
    schema: { type: 'object', description: `JSON Schema (draft 2020-12) of the event's own properties (properties.properties of a custom event, where Segment's properties land): at most ${MAX_PLAN_SCHEMA_BYTES} bytes and ${MAX_PLAN_SCHEMA_DEPTH} levels, no $ref outside itself, no uniqueItems, patterns without backtracking` },
    mode,
    environments,
  },
};
const plan = object({ eventName: { type: 'string' }, schema: { type: 'object' }, mode, environments, version: { type: 'integer', minimum: 1 }, hash: { type: 'string' }, createdAt: dateTime });
const version = object(
  { version: { type: 'integer', minimum: 1 }, status: { type: 'string', enum: ['live', 'deleted'] }, plan: object({ schema: { type: 'object' }, mode, environments }), hash: { type: 'string' }, createdAt: dateTime },
  ['version', 'status', 'createdAt'],
);
const PLAN_ERRORS = [...ORG_DATA, 'plan_not_found'] as const;

const schemas = {
  put: operationSchema({
    tag, auth, operationId: 'putEventPlan', summary: 'Create or change the tracking plan of a custom event',
    description:
      'A new version, in force for events acknowledged from the moment each process has it (the control plane’s watch: at once on this one), never for events already stored. The same plan again makes no new version. ' +
      'The schema is written to QUERIES_DIR/<org>/plans/<eventName>.schema.json (a file changed there is taken in as a new version, with the mode and environments in force).',
    params: planParams, body: planBody,
    ok: { status: 200, description: 'The plan now in force', schema: object({ plan }) },
    errors: [...ORG_DATA, 'invalid_plan', 'query_file_refused'],
  }),
  get: operationSchema({
    tag, auth, operationId: 'getEventPlan', summary: 'The tracking plan of a custom event', params: planParams,
    ok: { status: 200, description: 'The plan in force', schema: object({ plan }) },
    errors: [...PLAN_ERRORS],
  }),
  list: operationSchema({
    tag, auth, operationId: 'listEventPlans', summary: "The org's tracking plans", params: slugOnly,
    ok: { status: 200, description: 'Every plan in force, by event name', schema: object({ plans: { type: 'array', items: plan } }) },
    errors: ORG_DATA,
  }),
  delete: operationSchema({
    tag, auth, operationId: 'deleteEventPlan', summary: 'Delete the tracking plan of a custom event',
    description: 'Events of the name are no longer checked. The versions stay (a deletion is a version), and a later PUT goes on from its number.',
    params: planParams,
    ok: { status: 200, description: 'The plan that was in force', schema: object({ deleted: plan }) },
    errors: [...PLAN_ERRORS],
  }),
  versions: operationSchema({
    tag, auth, operationId: 'listEventPlanVersions', summary: "A tracking plan's versions, newest first (the last 20)", params: planParams,
    ok: { status: 200, description: 'The versions kept', schema: object({ versions: { type: 'array', items: version } }) },
    errors: [...PLAN_ERRORS],
  }),
  infer: operationSchema({
    tag, auth, operationId: 'inferEventPlan', summary: 'A draft plan from the newest stored events of the name',
    description:
      'Types of each member, `required` for members every sample carried, `enum` for strings with few distinct values (at most 10, each seen 3 times on average), nested objects and array items alike. ' +
      'Nothing is saved: edit the draft and PUT it. It accepts every sample it was made from.',
    params: planParams,
    body: { type: 'object', additionalProperties: false, properties: { samples: { type: 'integer', minimum: 1, maximum: MAX_SAMPLES, description: `How many of the newest events (default ${DEFAULT_SAMPLES})` }, env: { type: 'string', enum: [...ENVIRONMENTS] } } },
    ok: { status: 200, description: 'The draft', schema: object({ eventName: { type: 'string' }, samples: { type: 'integer', minimum: 0, description: 'Events it was made from' }, schema: { type: 'object' } }) },
    errors: [...ORG_DATA, 'invalid_plan'],
  }),
  violations: operationSchema({
    tag, auth, operationId: 'listEventPlanViolations', summary: 'Violations of a tracking plan: counts per reason over a range, and the newest violating events',
    description: 'Counted by the time each event was received, in `[from, to)` (default: the last 24 hours). A reason is `<JSON pointer into the event\'s own properties> <keyword> <message>`. An event under `observe` was stored (its messageId); under `enforce` it is in quarantine (its quarantine id).',
    params: planParams,
    querystring: { type: 'object', additionalProperties: false, properties: { env: { type: 'string', enum: [...ENVIRONMENTS] }, from: { type: 'string', format: 'date-time' }, to: { type: 'string', format: 'date-time' } } },
    ok: {
      status: 200,
      description: 'Violations in the range',
      schema: object({
        eventName: { type: 'string' },
        from: dateTime,
        to: dateTime,
        events: { type: 'integer', minimum: 0, description: 'Violating events in the range' },
        reasons: { type: 'array', items: object({ reason: { type: 'string' }, count: { type: 'integer', minimum: 1 } }) },
        newest: {
          type: 'array',
          items: object({ messageId: { type: 'string' }, environment: { type: 'string', enum: [...ENVIRONMENTS] }, mode, receivedAt: dateTime, reasons: { type: 'array', items: { type: 'string' } } }),
        },
      }),
    },
    errors: [...ORG_DATA, 'invalid_request'],
  }),
};

const violationsValidation = validatedAs({ querystring: { type: 'object', properties: { env: { type: 'string' }, ...rangeQuerySchema } }, params: null });

export function registerPlanRoutes(
  app: FastifyInstance,
  deps: { orgs: OrgStore; plans: PlanStore; storage: OrgStorage; files: Pick<PlanFileSync, 'saved'>; now: () => number },
): void {
  const { orgs, plans } = deps;
  const base = '/admin/v1/orgs/:slug/events/plans';
  type Named = { Params: { slug: string; eventName: string } };
  const notFound = (org: string, name: string) =>
    new AppError('plan_not_found', `org ${org} has no tracking plan for ${JSON.stringify(name)}: GET /admin/v1/orgs/${org}/events/plans lists them, PUT makes one`);

  app.put<Named & { Body: PlanInput }>(`${base}/:eventName`, { schema: schemas.put }, async (request) => {
    const org = await orgs.get(request.params.slug);
    const plan = await plans.put(org.slug, request.params.eventName, request.body);
    try {
      deps.files.saved(org.slug, plan.eventName, plan.schema);
    } catch (error) {
      if (!(error instanceof FileRefused)) throw error;
      throw new AppError('query_file_refused', `the plan is in force (version ${plan.version}), but its file could not be written: ${error.message}`);
    }
    return { plan };
  });

  app.get<{ Params: { slug: string } }>(base, { schema: schemas.list }, async (request) => {
    const org = await orgs.get(request.params.slug);
    return { plans: plans.list(org.slug) };
  });

  app.get<Named>(`${base}/:eventName`, { schema: schemas.get }, async (request) => {
    const org = await orgs.get(request.params.slug);
    const found = plans.get(org.slug, request.params.eventName);
    if (!found) throw notFound(org.slug, request.params.eventName);
    return { plan: found };
  });

  app.delete<Named>(`${base}/:eventName`, { schema: schemas.delete }, async (request) => {
    const org = await orgs.get(request.params.slug);
    const deleted = await plans.remove(org.slug, request.params.eventName);
    if (!deleted) throw notFound(org.slug, request.params.eventName);
    return { deleted };
  });

  app.get<Named>(`${base}/:eventName/versions`, { schema: schemas.versions }, async (request) => {
    const org = await orgs.get(request.params.slug);
    const versions = plans.versions(org.slug, request.params.eventName);
    if (!versions) throw notFound(org.slug, request.params.eventName);
    return { versions };
  });

  app.post<Named & { Body: { samples?: number; env?: string } | undefined }>(`${base}/:eventName/infer`, { schema: schemas.infer }, async (request) => {
    const org = await orgs.get(request.params.slug);
    const { eventName } = request.params;
    checkEventName(eventName);
    const rows = await deps.storage
      .org(org.slug)
      .all<{ p: string | null }>('SELECT properties::VARCHAR AS p FROM events WHERE event_name = $1 AND ($2::VARCHAR IS NULL OR environment = $2) ORDER BY received_at DESC LIMIT $3', [
        eventName,
        request.body?.env ?? null,
        request.body?.samples ?? DEFAULT_SAMPLES,
      ]);
    return { eventName, ...inferPlan(rows.map((r) => (r.p === null ? {} : (JSON.parse(r.p) as unknown)))) };
  });

  app.get<Named & { Querystring: RangeQuery & { env?: string } }>(`${base}/:eventName/violations`, { schema: schemas.violations, validatorCompiler: violationsValidation }, async (request) => {
    const org = await orgs.get(request.params.slug);
    const { env } = request.query;
    if (env !== undefined && !isEnvironment(env)) throw new AppError('invalid_request', 'env must be staging or production');
    const { fromMs, toMs } = timeRange(request.query, deps.now());
    const params = [request.params.eventName, env ?? null, new Date(fromMs).toISOString(), new Date(toMs).toISOString()];
    const where = 'event_name = $1 AND ($2::VARCHAR IS NULL OR environment = $2) AND received_at >= $3::TIMESTAMPTZ AND received_at < $4::TIMESTAMPTZ';
    const db = deps.storage.org(org.slug);
    const [[total], reasons, newest] = await Promise.all([
      db.all<{ n: bigint }>(`SELECT count(*) AS n FROM plan_violations WHERE ${where}`, params),
      db.all<{ reason: string; n: bigint }>(
        `SELECT reason, count(*) AS n FROM (SELECT unnest(from_json(reasons, '["VARCHAR"]')) AS reason FROM plan_violations WHERE ${where}) GROUP BY reason ORDER BY n DESC, reason LIMIT 100`,
        params,
      ),
      db.all<{ message_id: string; environment: string; mode: string; received_at: Date; reasons: string }>(
        `SELECT message_id, environment, mode, received_at, reasons::VARCHAR AS reasons FROM plan_violations WHERE ${where} ORDER BY received_at DESC, message_id DESC LIMIT ${NEWEST}`,
        params,
      ),
    ]);
    return {
      eventName: request.params.eventName,
      from: new Date(fromMs).toISOString(),
      to: new Date(toMs).toISOString(),
      events: Number(total?.n ?? 0),
      reasons: reasons.map((r) => ({ reason: r.reason, count: Number(r.n) })),
      newest: newest.map((n) => ({ messageId: n.message_id, environment: n.environment, mode: n.mode, receivedAt: n.received_at.toISOString(), reasons: JSON.parse(n.reasons) as string[] })),
    };
  });
}
