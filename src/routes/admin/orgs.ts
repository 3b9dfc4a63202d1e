/** Admin API, orgs and partner credentials (SPEC 3). */
import type { FastifyInstance } from 'fastify';
import { ENVIRONMENTS, type Environment } from '../../core/domain.js';
import type { OrgCreate, OrgPatch } from '../../generated/org.js';
import type { OrgStore } from '../../control/org-store.js';
import type { TokenStore } from '../../control/token-store.js';
import { SCHEMA_BASE } from '../../core/schemas.js';
import { dateTime, object, operationSchema, schemaRef } from '../../openapi/route-schema.js';
import { ADMIN, slugOnly, slugParam } from './schema-parts.js';

const orgSchema = (def: string) => ({ $ref: `${SCHEMA_BASE}org.schema.json#/$defs/${def}` });

const partnerId = { type: 'string', minLength: 1 };
const writeKey = { type: 'string', minLength: 1, description: 'The Segment-style write key (docs/partners.md, "Moving from Segment"); shown in this answer only' };
const credential = object({ partnerId, partnerSecret: { type: 'string', minLength: 1, description: 'Shown in this answer only' } });
const newCredential = object({ partnerId, partnerSecret: credential.properties.partnerSecret, writeKey });
const writeKeySummary = {
  anyOf: [object({ last4: { type: 'string', description: 'The last 4 characters of the write key' }, createdAt: dateTime }), { type: 'null' }],
  description: 'null: the environment has no write key (revoked, or the org predates write keys); rotate to get one',
};
const credentialSummary = object({ partnerId, writeKey: writeKeySummary });
const envParams = { type: 'object', properties: { slug: slugParam, env: { type: 'string', enum: [...ENVIRONMENTS] } }, required: ['slug', 'env'] };

const schemas = {
  create: operationSchema({
    tag: 'Admin: orgs', summary: 'Create an org; its partner credentials are in this answer only', operationId: 'createOrg', auth: 'adminKey',
    body: orgSchema('OrgCreate'),
    ok: { status: 201, description: 'The org and its staging and production credentials', schema: object({ org: schemaRef('org'), credentials: object({ staging: newCredential, production: newCredential }) }) },
    errors: [...ADMIN, 'invalid_json', 'org_exists'],
  }),
  list: operationSchema({
    tag: 'Admin: orgs', summary: 'List orgs', operationId: 'listOrgs', auth: 'adminKey',
    ok: { status: 200, description: 'Every org', schema: object({ orgs: { type: 'array', items: schemaRef('org') } }) },
    errors: ADMIN,
  }),
  get: operationSchema({
    tag: 'Admin: orgs', summary: "An org's settings and partner ids", operationId: 'getOrg', auth: 'adminKey', params: slugOnly,
    ok: { status: 200, description: 'The org, the partnerId of each environment and its write key by its last characters (secrets are never shown again)', schema: object({ org: schemaRef('org'), credentials: object({ staging: credentialSummary, production: credentialSummary }) }) },
    errors: [...ADMIN, 'org_not_found'],
  }),
  patch: operationSchema({
    tag: 'Admin: orgs', summary: "Change an org's settings", operationId: 'updateOrg', auth: 'adminKey', params: slugOnly,
    body: orgSchema('OrgPatch'),
    ok: { status: 200, description: 'The org as changed', schema: object({ org: schemaRef('org') }) },
    errors: [...ADMIN, 'invalid_json', 'org_not_found'],
  }),
  remove: operationSchema({
    tag: 'Admin: orgs', operationId: 'deleteOrg', auth: 'adminKey', params: slugOnly,
    summary: 'Delete an org and all its data',
    description: 'Credentials and tokens stop working at once; its database, events and profiles are removed; the slug is never reused.',
    ok: { status: 200, description: 'Deleted', schema: object({ slug: schemaRef('org', 'slug'), deleted: { const: true }, deletedAt: dateTime }) },
    errors: [...ADMIN, 'org_not_found'],
  }),
  rotate: operationSchema({
    tag: 'Admin: orgs', summary: 'Replace the partner secret of one environment (the old one stops working at once)', operationId: 'rotateOrgCredentials', auth: 'adminKey',
    params: envParams,
    ok: { status: 200, description: 'The new credential, shown once', schema: object({ environment: { type: 'string', enum: [...ENVIRONMENTS] }, credentials: credential }) },
    errors: [...ADMIN, 'org_not_found'],
  }),
  rotateWriteKey: operationSchema({
    tag: 'Admin: orgs', summary: 'Issue a new write key for one environment (the old one stops working at once)', operationId: 'rotateWriteKey', auth: 'adminKey',
    params: envParams,
    ok: { status: 200, description: 'The new write key, shown once', schema: object({ environment: { type: 'string', enum: [...ENVIRONMENTS] }, writeKey, last4: { type: 'string' } }) },
    errors: [...ADMIN, 'org_not_found'],
  }),
  revokeWriteKey: operationSchema({
    tag: 'Admin: orgs', summary: "Revoke one environment's write key (clients using it get 401 at once)", operationId: 'revokeWriteKey', auth: 'adminKey',
    params: envParams,
    ok: { status: 200, description: 'Revoked (also when there was none)', schema: object({ environment: { type: 'string', enum: [...ENVIRONMENTS] }, writeKey: { type: 'null' } }) },
    errors: [...ADMIN, 'org_not_found'],
  }),
};

export function registerOrgRoutes(app: FastifyInstance, orgs: OrgStore, tokens: TokenStore): void {
  app.post<{ Body: OrgCreate }>('/admin/v1/orgs', { schema: schemas.create }, async (request, reply) => {
    const created = await orgs.create(request.body);
    request.logDetails = { org: created.org.slug };
    return reply.code(201).send(created);
  });

  app.get('/admin/v1/orgs', { schema: schemas.list }, async () => ({ orgs: await orgs.list() }));

  app.get<{ Params: { slug: string } }>('/admin/v1/orgs/:slug', { schema: schemas.get }, async (request) => {
    const org = await orgs.get(request.params.slug);
    return { org, credentials: await orgs.credentialSummary(org.slug) };
  });

  app.patch<{ Params: { slug: string }; Body: OrgPatch }>(
    '/admin/v1/orgs/:slug',
    { schema: schemas.patch },
    async (request) => ({ org: await orgs.patch(request.params.slug, request.body) }),
  );

  // The org and all its data: credentials and tokens stop working at once; its storage process deletes
  // its database (and, with NATS, its events and profiles). The slug is never given to another org.
  app.delete<{ Params: { slug: string } }>('/admin/v1/orgs/:slug', { schema: schemas.remove }, async (request) => {
    const { slug } = request.params;
    const { deletedAt } = await orgs.remove(slug);
    await tokens.removeAll(slug);
    return { slug, deleted: true, deletedAt };
  });

  app.post<{ Params: { slug: string; env: Environment } }>(
    '/admin/v1/orgs/:slug/credentials/:env/rotate',
    { schema: schemas.rotate },
    async (request) => {
      const { slug, env } = request.params;
      return { environment: env, credentials: await orgs.rotate(slug, env) };
    },
  );

  app.post<{ Params: { slug: string; env: Environment } }>(
    '/admin/v1/orgs/:slug/credentials/:env/write-key/rotate',
    { schema: schemas.rotateWriteKey },
    async (request) => {
      const { slug, env } = request.params;
      return { environment: env, ...(await orgs.rotateWriteKey(slug, env)) };
    },
  );

  app.delete<{ Params: { slug: string; env: Environment } }>(
    '/admin/v1/orgs/:slug/credentials/:env/write-key',
    { schema: schemas.revokeWriteKey },
    async (request) => {
      const { slug, env } = request.params;
      await orgs.revokeWriteKey(slug, env);
      return { environment: env, writeKey: null };
    },
  );
}
