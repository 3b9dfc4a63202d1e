/**
 * The relay in front of the real service: the whole app (test/helpers/app.ts) serves its orgs with
 * serveOrgAdmin, and an api process with relay-only routes answers the real admin calls through it
 * exactly as the app answers them itself: imports, trigger PUTs and their refusals, flows, problems.
 */
import t from 'tap';
import Fastify, { type InjectOptions } from 'fastify';
import { connect } from '@nats-io/transport-node';
import { adminAuth } from '../../src/routes/admin/auth.js';
import { systemClock } from '../../src/core/context.js';
import { GcraLimiter } from '../../src/ratelimit/gcra-limiter.js';
import { registerRelayRoutes } from '../../src/cluster/relay-routes.js';
import { DEFAULT_RELAY_TIMEOUT_MS } from '../../src/cluster/relay-to-shard.js';
import { serveOrgAdmin } from '../../src/cluster/serve-org-admin.js';
import { registerJsonBodyParser } from '../../src/http/json-body.js';
import { registerProblemHandlers } from '../../src/http/problem.js';
import { registerRequestIdHeader } from '../../src/http/request-id.js';
import { sha256Hex } from '../../src/core/secrets.js';
import { ADMIN_KEY, startTestApp } from '../helpers/app.js';
import { BOOKING_TRIGGER } from '../helpers/flows.js';
import { hasNatsServerBinary, startNatsServer } from '../helpers/nats-server.js';
import { scaled } from '../helpers/deadline.js';

const natsTest = hasNatsServerBinary() ? t.test : t.skip;
if (!hasNatsServerBinary()) t.comment('skipped: the admin relay tests need /usr/sbin/nats-server');

natsTest('real admin routes answered through the relay as the app answers them', async (t) => {
  const h = await startTestApp(t);
  const nats = await startNatsServer(t);
  await h.createOrg('acme');
  const [shardNc, apiNc] = await Promise.all([connect({ servers: nats.url }), connect({ servers: nats.url })]);
  const server = await serveOrgAdmin({ nc: shardNc, app: h.app, owned: () => true, adminKeyHash: h.app.adminKey.hash, orgOfLink: () => undefined, orgOfPartner: () => undefined, orgOfAudienceToken: () => undefined });
  t.equal(await server.addOrg('acme'), true);
  const api = Fastify();
  registerJsonBodyParser(api);
  registerProblemHandlers(api);
  registerRequestIdHeader(api);
  await api.register(async (admin) => {
    admin.addHook('onRequest', adminAuth({ keyHash: sha256Hex(ADMIN_KEY), limiter: new GcraLimiter(), clock: systemClock }));
    // The first trigger PUT starts the org's SQL checker: on a loaded machine that alone took over the
    // service's 30 s relay timeout (503 shard_unavailable), so the relay waits a scaled budget.
    registerRelayRoutes(admin, { nc: apiNc, orgExists: () => true, timeoutMs: scaled(DEFAULT_RELAY_TIMEOUT_MS) });
  });
  t.teardown(async () => {
    await server.close();
    await Promise.all([api.close(), shardNc.close(), apiNc.close()]);
  });

  const auth = { authorization: `Bearer ${ADMIN_KEY}` };
  const csv = 'email_address,first_name\nada@example.com,Ada\nnot-an-email,X\nzoë@example.com,Zoë\n';
  const calls: InjectOptions[] = [
    { method: 'POST', url: '/admin/v1/orgs/acme/contacts/import', headers: { ...auth, 'content-type': 'text/csv' }, payload: csv },
    { method: 'PUT', url: '/admin/v1/orgs/acme/triggers/booking_completed', headers: auth, payload: { sql: BOOKING_TRIGGER } },
    { method: 'PUT', url: '/admin/v1/orgs/acme/triggers/spy', headers: auth, payload: { sql: "SELECT * FROM read_csv('/etc/passwd')" } },
    { url: '/admin/v1/orgs/acme/triggers', headers: auth },
    { url: '/admin/v1/orgs/acme/events/types', headers: auth },
    { url: '/admin/v1/orgs/acme/quarantine?limit=0', headers: auth },
    { url: '/admin/v1/orgs/acme/flows', headers: auth },
    { method: 'POST', url: '/admin/v1/orgs/acme/flows', headers: auth, payload: { id: 'broken' } },
    { url: '/admin/v1/orgs/acme/webhook-secret', headers: auth },
    { url: '/admin/v1/orgs/acme/flows/none/sends', headers: auth },
  ];
  for (const call of calls) {
    const label = `${call.method ?? 'GET'} ${call.url}`;
    const relayed = await api.inject(call);
    // The same call straight to the app, after the relayed one (imports and PUTs are idempotent here).
    const direct = await h.app.inject(call);
    t.equal(relayed.statusCode, direct.statusCode, `${label}: ${relayed.statusCode}`);
    t.equal(relayed.headers['content-type'], direct.headers['content-type'], label);
    if (relayed.headers['content-type']?.toString().startsWith('application/problem+json')) {
      const { requestId, ...problem } = relayed.json();
      const { requestId: _directId, ...directProblem } = direct.json();
      t.same(problem, directProblem, label);
      t.equal(requestId, relayed.headers['request-id'], `${label}: the api process's request id`);
    } else {
      t.same(relayed.json(), direct.json(), label);
    }
  }
  const statuses: number[] = [];
  for (const call of calls) statuses.push((await api.inject(call)).statusCode);
  t.same(statuses, [200, 200, 422, 200, 200, 400, 200, 422, 200, 404], 'the calls cover answers and refusals');
});

natsTest("failed admin keys at the shard do not throttle relayed calls (the shard's inject() is no client address)", async (t) => {
  const h = await startTestApp(t);
  const nats = await startNatsServer(t);
  await h.createOrg('acme');
  const [shardNc, apiNc] = await Promise.all([connect({ servers: nats.url }), connect({ servers: nats.url })]);
  const server = await serveOrgAdmin({ nc: shardNc, app: h.app, owned: () => true, adminKeyHash: h.app.adminKey.hash, orgOfLink: () => undefined, orgOfPartner: () => undefined, orgOfAudienceToken: () => undefined });
  await server.addOrg('acme');
  const api = Fastify();
  registerProblemHandlers(api);
  registerRequestIdHeader(api);
  await api.register(async (admin) => {
    admin.addHook('onRequest', adminAuth({ keyHash: sha256Hex(ADMIN_KEY), limiter: new GcraLimiter(), clock: systemClock }));
    registerRelayRoutes(admin, { nc: apiNc, orgExists: () => true });
  });
  t.teardown(async () => {
    await server.close();
    await Promise.all([api.close(), shardNc.close(), apiNc.close()]);
  });

  // Someone on the shard's own machine guesses at its port (inject() is 127.0.0.1 by default).
  const guesses = [];
  for (let i = 0; i < 20; i++) guesses.push((await h.app.inject({ url: '/admin/v1/orgs/acme/flows', headers: { authorization: `Bearer guess-${i}` } })).statusCode);
  t.same(guesses.slice(-5), [429, 429, 429, 429, 429], 'the guesser at the shard is throttled');
  t.equal((await h.app.inject({ url: '/admin/v1/orgs/acme/flows', headers: { authorization: `Bearer ${ADMIN_KEY}` } })).statusCode, 429, 'and so is its address');

  const relayed = await api.inject({ url: '/admin/v1/orgs/acme/flows', headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  t.equal(relayed.statusCode, 200, 'a client of the api process is answered by the shard');
  t.same(relayed.json(), { flows: [] });
});
