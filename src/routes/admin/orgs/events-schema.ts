/** What the event inspection routes (events.ts) declare for the document and check in requests (SPEC 7). */
import { PAGE_LIMITS, pageOf, pageQuerySchema, pageRequest } from '../../../db/paging.js';
import { dateTime, nullable, object, operationSchema, pageOf as pageSchema, validatedAs } from '../../../openapi/route-schema.js';
import { rangeQueryDoc } from '../../../db/time-buckets.js';
import { ENV_QUERY, ORG_DATA, PAGED, pageQueryDoc, slugOnly } from '../schema-parts.js';
import { eventsActivitySchema } from './events-activity.js';

export interface Query {
  env?: string;
  eventType?: string;
  limit?: string;
  cursor?: string;
}

/** One value per parameter: a repeated one (`eventType=a&eventType=b`) arrives as an array, a 400 here. */
export const query = {
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
export const validation = validatedAs({ querystring: query.querystring, params: null });
export const environment = { type: 'string', enum: ['staging', 'production'] };
export const raw = { type: 'object', description: 'The event as received (partnerSecret removed)' };

export const schemas = {
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
        violations: { type: 'integer', minimum: 0, description: "Events of this type and environment that broke its tracking plan, over the quarantine's retention (stored under observe, quarantined under enforce)" },
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
