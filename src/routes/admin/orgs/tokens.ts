/**
 * Admin API for Audience API tokens (SPEC 3). Registered inside the admin scope, whose onRequest hook
 * already checks the admin key. Revokes answer 200 `{ revoked: [...] }` whatever the selector, so a
 * caller sees exactly which tokens stopped working.
 */
import type { FastifyInstance } from 'fastify';
import type { TokenCreate, TokenRevoke } from '../../../generated/token.js';
import { slugParams, slugSchema } from '../../../core/route-params.js';
import type { OrgStore } from '../../../control/org-store.js';
import { SCHEMA_BASE } from '../../../core/schemas.js';
import type { TokenStore } from '../../../control/token-store.js';

const tokenSchema = (def: string) => ({ $ref: `${SCHEMA_BASE}token.schema.json#/$defs/${def}` });
// Any string: an id of the wrong shape is simply not found (404), like an unknown one.
const tokenParams = { type: 'object', properties: { slug: slugSchema, id: { type: 'string' } }, required: ['slug', 'id'] } as const;

export function registerTokenRoutes(app: FastifyInstance, deps: { tokens: TokenStore; orgs: OrgStore }): void {
  const { tokens, orgs } = deps;

  app.post<{ Params: { slug: string }; Body: TokenCreate }>(
    '/admin/v1/orgs/:slug/tokens',
    { schema: { params: slugParams, body: tokenSchema('TokenCreate') } },
    async (request, reply) => {
      const org = await orgs.get(request.params.slug);
      return reply.code(201).send(await tokens.create(org.slug, request.body));
    },
  );

  app.get<{ Params: { slug: string } }>('/admin/v1/orgs/:slug/tokens', { schema: { params: slugParams } }, async (request) => {
    const org = await orgs.get(request.params.slug);
    return { tokens: tokens.list(org.slug) };
  });

  app.delete<{ Params: { slug: string; id: string } }>(
    '/admin/v1/orgs/:slug/tokens/:id',
    { schema: { params: tokenParams } },
    async (request) => {
      const org = await orgs.get(request.params.slug);
      return { revoked: await tokens.revokeById(org.slug, request.params.id) };
    },
  );

  app.post<{ Params: { slug: string }; Body: TokenRevoke }>(
    '/admin/v1/orgs/:slug/tokens/revoke',
    { schema: { params: slugParams, body: tokenSchema('TokenRevoke') } },
    async (request) => {
      const org = await orgs.get(request.params.slug);
      const body = request.body;
      const revoked = 'last3' in body ? await tokens.revokeByLast3(org.slug, body.last3) : await tokens.revokeByCreator(org.slug, body.createdBy);
      return { revoked };
    },
  );
}
