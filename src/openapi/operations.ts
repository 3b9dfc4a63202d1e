/**
 * Every route of the service, as OpenAPI describes it: what it is for, who may call it, what it takes,
 * what it answers and which problem codes it can answer with. test/ops/openapi.test.ts fails when a
 * registered route is missing here, so a new route comes with its entry.
 */
import { PAGE_BYTES, PAGE_LIMITS } from '../db/paging.js';
import type { ErrorCode } from '../core/errors.js';
import { componentRef } from './components.js';

export type Auth = 'none' | 'partner' | 'audienceToken' | 'adminKey';

export interface Operation {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Fastify's form (`:slug`); written `{slug}` in the document. */
  path: string;
  tag: 'Partners' | 'Audience API' | 'Admin: orgs' | 'Admin: backups' | 'Admin: org data' | 'Admin: triggers and flows' | 'Operations';
  summary: string;
  auth: Auth;
  body?: { contentType: string; schema: object; description?: string };
  query?: Record<string, { description: string; schema?: object; required?: boolean }>;
  ok: { status: number; description: string; schema?: object; contentType?: 'text/plain' | 'text/html' | 'application/x-tar' };
  errors: ErrorCode[];
}

const json = (schema: object) => ({ contentType: 'application/json', schema });
const object = { type: 'object' };
const envQuery = { env: { description: 'staging or production (default: both)', schema: { enum: ['staging', 'production'] } } };
/** `limit` and `cursor` of a paged list, and its answer: the page's items under `member`, and `nextCursor`. */
const pageQuery = (limits: { fallback: number; max: number }) => ({
  limit: { description: `items per page, 1–${limits.max} (default ${limits.fallback}); a page also ends before its JSON passes ${PAGE_BYTES / 1024} KiB`, schema: { type: 'string', pattern: '^[0-9]+$' } },
  cursor: { description: 'the `nextCursor` of the previous page, unchanged, with the same filters (omit for the first page)', schema: { type: 'string' } },
});
const page = (member: string, description: string) => ({
  status: 200,
  description: `\`{ "${member}": [ … ], "nextCursor": … }\`: ${description}`,
  schema: {
    type: 'object',
    required: [member, 'nextCursor'],
    properties: {
      [member]: { type: 'array', items: { type: 'object' } },
      nextCursor: { type: ['string', 'null'], description: 'pass as `cursor` for the next page; null on the last page' },
    },
  },
});
const COLLECT: ErrorCode[] = ['invalid_json', 'json_too_deep', 'invalid_credentials', 'schema_violation', 'payload_too_large', 'unsupported_media_type', 'log_unavailable', 'log_outcome_unknown'];
const ADMIN: ErrorCode[] = ['invalid_admin_key', 'rate_limited', 'control_unavailable'];
/** Org-database routes: relayed to the owning storage shard in NATS mode; served by its storage process. */
const ORG_DATA: ErrorCode[] = [...ADMIN, 'org_not_found', 'invalid_request', 'shard_unavailable', 'shard_answer_too_large', 'storage_unavailable', 'org_unavailable'];
/** Routes that check or run an org's trigger and segment SQL. */
const SANDBOX: ErrorCode[] = ['sandbox_busy', 'sandbox_paused'];
const PAGED: ErrorCode[] = [...ORG_DATA, 'invalid_cursor'];

export const operations: Operation[] = [
  // Partners
  { method: 'POST', path: '/http/v1/collect', tag: 'Partners', summary: 'Send one event', auth: 'partner', body: json(componentRef('event')), ok: { status: 200, description: 'Durable in the log: `{ "messageId": … }`', schema: object }, errors: COLLECT },
  { method: 'POST', path: '/http/v1/batch', tag: 'Partners', summary: 'Send up to 500 events (500 KB) at once; each is accepted or rejected on its own', auth: 'partner', body: json(componentRef('batch')), ok: { status: 200, description: 'Every event answered, in order', schema: object }, errors: COLLECT },

  // Audience API
  {
    method: 'GET', path: '/audience/v2/contacts', tag: 'Audience API', summary: "One contact's profile, with the org's content fields", auth: 'audienceToken',
    query: {
      identity: { description: 'email:<address>, email-hash:<sha256 hex> or user_id:<id>', required: true, schema: { type: 'string' } },
      fields: { description: 'comma-separated content fields to return (default: all of the org’s content fields)', schema: { type: 'string' } },
    },
    ok: { status: 200, description: '`{ "status": "success", "contact": { … } }`', schema: object },
    errors: ['invalid_token', 'audience_api_not_enabled', 'rate_limited', 'not_acceptable', 'invalid_identity', 'invalid_fields', 'contact_not_found', 'org_unavailable'],
  },

  // Admin: orgs
  { method: 'POST', path: '/admin/v1/orgs', tag: 'Admin: orgs', summary: 'Create an org; its partner credentials are in this answer only', auth: 'adminKey', body: json(componentRef('org', 'OrgCreate')), ok: { status: 201, description: 'The org and its staging and production credentials', schema: object }, errors: [...ADMIN, 'invalid_json', 'invalid_request', 'org_exists'] },
  { method: 'GET', path: '/admin/v1/orgs', tag: 'Admin: orgs', summary: 'List orgs', auth: 'adminKey', ok: { status: 200, description: '`{ "orgs": [ … ] }`', schema: object }, errors: ADMIN },
  { method: 'GET', path: '/admin/v1/orgs/:slug', tag: 'Admin: orgs', summary: "An org's settings", auth: 'adminKey', ok: { status: 200, description: 'The org', schema: componentRef('org') }, errors: [...ADMIN, 'invalid_request', 'org_not_found'] },
  { method: 'DELETE', path: '/admin/v1/orgs/:slug', tag: 'Admin: orgs', summary: 'Delete an org and all its data: credentials and tokens stop working at once, its database, events and profiles are removed; the slug is never reused', auth: 'adminKey', ok: { status: 200, description: '`{ "slug": …, "deleted": true, "deletedAt": … }`', schema: object }, errors: [...ADMIN, 'invalid_request', 'org_not_found'] },
  { method: 'PATCH', path: '/admin/v1/orgs/:slug', tag: 'Admin: orgs', summary: "Change an org's settings", auth: 'adminKey', body: json(componentRef('org', 'OrgPatch')), ok: { status: 200, description: 'The org as changed', schema: componentRef('org') }, errors: [...ADMIN, 'invalid_json', 'invalid_request', 'org_not_found'] },
  { method: 'POST', path: '/admin/v1/orgs/:slug/credentials/:env/rotate', tag: 'Admin: orgs', summary: 'Replace the partner secret of one environment (the old one stops working at once)', auth: 'adminKey', ok: { status: 200, description: 'The new credential, shown once', schema: object }, errors: [...ADMIN, 'invalid_request', 'org_not_found'] },
  { method: 'POST', path: '/admin/v1/orgs/:slug/tokens', tag: 'Admin: orgs', summary: 'Create an Audience API token (shown once)', auth: 'adminKey', body: json(componentRef('token', 'TokenCreate')), ok: { status: 201, description: 'The token', schema: componentRef('token', 'TokenIssued') }, errors: [...ADMIN, 'invalid_json', 'invalid_request', 'org_not_found', 'token_pool_full'] },
  { method: 'GET', path: '/admin/v1/orgs/:slug/tokens', tag: 'Admin: orgs', summary: "List an org's tokens (last 3 characters, creator, use)", auth: 'adminKey', ok: { status: 200, description: '`{ "tokens": [ … ] }`', schema: object }, errors: [...ADMIN, 'invalid_request', 'org_not_found'] },
  { method: 'DELETE', path: '/admin/v1/orgs/:slug/tokens/:id', tag: 'Admin: orgs', summary: 'Revoke a token by id', auth: 'adminKey', ok: { status: 200, description: 'The revoked token', schema: object }, errors: [...ADMIN, 'invalid_request', 'org_not_found', 'token_not_found'] },
  { method: 'POST', path: '/admin/v1/orgs/:slug/tokens/revoke', tag: 'Admin: orgs', summary: 'Revoke a token by its last 3 characters or its creator', auth: 'adminKey', body: json(componentRef('token', 'TokenRevoke')), ok: { status: 200, description: 'The revoked token', schema: object }, errors: [...ADMIN, 'invalid_json', 'invalid_request', 'org_not_found', 'token_not_found', 'token_ambiguous'] },

  // Admin: backups
  {
    method: 'GET', path: '/admin/v1/backup', tag: 'Admin: backups', summary: 'A consistent backup of what this storage process keeps (control plane, org databases, query files), as a tar archive; `npx audience backup <dir>` unpacks it', auth: 'adminKey',
    query: { org: { description: 'back up this org only', schema: { type: 'string' } } },
    ok: { status: 200, description: 'A tar archive; `manifest.json` is its last entry', contentType: 'application/x-tar' },
    errors: [...ADMIN, 'invalid_request', 'org_not_found', 'compaction_behind', 'backup_in_progress', 'no_org_databases', 'backup_file_refused'],
  },

  // Admin: org data
  { method: 'GET', path: '/admin/v1/orgs/:slug/events/types', tag: 'Admin: org data', summary: 'Event types seen, with counts, last seen and property keys (at most 100 per type; `propertiesTruncated` when there were more), by event type then environment', auth: 'adminKey', query: { ...envQuery, ...pageQuery(PAGE_LIMITS.types) }, ok: page('types', 'a page of event types'), errors: PAGED },
  { method: 'GET', path: '/admin/v1/orgs/:slug/events/samples', tag: 'Admin: org data', summary: 'The newest events, raw', auth: 'adminKey', query: { ...envQuery, eventType: { description: 'only this event type (e.g. custom_booking_completed)' }, ...pageQuery(PAGE_LIMITS.samples) }, ok: page('events', 'a page of events, newest first'), errors: PAGED },
  {
    method: 'GET', path: '/admin/v1/orgs/:slug/contacts', tag: 'Admin: org data', summary: "One contact's profile, every field, with the org's content fields (what the Audience API returns)", auth: 'adminKey',
    query: { identity: { description: 'email:<address>, email-hash:<sha256 hex> or user_id:<id>', required: true, schema: { type: 'string' } } },
    ok: { status: 200, description: '`{ "contact": { … }, "contentFields": [ … ] }`', schema: object },
    errors: [...ORG_DATA, 'invalid_identity', 'contact_not_found'],
  },
  { method: 'GET', path: '/admin/v1/orgs/:slug/quarantine', tag: 'Admin: org data', summary: 'Rejected events with their reasons', auth: 'adminKey', query: { ...envQuery, ...pageQuery(PAGE_LIMITS.quarantine) }, ok: page('events', 'a page of rejected events, newest first'), errors: PAGED },
  { method: 'POST', path: '/admin/v1/orgs/:slug/contacts/import', tag: 'Admin: org data', summary: 'Import contacts (CSV with a header row, or NDJSON), upserted by e-mail', auth: 'adminKey', body: { contentType: 'text/csv', schema: { type: 'string' }, description: 'text/csv or application/x-ndjson, up to 64 MB' }, ok: { status: 200, description: 'Counts of imported and rejected lines, with the reasons', schema: object }, errors: [...ORG_DATA, 'payload_too_large', 'unsupported_media_type'] },

  // Admin: triggers and flows
  ...(['triggers', 'segments'] as const).flatMap((plural): Operation[] => {
    const one = plural === 'triggers' ? 'trigger' : 'segment';
    const errors: ErrorCode[] = [...ORG_DATA, 'trigger_not_found'];
    return [
      { method: 'GET', path: `/admin/v1/orgs/:slug/${plural}`, tag: 'Admin: triggers and flows', summary: `List ${plural} with status, live version and hash, and the files in QUERIES_DIR that are not read and why`, auth: 'adminKey', ok: { status: 200, description: `\`{ "${plural}": [ … ] }\``, schema: object }, errors: ORG_DATA },
      { method: 'GET', path: `/admin/v1/orgs/:slug/${plural}/:name`, tag: 'Admin: triggers and flows', summary: `One ${one}: its SQL, versions and the reason a version was refused`, auth: 'adminKey', ok: { status: 200, description: `The ${one}`, schema: object }, errors },
      { method: 'GET', path: `/admin/v1/orgs/:slug/${plural}/:name/versions`, tag: 'Admin: triggers and flows', summary: `Every version of the ${one}, newest first: hash, SQL, why it was refused${plural === 'triggers' ? ', and the rows flows decided on and the sends it fired' : ''}`, auth: 'adminKey', query: pageQuery(PAGE_LIMITS.versions), ok: page('versions', 'a page of versions, newest first'), errors: [...errors, 'invalid_cursor'] },
      { method: 'PUT', path: `/admin/v1/orgs/:slug/${plural}/:name`, tag: 'Admin: triggers and flows', summary: `Save the ${one}'s SQL (validated; the last good version stays live when refused)`, auth: 'adminKey', body: json({ type: 'object', required: ['sql'], properties: { sql: { type: 'string' } } }), ok: { status: 200, description: `The ${one} as saved`, schema: object }, errors: [...ORG_DATA, 'invalid_json', 'invalid_trigger', 'query_file_refused', 'sandbox_busy'] },
      { method: 'POST', path: `/admin/v1/orgs/:slug/${plural}/:name/preview`, tag: 'Admin: triggers and flows', summary: `Run the ${one} (or the SQL given) over a window without saving`, auth: 'adminKey', body: json({ type: 'object', properties: { sql: { type: 'string' }, from: { type: 'string', format: 'date-time' }, to: { type: 'string', format: 'date-time' }, limit: { type: 'integer', minimum: 1 } } }), ok: { status: 200, description: 'Rows, and whether the limit cut them off', schema: object }, errors: [...errors, 'invalid_json', 'invalid_trigger', 'trigger_query_failed', ...SANDBOX] },
    ];
  }),
  { method: 'POST', path: '/admin/v1/orgs/:slug/flows', tag: 'Admin: triggers and flows', summary: 'Create a flow (a draft)', auth: 'adminKey', body: json(componentRef('flow', 'Flow')), ok: { status: 201, description: 'The flow', schema: object }, errors: [...ORG_DATA, 'invalid_json', 'invalid_flow', 'flow_exists'] },
  { method: 'GET', path: '/admin/v1/orgs/:slug/flows', tag: 'Admin: triggers and flows', summary: 'List flows', auth: 'adminKey', ok: { status: 200, description: '`{ "flows": [ … ] }`', schema: object }, errors: ORG_DATA },
  { method: 'GET', path: '/admin/v1/orgs/:slug/flows/:id', tag: 'Admin: triggers and flows', summary: 'One flow', auth: 'adminKey', ok: { status: 200, description: 'The flow', schema: object }, errors: [...ORG_DATA, 'flow_not_found'] },
  { method: 'PUT', path: '/admin/v1/orgs/:slug/flows/:id', tag: 'Admin: triggers and flows', summary: 'Replace a flow definition', auth: 'adminKey', body: json(componentRef('flow', 'Flow')), ok: { status: 200, description: 'The flow', schema: object }, errors: [...ORG_DATA, 'invalid_json', 'invalid_flow', 'flow_not_found'] },
  { method: 'POST', path: '/admin/v1/orgs/:slug/flows/:id/start', tag: 'Admin: triggers and flows', summary: 'Start a flow', auth: 'adminKey', ok: { status: 200, description: 'The flow', schema: object }, errors: [...ORG_DATA, 'flow_not_found', 'invalid_flow'] },
  { method: 'POST', path: '/admin/v1/orgs/:slug/flows/:id/pause', tag: 'Admin: triggers and flows', summary: 'Pause a flow', auth: 'adminKey', ok: { status: 200, description: 'The flow', schema: object }, errors: [...ORG_DATA, 'flow_not_found'] },
  { method: 'POST', path: '/admin/v1/orgs/:slug/flows/:id/run', tag: 'Admin: triggers and flows', summary: 'Run a flow now, once', auth: 'adminKey', ok: { status: 200, description: 'What the run decided', schema: object }, errors: [...ORG_DATA, 'flow_not_found', 'trigger_query_failed'] },
  {
    method: 'GET', path: '/admin/v1/orgs/:slug/flows/:id/sends', tag: 'Admin: triggers and flows', summary: "A flow's sends: status, attempts, variant, trigger version", auth: 'adminKey',
    query: { identity: { description: 'only this contact: email:<address>, email-hash:<sha256 hex> or user_id:<id>' }, status: { description: 'only sends with this status: pending, delivered, failed, dead or holdout' }, ...pageQuery(PAGE_LIMITS.sends) },
    ok: page('sends', 'a page of sends, newest first'),
    errors: [...PAGED, 'flow_not_found', 'invalid_identity'],
  },
  {
    method: 'GET', path: '/admin/v1/orgs/:slug/flows/:id/decisions', tag: 'Admin: triggers and flows', summary: 'Every trigger row the flow decided and why (sent, excluded_by_segment, reentry_blocked, …)', auth: 'adminKey',
    query: { identity: { description: 'only this contact: email:<address>, email-hash:<sha256 hex> or user_id:<id>' }, ...pageQuery(PAGE_LIMITS.decisions) },
    ok: page('decisions', 'a page of decisions, newest run first'),
    errors: [...PAGED, 'flow_not_found', 'invalid_identity'],
  },
  {
    method: 'POST', path: '/admin/v1/orgs/:slug/flows/message-preview', tag: 'Admin: triggers and flows', summary: "A flow's message rendered against the first row its trigger returns over the last 24 hours, with that contact's profile; nothing is sent", auth: 'adminKey',
    body: json({ type: 'object', required: ['trigger', 'message'], properties: { trigger: { type: 'string' }, message: { type: 'object' }, flowName: { type: 'string' }, variant: { type: 'string' } } }),
    ok: { status: 200, description: '`{ "window": …, "row": { … } | null, "rendered": { … } | null, "error": … }`', schema: object },
    errors: [...ORG_DATA, 'invalid_json', 'invalid_flow', 'trigger_query_failed', ...SANDBOX],
  },
  { method: 'GET', path: '/admin/v1/orgs/:slug/webhook-secret', tag: 'Admin: triggers and flows', summary: "The key webhook receivers verify the org's signatures with", auth: 'adminKey', ok: { status: 200, description: 'The signing secret', schema: object }, errors: ORG_DATA },

  // Operations
  { method: 'GET', path: '/healthz', tag: 'Operations', summary: 'Liveness: can this process go on without a restart', auth: 'none', ok: { status: 200, description: '`{ "status": "ok", "checks": … }`', schema: object }, errors: ['unhealthy'] },
  { method: 'GET', path: '/readyz', tag: 'Operations', summary: 'Readiness: can it serve now', auth: 'none', ok: { status: 200, description: '`{ "status": "ready", … }`', schema: object }, errors: ['not_ready'] },
  { method: 'GET', path: '/metrics', tag: 'Operations', summary: 'Prometheus metrics (on METRICS_PORT instead when set)', auth: 'none', ok: { status: 200, description: 'Prometheus text format', contentType: 'text/plain' }, errors: [] },
  { method: 'GET', path: '/problems', tag: 'Operations', summary: 'Every problem code, what it means and how to fix it (HTML)', auth: 'none', ok: { status: 200, description: 'HTML', contentType: 'text/html' }, errors: [] },
  { method: 'GET', path: '/problems/:code', tag: 'Operations', summary: 'The page a problem `type` points to (HTML)', auth: 'none', ok: { status: 200, description: 'HTML', contentType: 'text/html' }, errors: ['not_found'] },
  { method: 'GET', path: '/openapi.json', tag: 'Operations', summary: 'This document', auth: 'none', ok: { status: 200, description: 'OpenAPI 3.1', schema: object }, errors: [] },
];
