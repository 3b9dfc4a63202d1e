/**
 * What arrived, for data engineers writing trigger SQL (SPEC 7): event types with their property
 * keys and JSON types, latest samples, and the quarantine with its reasons.
 */
import type { FastifyInstance } from 'fastify';
import type { OrgStorage } from '../storage/org-storage.js';
import { limitOf } from './route-params.js';
import { isEnvironment } from '../domain.js';
import { AppError } from '../errors.js';
import type { OrgStore } from '../orgs/org-store.js';
import { type PropertyKeyRow, propertyTypes, propertyTypesId } from './property-types.js';

/** Property types are inferred from the latest events of each type, not a full scan. */
const PROPERTY_SAMPLE_ROWS = 1000;

interface Query {
  env?: string;
  eventType?: string;
  limit?: string;
}

/** One value per parameter: a repeated one (`eventType=a&eventType=b`) arrives as an array, a 400 here. */
const query = {
  querystring: {
    type: 'object',
    properties: { env: { type: 'string' }, eventType: { type: 'string' }, limit: { type: 'string' } },
  },
} as const;

function envFilter(env: string | undefined): string | null {
  if (env === undefined || env === '') return null;
  if (!isEnvironment(env)) throw new AppError('invalid_request', 'env must be staging or production');
  return env;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function registerInspectRoutes(app: FastifyInstance, storage: OrgStorage, orgs: OrgStore): void {
  app.get<{ Params: { slug: string }; Querystring: Query }>('/admin/v1/orgs/:slug/events/types', { schema: query }, async (request) => {
    const org = (await orgs.get(request.params.slug)).slug;
    const env = envFilter(request.query.env);
    const counts = await storage.org(org).all<{ event_name: string; environment: string; n: bigint; last_seen: Date }>(
      `SELECT event_name, environment, count(*) AS n, max(received_at) AS last_seen
         FROM events WHERE org = $1 AND ($2::VARCHAR IS NULL OR environment = $2)
        GROUP BY ALL ORDER BY last_seen DESC`,
      [org, env],
    );
    const keys = await storage.org(org).all<PropertyKeyRow>(
      `WITH recent AS (
         SELECT event_name, environment, properties,
                row_number() OVER (PARTITION BY event_name, environment ORDER BY received_at DESC) AS rn
           FROM events WHERE org = $1 AND ($2::VARCHAR IS NULL OR environment = $2))
       SELECT DISTINCT event_name, environment, e.key AS key, e.type AS type
         FROM recent, json_each(recent.properties) e
        WHERE rn <= $3 AND json_type(recent.properties) = 'OBJECT'`,
      [org, env, PROPERTY_SAMPLE_ROWS],
    );
    const properties = propertyTypes(keys);
    return {
      types: counts.map((c) => ({
        eventType: c.event_name,
        environment: c.environment,
        count: Number(c.n),
        lastSeenAt: iso(c.last_seen),
        properties: properties.get(propertyTypesId(c.event_name, c.environment)) ?? {},
      })),
    };
  });

  app.get<{ Params: { slug: string }; Querystring: Query }>('/admin/v1/orgs/:slug/events/samples', { schema: query }, async (request) => {
    const org = (await orgs.get(request.params.slug)).slug;
    const env = envFilter(request.query.env);
    const limit = limitOf(request.query.limit, 20, 500);
    const rows = await storage.org(org).all<{
      message_id: string;
      event_name: string;
      email: string | null;
      environment: string;
      received_at: Date;
      event_time: Date;
      raw: string;
    }>(
      `SELECT message_id, event_name, email, environment, received_at, event_time, raw
         FROM events
        WHERE org = $1 AND ($2::VARCHAR IS NULL OR environment = $2) AND ($3::VARCHAR IS NULL OR event_name = $3)
        ORDER BY received_at DESC, visible_at DESC LIMIT $4`,
      [org, env, request.query.eventType ?? null, limit],
    );
    return {
      events: rows.map((r) => ({
        messageId: r.message_id,
        eventType: r.event_name,
        email: r.email,
        environment: r.environment,
        receivedAt: iso(r.received_at),
        eventTime: iso(r.event_time),
        raw: JSON.parse(r.raw),
      })),
    };
  });

  app.get<{ Params: { slug: string }; Querystring: Query }>('/admin/v1/orgs/:slug/quarantine', { schema: query }, async (request) => {
    const org = (await orgs.get(request.params.slug)).slug;
    const env = envFilter(request.query.env);
    const limit = limitOf(request.query.limit, 100, 1000);
    const rows = await storage.org(org).all<{ id: string; code: string; errors: string; environment: string; received_at: Date; raw: string }>(
      `SELECT id, code, errors, environment, received_at, raw FROM quarantine
        WHERE org = $1 AND ($2::VARCHAR IS NULL OR environment = $2)
        ORDER BY quarantined_at DESC, received_at DESC LIMIT $3`,
      [org, env, limit],
    );
    return {
      events: rows.map((r) => ({
        id: r.id,
        code: r.code,
        errors: JSON.parse(r.errors),
        environment: r.environment,
        receivedAt: iso(r.received_at),
        // partnerSecret never reaches the log, so raw is already free of it.
        raw: JSON.parse(r.raw),
      })),
    };
  });
}
