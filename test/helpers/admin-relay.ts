/**
 * Two small Fastify apps on one private nats-server: a "shard" that serves its orgs' admin routes with
 * serveOrgAdmin, and an "api" whose same routes are relayed to it. Built like src/app.ts builds the
 * service (problem handler, Request-Id, JSON parser, adminAuth on the api), without DuckDB.
 */
import { createHash } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { Test } from 'tap';
import { adminAuth } from '../../src/routes/admin/auth.js';
import { systemClock } from '../../src/core/context.js';
import { GcraLimiter } from '../../src/ratelimit/gcra-limiter.js';
import { serveOrgAdmin, type OrgAdminServer } from '../../src/cluster/serve-org-admin.js';
import { relayOrgAdmin } from '../../src/cluster/relay-org-admin.js';
import { registerRelayRoutes } from '../../src/cluster/relay-routes.js';
import { AppError } from '../../src/core/errors.js';
import { registerJsonBodyParser } from '../../src/http/json-body.js';
import { registerProblemHandlers } from '../../src/http/problem.js';
import { registerRequestIdHeader } from '../../src/http/request-id.js';
import { sha256Hex } from '../../src/core/secrets.js';

/** An org the control plane does not know: refused with a 404 before anything is relayed. */
export const UNKNOWN_ORG = 'unknown_org';

export const ADMIN_KEY = 'relay-test-admin-key-0123456789';
export const AUTH = { authorization: `Bearer ${ADMIN_KEY}` };
/** Orgs the shard serves; `home` is the api process's own; nobody serves `ghost`. */
export const SERVED = ['acme', 'beta'];

export interface RelayFixture {
  shard: FastifyInstance;
  api: FastifyInstance;
  /** An api process with no org databases: relay-only routes (registerRelayRoutes) and the token route. */
  bare: FastifyInstance;
  server: OrgAdminServer;
  /** The shard's NATS connection, and one for a test's own NATS requests. */
  shardNc: NatsConnection;
  apiNc: NatsConnection;
  /** Route handlers run on the shard so far. */
  shardCalls(): number;
  /** Lets the hanging route (GET …/flows/:id/sends) answer. */
  release(): void;
}

export async function startRelay(t: Test, natsUrl: string, options: { timeoutMs?: number } = {}): Promise<RelayFixture> {
  const [shardNc, apiNc] = await Promise.all([connect({ servers: natsUrl }), connect({ servers: natsUrl })]);
  let calls = 0;
  let release = (): void => {};
  const hanging = new Promise<void>((resolve) => (release = resolve));

  // No adminAuth on the shard app: what refuses a wrong key sent over NATS is serveOrgAdmin's own check.
  const shard = testApp('shard');
  registerRoutes(shard, 'shard', () => calls++, hanging);
  await shard.ready();
  const server = await serveOrgAdmin({ nc: shardNc, app: shard, owned: (slug) => slug !== 'ghost', adminKeyHash: sha256Hex(ADMIN_KEY), orgOfLink: () => undefined, orgOfPartner: () => undefined, orgOfAudienceToken: () => undefined });
  for (const slug of SERVED) await server.addOrg(slug);

  const api = testApp('api');
  await api.register(async (admin) => {
    admin.addHook('onRequest', adminAuth({ keyHash: sha256Hex(ADMIN_KEY), limiter: new GcraLimiter(), clock: systemClock }));
    admin.addHook('onRequest', relayOrgAdmin({ nc: apiNc, isLocal: (slug) => slug === 'home', orgExists: (slug) => slug !== UNKNOWN_ORG, ...options }));
    registerRoutes(admin, 'api', () => {}, Promise.resolve());
  });
  await api.ready();

  const bare = testApp('bare');
  await bare.register(async (admin) => {
    admin.addHook('onRequest', adminAuth({ keyHash: sha256Hex(ADMIN_KEY), limiter: new GcraLimiter(), clock: systemClock }));
    registerRelayRoutes(admin, { nc: apiNc, orgExists: (slug) => slug !== UNKNOWN_ORG, ...options });
    admin.get('/admin/v1/orgs/:slug/tokens', async () => ({ answeredBy: 'bare' }));
  });
  await bare.ready();

  t.teardown(async () => {
    release();
    await server.close();
    await Promise.all([api.close(), bare.close(), shard.close(), shardNc.close(), apiNc.close()]);
  });
  return { shard, api, bare, server, shardNc, apiNc, shardCalls: () => calls, release: () => release() };
}

function testApp(side: string): FastifyInstance {
  let n = 0;
  const app = Fastify({ genReqId: () => `${side}-${++n}`, requestIdHeader: false, bodyLimit: 10 * 1024 * 1024 });
  registerJsonBodyParser(app);
  registerProblemHandlers(app);
  registerRequestIdHeader(app);
  return app;
}

/** The same routes on both apps; `answeredBy` tells which process ran the handler. */
function registerRoutes(app: FastifyInstance, side: 'shard' | 'api', called: () => void, hanging: Promise<void>): void {
  app.addHook('preHandler', async () => {
    called();
  });
  app.addContentTypeParser('text/csv', { parseAs: 'buffer', bodyLimit: 64 * 1024 * 1024 }, (_req, body, done) => done(null, body));
  app.get<{ Params: { slug: string } }>('/admin/v1/orgs/:slug/events/samples', async (request) => ({
    answeredBy: side,
    slug: request.params.slug,
    url: request.url,
    query: request.query,
    headers: request.headers,
  }));
  app.get<{ Querystring: { size?: string } }>('/admin/v1/orgs/:slug/events/types', async (request) => ({
    answeredBy: side,
    pad: 'x'.repeat(Number(request.query.size ?? 0)),
  }));
  app.post('/admin/v1/orgs/:slug/flows', async (request, reply) => reply.code(201).send({ answeredBy: side, received: request.body }));
  app.post('/admin/v1/orgs/:slug/flows/:id/pause', async (_request, reply) => reply.code(204).send());
  app.put('/admin/v1/orgs/:slug/triggers/:name', async () => {
    throw new AppError('invalid_trigger', `refused on the ${side}`, { members: { reason: 'not_a_select' } });
  });
  app.get('/admin/v1/orgs/:slug/quarantine', async (_request, reply) =>
    reply
      .header('X-Total-Count', '3')
      .header('Cache-Control', 'no-store')
      .header('Link', '</admin/v1/orgs/acme/quarantine?after=2>; rel="next"')
      .header('Set-Cookie', ['a=1', 'b=2'])
      .header('Connection', 'X-Shard-Secret')
      .header('X-Shard-Secret', 'internal')
      .header('Keep-Alive', 'timeout=5')
      .send({ answeredBy: side, items: [] }),
  );
  app.post('/admin/v1/orgs/:slug/contacts/import', async (request) => {
    const body = request.body as Buffer;
    return { answeredBy: side, bytes: body.length, sha256: createHash('sha256').update(body).digest('hex') };
  });
  app.get('/admin/v1/orgs/:slug/flows/:id/sends', async () => {
    await hanging;
    return { answeredBy: side };
  });
  // Control-plane routes: never relayed.
  app.get('/admin/v1/orgs/:slug/tokens', async () => ({ answeredBy: side }));
  app.get('/admin/v1/orgs/:slug', async () => ({ answeredBy: side }));
}
