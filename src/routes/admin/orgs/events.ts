/**
 * What arrived, for data engineers writing trigger SQL (SPEC 7): event types with their property
 * keys and JSON types, latest samples, and the quarantine with its reasons. Each is a list partners can
 * grow without bound, so each is paged (paging.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { OrgStorage } from '../../../db/org-storage.js';
import { isEnvironment } from '../../../core/domain.js';
import { AppError } from '../../../core/errors.js';
import type { OrgStore } from '../../../control/org-store.js';
import { EVENT_TYPES_KEYSET, eventTypesPage } from './event-types.js';
import { type Keyset, PAGE_LIMITS, pageOf, pageQuerySchema, pageRequest, readPage } from '../../../db/paging.js';
import { dateTime, nullable, object, operationSchema, pageOf as pageSchema, validatedAs } from '../../../openapi/route-schema.js';
import { type RangeQuery, rangeQueryDoc, rangeQuerySchema, timeRange } from '../../../db/time-buckets.js';
import { eventFacts } from '../../../events/compaction/event-facts.js';
import { ENV_QUERY, ORG_DATA, PAGED, pageQueryDoc, slugOnly } from '../schema-parts.js';
import { eventsActivity, eventsActivitySchema } from './events-activity.js';

interface Query {
  env?: string;
  eventType?: string;
  limit?: string;
  cursor?: string;
}

/** One value per parameter: a repeated one (`eventType=a&eventType=b`) arrives as an array, a 400 here. */
const query = {
  querystring: {
    type: 'object',
    properties: { env: { type: 'string' }, eventType: { type: 'string' }, ...pageQuerySchema },
  },
} as const;

/** The documented query; `query` above is what Fastify checks, envFilter and pageRequest the rest. */
const queryDoc = (limits: { fallback: number; max: number }, extra: Record<string, unknown> = {}) => ({
  type: 'object',
  properties: { env: ENV_QUERY, ...extra, ...pageQueryDoc(limits) },
});
// The slug is not checked by Fastify here: an unknown or malformed one is org_not_found.
const validation = validatedAs({ querystring: query.querystring, params: null });
const environment = { type: 'string', enum: ['staging', 'production'] };
const raw = { type: 'object', description: 'The event as received (partnerSecret removed)' };

const schemas = {
  types: operationSchema({
    tag: 'Admin: org data', operationId: 'listEventTypes', auth: 'adminKey', params: slugOnly, querystring: queryDoc(PAGE_LIMITS.types),
    summary: 'Event types seen, with counts, last seen and property keys, by event type then environment',
    description: 'At most 100 property keys per type, with their JSON types (`string|null`); `propertiesTruncated` when there were more.',
    ok: {
      status: 200,
      description: 'A page of event types',
      schema: pageSchema('types', object({
        eventType: { type: 'string' },
        environment,
        count: { type: 'integer', minimum: 0 },
        lastSeenAt: dateTime,
        properties: { type: 'object', additionalProperties: { type: 'string' } },
        propertiesTruncated: { type: 'boolean' },
      })),
    },
    errors: PAGED,
  }),
  samples: operationSchema({
    tag: 'Admin: org data', summary: 'The newest events, raw', operationId: 'listEventSamples', auth: 'adminKey', params: slugOnly,
    querystring: queryDoc(PAGE_LIMITS.samples, { eventType: { type: 'string', description: 'only this event type (e.g. custom_booking_completed)' } }),
    ok: {
      status: 200,
      description: 'A page of events, newest first',
      schema: pageSchema('events', object({
        messageId: { type: 'string' },
        eventType: { type: 'string' },
        email: nullable('string'),
        environment,
        receivedAt: nullable('string', { format: 'date-time' }),
        eventTime: nullable('string', { format: 'date-time' }),
        raw,
      })),
    },
    errors: PAGED,
  }),
  activity: operationSchema({
    tag: 'Admin: org data', operationId: 'getEventActivity', auth: 'adminKey', params: slugOnly,
    querystring: { type: 'object', properties: { env: ENV_QUERY, ...rangeQueryDoc } },
    summary: 'Events stored per type, all events stored and events quarantined, per minute, hour or day',
    description:
      'Counted by the time each event was received, in `[from, to)`; events deleted by retention are not counted. The most frequent types have a series each, the others are summed in `otherTypes`.',
    ok: { status: 200, description: 'One count per bucket in each series', schema: eventsActivitySchema },
    errors: ORG_DATA,
  }),
  pending: operationSchema({
    tag: 'Admin: org data', operationId: 'listPendingEvents', auth: 'adminKey', params: slugOnly, querystring: queryDoc(PAGE_LIMITS.pending),
    summary: 'Accepted events held until an identify names their clientId, oldest first',
    description:
      'A track event without an e-mail whose clientId no identify has named yet waits up to 7 days for one (docs/partners.md, "Events held for an identity"); then it is stored with that e-mail, or quarantined as `identity_unresolved`. `count` and `oldestReceivedAt` are over every held event of the filter, not only the page.',
    ok: {
      status: 200,
      description: 'A page of held events, oldest first, with how many are held in all',
      schema: object({
        count: { type: 'integer', minimum: 0 },
        oldestReceivedAt: nullable('string', { format: 'date-time' }),
        events: {
          type: 'array',
          items: object({
            messageId: { type: 'string' },
            clientId: { type: 'string' },
            eventType: { type: 'string' },
            environment,
            receivedAt: dateTime,
            expiresAt: { ...dateTime, description: 'quarantined as identity_unresolved then, if no identify came' },
            ageSeconds: { type: 'integer', minimum: 0 },
          }),
        },
        nextCursor: { type: ['string', 'null'], description: 'pass as `cursor` for the next page; null on the last page' },
      }),
    },
    errors: PAGED,
  }),
  quarantine: operationSchema({
    tag: 'Admin: org data', summary: 'Rejected events with their reasons', operationId: 'listQuarantine', auth: 'adminKey', params: slugOnly,
    querystring: queryDoc(PAGE_LIMITS.quarantine),
    ok: {
      status: 200,
      description: 'A page of rejected events, newest first',
      schema: pageSchema('events', object({
        id: { type: 'string' },
        code: { type: 'string', description: 'schema_violation, batch_rejected, …' },
        errors: { type: 'array', items: object({ path: { type: 'string' }, message: { type: 'string' } }) },
        environment,
        receivedAt: nullable('string', { format: 'date-time' }),
        raw: { description: 'The body as received (partnerSecret removed): usually an object, whatever JSON was sent otherwise' },
      })),
    },
    errors: PAGED,
  }),
};

/** Newest first; two events never share received_at, messageId and environment (the 24 h dedupe). */
const SAMPLES_KEYSET: Keyset = {
  columns: [
    { sql: 'received_at', kind: 'micros', desc: true },
    { sql: 'message_id', kind: 'text', desc: true },
    { sql: 'environment', kind: 'text', desc: true },
  ],
  rowid: 'rowid',
};

/** Newest first. Identical rows can exist (one rejection twice in the log): rowid orders them. */
const QUARANTINE_KEYSET: Keyset = {
  columns: [
    { sql: 'quarantined_at', kind: 'micros', desc: true },
    { sql: 'received_at', kind: 'micros', desc: true },
    { sql: 'id', kind: 'text', desc: true },
    { sql: 'environment', kind: 'text', desc: true },
  ],
  rowid: 'rowid',
};

function envFilter(env: string | undefined): string | null {
  if (env === undefined || env === '') return null;
  if (!isEnvironment(env)) throw new AppError('invalid_request', 'env must be staging or production');
  return env;
}

/** Oldest first; (environment, message_id) is one held event, rowid orders a repeat from the log. */
const PENDING_KEYSET: Keyset = {
  columns: [
    { sql: 'received_at', kind: 'micros', desc: false },
    { sql: 'message_id', kind: 'text', desc: false },
    { sql: 'environment', kind: 'text', desc: false },
  ],
  rowid: 'rowid',
};

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function registerInspectRoutes(app: FastifyInstance, deps: { storage: OrgStorage; orgs: OrgStore; now: () => number }): void {
  const { storage, orgs } = deps;
  const activityValidation = validatedAs({ querystring: { type: 'object', properties: { env: { type: 'string' }, ...rangeQuerySchema } }, params: null });
  app.get<{ Params: { slug: string }; Querystring: RangeQuery & { env?: string } }>(
    '/admin/v1/orgs/:slug/events/activity',
    { schema: schemas.activity, validatorCompiler: activityValidation },
    async (request) => {
      const org = (await orgs.get(request.params.slug)).slug;
      return eventsActivity(storage.org(org), org, envFilter(request.query.env), timeRange(request.query, deps.now()));
    },
  );

  app.get<{ Params: { slug: string }; Querystring: Query }>('/admin/v1/orgs/:slug/events/pending', { schema: schemas.pending, validatorCompiler: validation }, async (request) => {
    const org = (await orgs.get(request.params.slug)).slug;
    const env = envFilter(request.query.env);
    const page = pageRequest(request.query, PAGE_LIMITS.pending, ['pending', org, env ?? ''], PENDING_KEYSET);
    const db = storage.org(org);
    const where = 'org = $1 AND ($2::VARCHAR IS NULL OR environment = $2)';
    const [rows, [summary]] = await Promise.all([
      // The parts of the body (up to 32 KB) its event name is made of, not the body.
      readPage<{ message_id: string; client_id: string; environment: string; received_at: Date; expires_at: Date; type: string; event: string | null; custom: string | null }>(
        db,
        {
          select: "message_id, client_id, environment, received_at, expires_at, body->>'$.type' AS type, body->>'$.event' AS event, body->>'$.properties.eventName' AS custom",
          from: 'pending_identity',
          where,
          params: [org, env],
          keyset: PENDING_KEYSET,
        },
        page,
      ),
      db.all<{ n: bigint; oldest: Date | null }>(`SELECT count(*) AS n, min(received_at) AS oldest FROM pending_identity WHERE ${where}`, [org, env]),
    ]);
    const now = deps.now();
    const { items, nextCursor } = pageOf(
      rows,
      page,
      (r) => ({
        messageId: r.message_id,
        clientId: r.client_id,
        eventType: eventFacts({ type: r.type, event: r.event, clientId: r.client_id, properties: { eventName: r.custom } }, 0).eventName,
        environment: r.environment,
        receivedAt: r.received_at.toISOString(),
        expiresAt: r.expires_at.toISOString(),
        ageSeconds: Math.max(0, Math.floor((now - r.received_at.getTime()) / 1000)),
      }),
      PENDING_KEYSET,
    );
    return { count: Number(summary?.n ?? 0), oldestReceivedAt: iso(summary?.oldest ?? null), events: items, nextCursor };
  });

  app.get<{ Params: { slug: string }; Querystring: Query }>('/admin/v1/orgs/:slug/events/types', { schema: schemas.types, validatorCompiler: validation }, async (request) => {
    const org = (await orgs.get(request.params.slug)).slug;
    const env = envFilter(request.query.env);
    const page = pageRequest(request.query, PAGE_LIMITS.types, ['types', org, env ?? ''], EVENT_TYPES_KEYSET);
    const { items, nextCursor } = await eventTypesPage(storage.org(org), env, page);
    return { types: items, nextCursor };
  });

  app.get<{ Params: { slug: string }; Querystring: Query }>('/admin/v1/orgs/:slug/events/samples', { schema: schemas.samples, validatorCompiler: validation }, async (request) => {
    const org = (await orgs.get(request.params.slug)).slug;
    const env = envFilter(request.query.env);
    const eventType = request.query.eventType ?? null;
    const page = pageRequest(request.query, PAGE_LIMITS.samples, ['samples', org, env ?? '', eventType ?? ''], SAMPLES_KEYSET);
    const rows = await readPage<{
      message_id: string;
      event_name: string;
      email: string | null;
      environment: string;
      received_at: Date;
      event_time: Date;
      raw: string;
    }>(
      storage.org(org),
      {
        select: 'message_id, event_name, email, environment, received_at, event_time, raw',
        from: 'events',
        where: 'org = $1 AND ($2::VARCHAR IS NULL OR environment = $2) AND ($3::VARCHAR IS NULL OR event_name = $3)',
        params: [org, env, eventType],
        keyset: SAMPLES_KEYSET,
      },
      page,
    );
    const { items, nextCursor } = pageOf(
      rows,
      page,
      (r) => ({
        messageId: r.message_id,
        eventType: r.event_name,
        email: r.email,
        environment: r.environment,
        receivedAt: iso(r.received_at),
        eventTime: iso(r.event_time),
        raw: JSON.parse(r.raw),
      }),
      SAMPLES_KEYSET,
    );
    return { events: items, nextCursor };
  });

  app.get<{ Params: { slug: string }; Querystring: Query }>('/admin/v1/orgs/:slug/quarantine', { schema: schemas.quarantine, validatorCompiler: validation }, async (request) => {
    const org = (await orgs.get(request.params.slug)).slug;
    const env = envFilter(request.query.env);
    const page = pageRequest(request.query, PAGE_LIMITS.quarantine, ['quarantine', org, env ?? ''], QUARANTINE_KEYSET);
    const rows = await readPage<{ id: string; code: string; errors: string; environment: string; received_at: Date; raw: string }>(
      storage.org(org),
      {
        select: 'id, code, errors, environment, received_at, raw',
        from: 'quarantine',
        where: 'org = $1 AND ($2::VARCHAR IS NULL OR environment = $2)',
        params: [org, env],
        keyset: QUARANTINE_KEYSET,
      },
      page,
    );
    const { items, nextCursor } = pageOf(
      rows,
      page,
      (r) => ({
        id: r.id,
        code: r.code,
        errors: JSON.parse(r.errors),
        environment: r.environment,
        receivedAt: iso(r.received_at),
        // partnerSecret never reaches the log, so raw is already free of it.
        raw: JSON.parse(r.raw),
      }),
      QUARANTINE_KEYSET,
    );
    return { events: items, nextCursor };
  });
}
