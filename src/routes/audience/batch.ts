/**
 * POST /audience/v2/contacts/batch (issue 41): up to 100 contacts' profiles in one request, for a page
 * that shows several people (a household, recommendations' owners). Each identity is answered in the order
 * asked — found with its content fields, not found, or invalid with why — from the same serving index and
 * the same cached answers as one contact. The token, org access and a first unit of the org's rate budget
 * are the routes' hook (auth.ts); a batch costs one unit per 10 identities (rounded up, at most the org's
 * burst), the rest drawn here once the body is read. Another org's contacts are simply not found: the
 * index is asked for the token's org only.
 */
import type { FastifyInstance, FastifySchemaCompiler } from 'fastify';
import { AppError } from '../../core/errors.js';
import { compileRouteSchema } from '../../core/schemas.js';
import { OrgUnavailable } from '../../core/unavailable.js';
import type { IndexedProfile, ProfileIndex } from '../../events/profiles/profile-index.js';
import { acceptsJson } from '../../http/accepts-json.js';
import { object, operationSchema } from '../../openapi/route-schema.js';
import { orgRatePolicy } from '../../ratelimit/policies.js';
import type { RateLimiter } from '../../ratelimit/types.js';
import type { Context } from '../../core/context.js';
import type { Metrics } from '../../ops/metrics.js';
import { chargeOrg } from './auth.js';
import type { Freshness } from '../../events/profiles/freshness.js';
import type { ShardRelay } from '../../cluster/relay-to-shard.js';
import { isRelayed } from '../../cluster/replay-request.js';
import { AFTER_DESCRIPTION, MAX_WAIT_MS, META_SCHEMA, metaHead, metaTail, shardForAfter, WAIT_DESCRIPTION, waitForAfter } from './fresh.js';
import { contactJson, fieldsOf, findContact, IDENTITY_DESCRIPTION, INVALID_IDENTITY, RATE_LIMIT_HEADERS } from './contacts.js';

export const BATCH_MAX_IDENTITIES = 100;
export const BATCH_MAX_BYTES = 64 * 1024;
/** Identities per unit of the org's rate budget. */
export const IDENTITIES_PER_UNIT = 10;
const INVALID_DETAIL = JSON.stringify(INVALID_IDENTITY);

interface Body {
  identities: string[];
  fields?: string[];
  after?: string;
  wait?: number;
}

const entry = {
  oneOf: [
    object({ identity: { type: 'string' }, status: { const: 'found' }, contact: { type: 'object', additionalProperties: true }, meta: META_SCHEMA }, ['identity', 'status', 'contact', 'meta']),
    object({ identity: { type: 'string' }, status: { const: 'not_found' } }, ['identity', 'status']),
    object({ identity: { type: 'string' }, status: { const: 'invalid' }, detail: { type: 'string' } }, ['identity', 'status', 'detail']),
  ],
};

const schema = operationSchema({
  tag: 'Audience API',
  summary: "Several contacts' profiles at once (1 to 100)",
  description:
    'Each identity is answered in the order asked: `found` with the content fields (as one contact is), `not_found`, or `invalid` with why. ' +
    `It costs one unit of the org's rate budget per ${IDENTITIES_PER_UNIT} identities, rounded up (at most the org's burst). ` +
    `An empty list, more than ${BATCH_MAX_IDENTITIES} identities, the same identity twice, or a body over 64 KB is a 400 \`invalid_request\` saying the limit.`,
  operationId: 'getAudienceContactsBatch',
  auth: 'audienceToken',
  body: object(
    {
      identities: { type: 'array', minItems: 1, maxItems: BATCH_MAX_IDENTITIES, uniqueItems: true, items: { type: 'string', maxLength: 512, description: IDENTITY_DESCRIPTION }, examples: [['email:ada@example.com', 'user_id:42']] },
      fields: { type: 'array', minItems: 1, maxItems: 200, items: { type: 'string', maxLength: 200 }, description: "content fields to return (default: all of the org's content fields)" },
      after: { type: 'string', minLength: 1, maxLength: 512, description: AFTER_DESCRIPTION },
      wait: { type: 'integer', minimum: 0, maximum: MAX_WAIT_MS, description: WAIT_DESCRIPTION },
    },
    ['identities'],
    { additionalProperties: false },
  ),
  ok: {
    status: 200,
    description: 'One entry per identity, in the order asked',
    headers: RATE_LIMIT_HEADERS,
    schema: object({ status: { const: 'success' }, contacts: { type: 'array', items: entry } }, ['status', 'contacts']),
  },
  errors: ['invalid_token', 'audience_api_not_enabled', 'rate_limited', 'not_acceptable', 'invalid_request', 'invalid_json', 'invalid_fields', 'profile_not_current', 'org_unavailable', 'shard_unavailable'],
});

export interface BatchRouteDeps {
  ctx: Context;
  profiles: ProfileIndex;
  freshness: Freshness;
  orgLimiter: RateLimiter;
  metrics: Metrics;
  /** NATS mode: the shards, which answer what this process cannot (`after` for an org it keeps no compactor for). */
  relay?: ShardRelay;
}

/**
 * The body's schema, checked in one pass over a plain body (the common case: ajv's generated check of
 * 100 identities cost as much as answering them), and by the schema itself otherwise, so a refusal
 * reads as every other route's.
 */
const plainFirst: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const full = compileRouteSchema(schema as object);
  if (httpPart !== 'body') return full;
  const validate = (body: unknown) => {
    if (isPlainBody(body)) return true;
    const valid = full(body);
    validate.errors = full.errors;
    return valid;
  };
  validate.errors = full.errors;
  return validate;
};

function isPlainBody(body: unknown): body is Body {
  if (typeof body !== 'object' || body === null) return false;
  let members = 0;
  for (const key in body) if (Object.hasOwn(body, key)) members++;
  const { identities, fields, after, wait } = body as Partial<Body>;
  if (members !== 1 + Number(fields !== undefined) + Number(after !== undefined) + Number(wait !== undefined)) return false;
  // With after or wait: the schema itself (a read-your-writes batch waits anyway).
  if (after !== undefined || wait !== undefined) return false;
  if (!stringsWithin(identities, BATCH_MAX_IDENTITIES, 512) || new Set(identities).size !== identities.length) return false;
  return fields === undefined || stringsWithin(fields, 200, 200);
}

/** 1 to `max` strings, none longer than `maxLength` UTF-16 units (so no more code points either). */
function stringsWithin(list: unknown, max: number, maxLength: number): list is string[] {
  if (!Array.isArray(list) || list.length === 0 || list.length > max) return false;
  for (const item of list) if (typeof item !== 'string' || item.length > maxLength) return false;
  return true;
}

/**
 * A found entry after its identity, up to its meta's shared tail: kept with the contact's answer (the
 * same fields asked, the same string), so an entry is two concatenations.
 */
function foundJson(contact: IndexedProfile, fields: readonly string[]): string {
  const json = contactJson(contact, fields);
  const answer = contact.answer!;
  answer.found ??= `"status":"found","contact":${json},"meta":${metaHead(contact)}`;
  return answer.found;
}

export function registerBatchRoute(app: FastifyInstance, deps: BatchRouteDeps): void {
  const { profiles, freshness } = deps;
  const tooLarge = `a batch body is at most ${BATCH_MAX_BYTES} bytes (64 KB): send at most ${BATCH_MAX_IDENTITIES} identities, without padding`;
  app.post<{ Body: Body }>('/audience/v2/contacts/batch', { schema, validatorCompiler: plainFirst, bodyLimit: BATCH_MAX_BYTES, config: { bodyTooLarge: tooLarge } }, async (request, reply) => {
    const org = request.audienceOrg;
    if (!org) throw new Error('the Audience API routes were registered without their audienceAuth hook');
    if (!acceptsJson(request.headers.accept)) throw new AppError('not_acceptable', 'this API answers application/json only');
    const { identities } = request.body;
    const fields = request.body.fields === undefined ? org.contentFields : fieldsOf(org.contentFields, request.body.fields);
    // The hook drew one unit; the rest of the batch's cost now that its size is known (in all at most the burst).
    const rest = Math.min(Math.ceil(identities.length / IDENTITIES_PER_UNIT), orgRatePolicy(org).burst) - 1;
    // A call relayed from another process was charged there.
    if (rest > 0 && !isRelayed(request)) {
      const charged = chargeOrg(deps, org, reply, deps.ctx.clock.now(), rest);
      if (charged) await charged;
    }
    const { after, wait } = request.body;
    const shard = shardForAfter(request, freshness, deps.relay, org.slug, after);
    if (shard) return shard.send(request, reply, { slug: org.slug, body: Buffer.from(JSON.stringify(request.body)), org: 'your org' });
    if (after !== undefined || wait !== undefined) await waitForAfter(freshness, org.slug, after, wait);
    const tail = metaTail(deps.ctx.clock.now(), freshness.lagMs(org.slug));
    const find = profiles.finder(org.slug);
    // Appended to one string (15 µs of 80 less than joining an array of entries, measured).
    let answer = '{"status":"success","contacts":[';
    let missing = false;
    for (const [i, raw] of identities.entries()) {
      const contact = findContact(find, raw);
      answer += `${i === 0 ? '' : ','}{"identity":${JSON.stringify(raw)},`;
      if (contact === null) answer += `"status":"invalid","detail":${INVALID_DETAIL}}`;
      else if (contact) answer += foundJson(contact, fields) + tail + '}';
      else {
        missing = true;
        answer += '"status":"not_found"}';
      }
    }
    // Its profiles could not be loaded: "not found" would be a lie.
    if (missing && profiles.isUnavailable(org.slug)) throw new OrgUnavailable(org.slug, 'its profiles could not be loaded');
    reply.type('application/json; charset=utf-8');
    return `${answer}]}`;
  });
}
