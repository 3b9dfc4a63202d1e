/**
 * What each route declares in its Fastify `schema` so that /openapi.json can be generated from the routes
 * (@fastify/swagger, src/routes/docs.ts): tag, summary, operationId, who may call it, its parameters,
 * body, and an answer for every status it gives: the success answer and one problem+json answer per
 * status its problem codes have (the shared `Problem` component), 500 always included.
 *
 * Validation is unchanged by this: a part listed in `describedOnly` is in the document but checked by the
 * handler as before (its own codes: schema_violation, invalid_flow, invalid_identity, …), not by Fastify;
 * the other parts are validated by Fastify as they were. Answers are serialized with JSON.stringify
 * whatever their schema says (app.ts), so a response schema describes the answer and never changes it.
 */
import type { FastifySchema, FastifySchemaCompiler } from 'fastify';
import { type ErrorCode, errorCatalog } from '../core/errors.js';
import { compileRouteSchema, SCHEMA_BASE } from '../core/schemas.js';

export type Auth = 'none' | 'partner' | 'partnerBasic' | 'writeKey' | 'audienceToken' | 'adminKey';
export type Tag = 'Partners' | 'Tracking API (Segment-compatible)' | 'Audience API' | 'Admin: orgs' | 'Admin: backups' | 'Admin: org data' | 'Admin: triggers and flows' | 'Operations';

/** The tags in the order the reference shows them, each with its description. */
export const TAGS: { name: Tag; description: string }[] = [
  { name: 'Partners', description: 'Sending events: authenticated by `partnerId` and `partnerSecret` in the body' },
  { name: 'Tracking API (Segment-compatible)', description: "Segment's, RudderStack's and Jitsu's tracking paths, for their SDKs unchanged: an org environment's write key (HTTP Basic user name, `writeKey` in the body, or `X-Write-Key`)" },
  { name: 'Audience API', description: 'Contact profiles for personalization services: an org\'s Audience API token' },
  { name: 'Admin: orgs', description: 'Orgs, partner credentials and Audience API tokens: the admin key' },
  { name: 'Admin: backups', description: 'Backups of a storage process: the admin key' },
  { name: 'Admin: org data', description: 'What an org\'s database holds: events, quarantine, contacts: the admin key' },
  { name: 'Admin: triggers and flows', description: 'Trigger and segment SQL, flows, their sends and decisions: the admin key' },
  { name: 'Operations', description: 'Health, readiness, metrics, the error pages and this document: public' },
];

export const SECURITY_SCHEMES = {
  writeKey: { type: 'http', scheme: 'basic', description: "An org environment's write key as the user name, no password (`credentials.<env>.writeKey`); also accepted as `writeKey` in the body or the `X-Write-Key` header" },
  partnerBasic: { type: 'http', scheme: 'basic', description: "A partner's own credentials: `partnerId:partnerSecret`, or the org environment's write key as the user name with no password" },
  adminKey: { type: 'http', scheme: 'bearer', description: 'The admin key (ADMIN_KEY, or DATA_DIR/admin.key when generated)' },
  audienceToken: { type: 'http', scheme: 'bearer', description: "An org's Audience API token (POST /admin/v1/orgs/{slug}/tokens)" },
} as const;

type Schema = Record<string, unknown>;

export const PROBLEM_REF = { $ref: '#/components/schemas/Problem' } as const;

/** `schemas/<file>` (or one of its $defs), as the route validator and the document both resolve it. */
export const schemaRef = (file: string, def?: string) => ({ $ref: `${SCHEMA_BASE}${file}.schema.json${def ? `#/$defs/${def}` : ''}` });

/** The success answer of an operation. */
export interface Ok {
  status: number;
  description: string;
  /** The JSON answer's schema; absent with `contentType`. */
  schema?: Schema;
  /** A non-JSON answer (text, HTML, tar). */
  contentType?: string;
  headers?: Record<string, Schema>;
}

export interface OperationDoc {
  tag: Tag;
  summary: string;
  description?: string;
  operationId: string;
  auth: Auth;
  params?: Schema;
  querystring?: Schema;
  body?: Schema;
  /** A body that is not JSON (the import's CSV or NDJSON). */
  consumes?: string[];
  ok: Ok;
  /** Every problem code the route can answer besides `internal_error` (always there). */
  errors: readonly ErrorCode[];
}

/** A route's `schema`: what Fastify validates (params, querystring, body) and what the document says. */
export function operationSchema(doc: OperationDoc): FastifySchema & Schema {
  const description = [doc.description, doc.auth === 'partner' ? 'Authenticated by `partnerId` and `partnerSecret` in the body.' : undefined].filter(Boolean).join(' ');
  return {
    tags: [doc.tag],
    summary: doc.summary,
    description: description || doc.summary,
    operationId: doc.operationId,
    security: doc.auth === 'adminKey' || doc.auth === 'audienceToken' || doc.auth === 'writeKey' || doc.auth === 'partnerBasic' ? [{ [doc.auth]: [] }] : [],
    ...(doc.consumes ? { consumes: doc.consumes } : {}),
    ...(doc.params ? { params: doc.params } : {}),
    ...(doc.querystring ? { querystring: doc.querystring } : {}),
    ...(doc.body ? { body: doc.body } : {}),
    response: { [doc.ok.status]: okResponse(doc.ok), ...problemResponses(doc.errors) },
  };
}

function okResponse(ok: Ok): Schema {
  const content = ok.contentType ? { [ok.contentType]: { schema: ok.schema ?? { type: 'string' } } } : { 'application/json': { schema: ok.schema ?? { type: 'object' } } };
  return { description: ok.description, ...(ok.headers ? { headers: ok.headers } : {}), content };
}

/** One problem+json answer per status, naming every code it can carry (with a link to the code's page). */
export function problemResponses(codes: readonly ErrorCode[]): Record<string, Schema> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set([...codes, 'internal_error' as const])) {
    const status = errorCatalog[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].sort(([a], [b]) => a - b).map(([status, list]) => [
      String(status),
      {
        description: list.map((code) => `[\`${code}\`](/problems/${code}): ${errorCatalog[code].title}`).join('; '),
        content: { 'application/problem+json': { schema: PROBLEM_REF } },
      },
    ]),
  );
}

/**
 * A route option (`validatorCompiler`) for routes whose document says more than Fastify checks: each part
 * named is validated with the schema given here, the one the route validated before its document was
 * generated (`null`: not validated by Fastify, the handler checks it with its own problem codes), so
 * adding a pattern or a range to the document changes no answer. Parts not named are validated with the
 * documented schema, as usual.
 */
export function validatedAs(parts: { body?: object | null; querystring?: object | null; params?: object | null }): FastifySchemaCompiler<unknown> {
  return ({ schema, httpPart }) => {
    const own = httpPart === 'body' || httpPart === 'querystring' || httpPart === 'params' ? parts[httpPart] : undefined;
    if (own === null) return () => true;
    return compileRouteSchema(own ?? (schema as object));
  };
}

/** RFC 9457 problem details, as every error answer carries them. */
export const PROBLEM_SCHEMA = {
  type: 'object',
  description: 'RFC 9457 problem details. `type` is a URI reference to the page of `code` served by the service (/problems/<code>). Some codes add members of their own (e.g. `messageId`, `checks`).',
  required: ['type', 'title', 'status', 'code'],
  properties: {
    type: { type: 'string', format: 'uri-reference' },
    title: { type: 'string' },
    status: { type: 'integer', minimum: 400, maximum: 599 },
    detail: { type: 'string', description: 'What went wrong and how to fix it' },
    code: { type: 'string', enum: Object.keys(errorCatalog) },
    requestId: { type: 'string', description: 'The Request-Id of the response' },
    errors: {
      type: 'array',
      items: { type: 'object', required: ['path', 'message'], properties: { path: { type: 'string' }, message: { type: 'string' } } },
    },
  },
} as const;

/** Shared pieces of route schemas. */
export const nullable = (type: string, extra: Schema = {}) => ({ type: [type, 'null'], ...extra });
export const dateTime = { type: 'string', format: 'date-time' } as const;
export const object = (properties: Record<string, unknown>, required: string[] = Object.keys(properties), extra: Schema = {}) => ({
  type: 'object',
  required,
  properties,
  ...extra,
});

/** The answer of a paged list: the page's items under `member`, and `nextCursor`. */
export const pageOf = (member: string, item: Schema) =>
  object({
    [member]: { type: 'array', items: item },
    nextCursor: { type: ['string', 'null'], description: 'pass as `cursor` for the next page; null on the last page' },
  });
