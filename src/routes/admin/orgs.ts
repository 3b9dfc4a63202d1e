/** Admin API, orgs and partner credentials (SPEC 3). */
import type { FastifyInstance } from 'fastify';
import { ENVIRONMENTS, type Environment } from '../../core/domain.js';
import type { OrgCreate, OrgPatch } from '../../generated/org.js';
import type { OrgStore } from '../../control/org-store.js';
import type { TokenStore } from '../../control/token-store.js';
import { SCHEMA_BASE } from '../../core/schemas.js';
import { slugParams, slugSchema } from '../../core/route-params.js';

const orgSchema = (def: string) => ({ $ref: `${SCHEMA_BASE}org.schema.json#/$defs/${def}` });

export function registerOrgRoutes(app: FastifyInstance, orgs: OrgStore, tokens: TokenStore): void {
  app.post<{ Body: OrgCreate }>('/admin/v1/orgs', { schema: { body: orgSchema('OrgCreate') } }, async (request, reply) => {
    const created = await orgs.create(request.body);
    return reply.code(201).send(created);
  });

  app.get('/admin/v1/orgs', async () => ({ orgs: await orgs.list() }));

  app.get<{ Params: { slug: string } }>('/admin/v1/orgs/:slug', { schema: { params: slugParams } }, async (request) => {
    const org = await orgs.get(request.params.slug);
    return { org, credentials: await orgs.partnerIds(org.slug) };
  });

  app.patch<{ Params: { slug: string }; Body: OrgPatch }>(
    '/admin/v1/orgs/:slug',
    { schema: { params: slugParams, body: orgSchema('OrgPatch') } },
    async (request) => ({ org: await orgs.patch(request.params.slug, request.body) }),
  );

  // The org and all its data: credentials and tokens stop working at once; its storage process deletes
  // its database (and, with NATS, its events and profiles). The slug is never given to another org.
  app.delete<{ Params: { slug: string } }>('/admin/v1/orgs/:slug', { schema: { params: slugParams } }, async (request) => {
    const { slug } = request.params;
    const { deletedAt } = await orgs.remove(slug);
    await tokens.removeAll(slug);
    return { slug, deleted: true, deletedAt };
  });

  app.post<{ Params: { slug: string; env: Environment } }>(
    '/admin/v1/orgs/:slug/credentials/:env/rotate',
    {
      schema: {
        params: {
          type: 'object',
          properties: { slug: slugSchema, env: { enum: [...ENVIRONMENTS] } },
          required: ['slug', 'env'],
        },
      },
    },
    async (request) => {
      const { slug, env } = request.params;
      return { environment: env, credentials: await orgs.rotate(slug, env) };
    },
  );
}
