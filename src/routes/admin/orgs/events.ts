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
import { type Keyset, PAGE_LIMITS, pageOf, pageRequest, readPage } from '../../../db/paging.js';
import { object, validatedAs } from '../../../openapi/route-schema.js';
import { type RangeQuery, rangeQuerySchema, timeRange } from '../../../db/time-buckets.js';
import { eventNameOf } from '../../../events/log/event-facts.js';
import { eventsActivity } from './events-activity.js';
import { environment, type Query, query, raw, schemas, validation } from './events-schema.js';

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
        eventType: eventNameOf({ type: r.type, event: r.event, properties: { eventName: r.custom } }),
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
