/**
 * GET /audience/v2/contacts?identity=<type>:<value>[&fields=a,b] (SPEC 6.2): one contact's profile from
 * the in-memory serving index. Order: token → org access → org rate limit (the routes' hook, auth.ts) →
 * Accept → identity → fields → lookup, so every answer after authentication carries the org's RateLimit
 * headers.
 * The e-mail never reaches logs (the request log has no query string) or error bodies.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { AppError } from '../../core/errors.js';
import { OrgUnavailable } from '../../core/unavailable.js';
import { type Metrics, seriesBy } from '../../ops/metrics.js';
import type { IndexedProfile, ProfileIndex } from '../../events/profiles/profile-index.js';
import { acceptsJson } from '../../http/accepts-json.js';
import { normalizeEmail } from '../../core/domain.js';
import { parseIdentity } from '../../events/profiles/parse-identity.js';
import { object, operationSchema, validatedAs } from '../../openapi/route-schema.js';
import type { Context } from '../../core/context.js';
import type { Freshness } from '../../events/profiles/freshness.js';
import type { ShardRelay } from '../../cluster/relay-to-shard.js';
import { AFTER_DESCRIPTION, DEFAULT_WAIT_MS, MAX_WAIT_MS, META_SCHEMA, metaJson, metaTail, shardForAfter, WAIT_DESCRIPTION, waitForAfter } from './fresh.js';

export interface ContactsRouteDeps {
  ctx: Context;
  profiles: ProfileIndex;
  freshness: Freshness;
  metrics: Metrics;
  /** NATS mode: the shards, which answer what this process cannot (`after=` for an org it keeps no compactor for). */
  relay?: ShardRelay;
}

export const CONTACTS_ROUTE = '/audience/v2/contacts';

/** A relayed GET has no body. */
export const NO_BODY = Buffer.alloc(0);

/** Fastify's querystring parser gives an array for a repeated parameter (`fields=a&fields=b`). */
interface Query {
  identity?: string | string[];
  fields?: string | string[];
  after?: string | string[];
  wait?: string | string[];
}

export const IDENTITY_DESCRIPTION = 'email:<address>, email-hash:<sha256 hex> or user_id:<id>';
/** Why an identity was refused (one contact: 400 invalid_identity; a batch: its entry's detail). */
export const INVALID_IDENTITY = `identity must be ${IDENTITY_DESCRIPTION}`;

export const RATE_LIMIT_HEADERS = {
  RateLimit: { description: 'The org\'s budget left: `"org";r=<remaining>;t=<seconds to full>`', schema: { type: 'string' } },
  'RateLimit-Policy': { description: 'The org\'s rate policy: `"org";q=<burst>;w=<window seconds>`', schema: { type: 'string' } },
};

const schema = operationSchema({
  tag: 'Audience API',
  summary: "One contact's profile, with the org's content fields",
  description:
    'Every answer after authentication carries the org\'s RateLimit headers. An unknown contact is answered with the org\'s ' +
    '`notFoundStatus` (404, or 400 when the org chose it). The query is checked by the operation itself: a parameter given twice is ' +
    '`invalid_identity` or `invalid_fields`.',
  operationId: 'getAudienceContact',
  auth: 'audienceToken',
  querystring: {
    type: 'object',
    required: ['identity'],
    properties: {
      identity: { type: 'string', minLength: 3, description: IDENTITY_DESCRIPTION },
      fields: { type: 'string', description: 'comma-separated content fields to return (default: all of the org’s content fields)' },
      after: { type: 'string', maxLength: 512, description: AFTER_DESCRIPTION },
      wait: { type: 'integer', minimum: 0, maximum: MAX_WAIT_MS, default: DEFAULT_WAIT_MS, description: WAIT_DESCRIPTION },
    },
  },
  ok: {
    status: 200,
    description: 'The contact: each content field asked for, null (or [] for a list field) when the contact has none',
    headers: RATE_LIMIT_HEADERS,
    schema: object({ status: { const: 'success' }, contact: { type: 'object', additionalProperties: true }, meta: META_SCHEMA }, ['status', 'contact', 'meta']),
  },
  errors: ['invalid_token', 'audience_api_not_enabled', 'rate_limited', 'not_acceptable', 'invalid_request', 'invalid_identity', 'invalid_fields', 'contact_not_found', 'profile_not_current', 'org_unavailable', 'shard_unavailable'],
});

export function registerContactsRoute(app: FastifyInstance, deps: ContactsRouteDeps): void {
  const { profiles, freshness, metrics } = deps;
  const answered = seriesBy((status) => metrics.lookups.labels(status));
  const onResponse = (_request: unknown, reply: FastifyReply, done: () => void) => {
    answered(String(reply.statusCode)).inc();
    done();
  };

  app.get<{ Querystring: Query }>(CONTACTS_ROUTE, { schema, validatorCompiler: validatedAs({ querystring: null }), onResponse }, async (request, reply) => {
    // audienceAuth (auth.ts), the hook of these routes, set it: token, org access and rate limit passed.
    const org = request.audienceOrg;
    if (!org) throw new Error('the Audience API routes were registered without their audienceAuth hook');
    if (!acceptsJson(request.headers.accept)) throw new AppError('not_acceptable', 'this API answers application/json only');
    if (Array.isArray(request.query.identity)) {
      throw new AppError('invalid_identity', 'identity was given more than once; pass exactly one identity=<type>:<value>');
    }
    const identity = request.query.identity;
    const { after, wait } = request.query;
    const shard = shardForAfter(request, freshness, deps.relay, org.slug, after);
    if (shard) return shard.send(request, reply, { slug: org.slug, body: NO_BODY, org: 'your org' });
    const find = profiles.finder(org.slug);
    let contact = findContact(find, identity);
    if (contact === null) throw new AppError('invalid_identity', INVALID_IDENTITY);
    const fields = selectFields(org.contentFields, request.query.fields);
    if (after !== undefined || wait !== undefined) {
      await waitForAfter(freshness, org.slug, after, wait);
      // Found again: the refresh waited for replaced the entry (or made it).
      contact = findContact(profiles.finder(org.slug), identity);
    }
    if (!contact) {
      // Its profiles could not be loaded: "no such contact" would be a lie.
      if (profiles.isUnavailable(org.slug)) throw new OrgUnavailable(org.slug, 'its profiles could not be loaded');
      throw new AppError('contact_not_found', 'no contact with this identity', { status: org.notFoundStatus });
    }
    reply.type(ANSWER_TYPE);
    return answerText(contact, fields, metaTail(deps.ctx.clock.now(), freshness.lagMs(org.slug)));
  });
}

/**
 * The contact `raw` names: undefined when there is none, null when `raw` is not an identity. An e-mail
 * the index holds is looked up before its address is checked (the check cost more than the lookup): a
 * key of the index is a checked, normalized address, so finding it is the check.
 */
export function findContact(find: ReturnType<ProfileIndex['finder']>, raw: string | undefined): IndexedProfile | undefined | null {
  if (raw?.startsWith('email:')) {
    const found = find('email', normalizeEmail(raw.slice('email:'.length)));
    if (found) return found;
  }
  const identity = parseIdentity(raw);
  return identity ? find(identity.type, identity.value) : null;
}

export const ANSWER_TYPE = 'application/json; charset=utf-8';

/** The 200 answer: the contact's fields and its meta, `tail` the request's part of the meta (metaTail). */
export function answerText(contact: IndexedProfile, fields: readonly string[], tail: string): string {
  return `{"status":"success","contact":${contactJson(contact, fields)},"meta":${metaJson(contact, tail)}}`;
}

/**
 * The contact's content fields as JSON, serialized once and reused while the same fields are asked for:
 * the org's content fields are one array until the org changes, so the usual check is one comparison.
 */
export function contactJson(contact: IndexedProfile, fields: readonly string[]): string {
  const cached = contact.answer;
  if (cached !== undefined && (cached.fields === fields || sameFields(cached.fields, fields))) return cached.json;
  const body: Record<string, unknown> = Object.create(null);
  for (const field of fields) {
    // Own members only: a content field named like an Object.prototype member (an imported `constructor`
    // column) must answer null for a contact without it, not the inherited function.
    const value = Object.hasOwn(contact.profile, field) ? contact.profile[field] : undefined;
    body[field] = value === undefined ? (ARRAY_FIELDS.has(field) ? [] : null) : value;
  }
  const json = JSON.stringify(body);
  contact.answer = { fields, json };
  return json;
}

function sameFields(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((field, i) => field === b[i]);
}

const ARRAY_FIELDS = new Set(['campaigns_received', 'flow_variant_membership']);

/** The org's content fields, or the requested subset of them, in configured order. */
export function selectFields(contentFields: string[], requested: string | string[] | undefined): string[] {
  if (requested === undefined) return contentFields;
  if (typeof requested !== 'string') {
    throw new AppError('invalid_fields', 'fields was given more than once; pass one comma-separated list, e.g. fields=email_address,first_name');
  }
  return fieldsOf(contentFields, requested.split(',').map((f) => f.trim()));
}

/** `wanted`, each a content field of the org, in the org's order: else 400 invalid_fields naming the others. */
export function fieldsOf(contentFields: string[], wanted: string[]): string[] {
  const unknown = wanted.filter((f) => !contentFields.includes(f));
  if (wanted.length === 0 || unknown.length > 0 || wanted.some((f) => f === '')) {
    throw new AppError('invalid_fields', `not content fields of this org: ${unknown.join(', ') || '(empty)'}`);
  }
  return contentFields.filter((f) => wanted.includes(f));
}
