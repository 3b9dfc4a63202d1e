/**
 * Admin API for Audience API tokens (SPEC 3). Registered inside the admin scope, whose onRequest hook
 * already checks the admin key. Revokes answer 200 `{ revoked: [...] }` whatever the selector, so a
 * caller sees exactly which tokens stopped working.
 */
import type { FastifyInstance } from 'fastify';
import type { TokenCreate, TokenRevoke } from '../../../generated/token.js';
import { slugSchema } from '../../../core/route-params.js';
import { object, operationSchema, schemaRef } from '../../../openapi/route-schema.js';
import { ADMIN, slugOnly, slugParam } from '../schema-parts.js';
import type { OrgStore } from '../../../control/org-store.js';
import { SCHEMA_BASE } from '../../../core/schemas.js';
import type { TokenStore } from '../../../control/token-store.js';

const tokenSchema = (def: string) => ({ $ref: `${SCHEMA_BASE}token.schema.json#/$defs/${def}` });
// Any string: an id of the wrong shape is simply not found (404), like an unknown one.
const tokenParams = { type: 'object', properties: { slug: slugSchema, id: { type: 'string' } }, required: ['slug', 'id'] } as const;
const revoked = object({ revoked: { type: 'array', items: schemaRef('token'), description: 'The tokens that stopped working (none when already revoked)' } });

const schemas = {
  create: operationSchema({
    tag: 'Admin: orgs', summary: 'Create an Audience API token (shown once)', operationId: 'createToken', auth: 'adminKey', params: slugOnly,
    body: tokenSchema('TokenCreate'),
    ok: { status: 201, description: 'The token, the only time it is shown', schema: tokenSchema('TokenIssued') },
    errors: [...ADMIN, 'invalid_json', 'org_not_found', 'token_pool_full'],
  }),
  list: operationSchema({
    tag: 'Admin: orgs', summary: "List an org's tokens (last 3 characters, creator, use)", operationId: 'listTokens', auth: 'adminKey', params: slugOnly,
    ok: { status: 200, description: 'Every token of the org, revoked ones included', schema: object({ tokens: { type: 'array', items: schemaRef('token') } }) },
    errors: [...ADMIN, 'org_not_found'],
  }),
  revokeById: operationSchema({
    tag: 'Admin: orgs', summary: 'Revoke a token by id', operationId: 'revokeToken', auth: 'adminKey',
    params: { ...tokenParams, properties: { slug: slugParam, id: { type: 'string', description: 'The token id (an id of another shape is not found)' } } },
    ok: { status: 200, description: 'The revoked token', schema: revoked },
    errors: [...ADMIN, 'org_not_found', 'token_not_found'],
  }),
  revoke: operationSchema({
    tag: 'Admin: orgs', summary: 'Revoke a token by its last 3 characters or its creator', operationId: 'revokeTokensBySelector', auth: 'adminKey', params: slugOnly,
    body: tokenSchema('TokenRevoke'),
    ok: { status: 200, description: 'The revoked tokens', schema: revoked },
    errors: [...ADMIN, 'invalid_json', 'org_not_found', 'token_not_found', 'token_ambiguous'],
  }),
};

export function registerTokenRoutes(app: FastifyInstance, deps: { tokens: TokenStore; orgs: OrgStore }): void {
  const { tokens, orgs } = deps;

  app.post<{ Params: { slug: string }; Body: TokenCreate }>(
    '/admin/v1/orgs/:slug/tokens',
    { schema: schemas.create },
    async (request, reply) => {
      const org = await orgs.get(request.params.slug);
      const created = await tokens.create(org.slug, request.body);
      request.logDetails = { tokenId: created.id };
      return reply.code(201).send(created);
    },
  );

  app.get<{ Params: { slug: string } }>('/admin/v1/orgs/:slug/tokens', { schema: schemas.list }, async (request) => {
    const org = await orgs.get(request.params.slug);
    return { tokens: tokens.list(org.slug) };
  });

  app.delete<{ Params: { slug: string; id: string } }>(
    '/admin/v1/orgs/:slug/tokens/:id',
    { schema: schemas.revokeById },
    async (request) => {
      const org = await orgs.get(request.params.slug);
      return { revoked: await tokens.revokeById(org.slug, request.params.id) };
    },
  );

  app.post<{ Params: { slug: string }; Body: TokenRevoke }>(
    '/admin/v1/orgs/:slug/tokens/revoke',
    { schema: schemas.revoke },
    async (request) => {
      const org = await orgs.get(request.params.slug);
      const body = request.body;
      const revoked = 'last3' in body ? await tokens.revokeByLast3(org.slug, body.last3) : await tokens.revokeByCreator(org.slug, body.createdBy);
      request.logDetails = { revoked: revoked.length };
      return { revoked };
    },
  );
}
