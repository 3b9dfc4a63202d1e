/**
 * The admin relay end to end on a real nats-server: a call on the api process for an org a shard owns
 * is answered by the shard's routes, and comes back with the same status, headers and body bytes.
 */
import { createHash } from 'node:crypto';
import t from 'tap';
import type { InjectOptions } from 'fastify';
import { hasNatsServerBinary, startNatsServer } from '../helpers/nats-server.js';
import { AUTH, startRelay } from '../helpers/admin-relay.js';

if (!hasNatsServerBinary()) {
  t.comment('skipped: the admin relay tests need /usr/sbin/nats-server');
} else {
  const nats = await startNatsServer(t);

  /** The api's answer to `request`, and the shard's own answer to it (`inject` on the shard app). */
  const both = async (f: Awaited<ReturnType<typeof startRelay>>, request: InjectOptions) => {
    const relayed = await f.api.inject(request);
    const direct = await f.shard.inject({ ...request, headers: pick(request.headers ?? {}, ['content-type', 'accept', 'authorization']) });
    return { relayed, direct };
  };

  t.test('GET with a query string: status, content-type and body bytes as the shard answers them', async (t) => {
    const f = await startRelay(t, nats.url);
    // What crosses NATS: a listener beside the shard (no reply, it is no queue member) sees the message.
    const crossed: string[] = [];
    const spy = f.shardNc.subscribe('audience.admin.acme', { callback: (_err, msg) => void crossed.push(...(msg.headers?.keys() ?? [])) });
    await f.shardNc.flush();
    const url = '/admin/v1/orgs/acme/events/samples?type=caf%C3%A9&type=%F0%9F%98%80&limit=5&q=a%20b+c&empty=';
    const { relayed, direct } = await both(f, { url, headers: { ...AUTH, accept: 'application/json', cookie: 'session=1', 'x-forwarded-for': '10.0.0.1' } });
    t.equal(relayed.statusCode, 200);
    t.equal(relayed.headers['content-type'], 'application/json; charset=utf-8');
    t.equal(relayed.headers['content-type'], direct.headers['content-type']);
    t.same(relayed.rawPayload, direct.rawPayload, 'body bytes unchanged');
    const body = relayed.json();
    t.equal(body.answeredBy, 'shard');
    t.equal(body.url, url, 'path and query string arrive as sent');
    t.same(body.query, { type: ['café', '😀'], limit: '5', q: 'a b c', empty: '' });
    t.equal(body.headers.accept, 'application/json');
    t.notOk('cookie' in body.headers, 'cookies stay on the api process');
    t.notOk('x-forwarded-for' in body.headers, 'forwarding headers stay on the api process');
    spy.unsubscribe();
    t.same(crossed.sort(), ['Audience-Method', 'Audience-Request-Id', 'Audience-Url', 'Http-accept', 'Http-authorization'], 'nothing else crosses NATS');
    t.match(relayed.headers['request-id'], /^api-/, "the api process's Request-Id");
  });

  t.test('POST with a UTF-8 JSON body: 201 and the body arrives intact', async (t) => {
    const f = await startRelay(t, nats.url);
    const flow = { id: 'welcome', name: 'Grüße 👋 — «test»', steps: [{ wait: 'PT1H' }], nested: { a: [1, 2.5, null, true] } };
    const { relayed, direct } = await both(f, { method: 'POST', url: '/admin/v1/orgs/acme/flows', headers: AUTH, payload: flow });
    t.equal(relayed.statusCode, 201);
    t.same(relayed.json(), { answeredBy: 'shard', received: flow });
    t.same(relayed.rawPayload, direct.rawPayload);
  });

  t.test('a 500 KB CSV import arrives byte for byte', async (t) => {
    const f = await startRelay(t, nats.url);
    const row = 'email,name\nzoë@example.com,Zoë Ünal 😀\n';
    const csv = Buffer.from(row.repeat(Math.ceil((500 * 1024) / Buffer.byteLength(row)))).subarray(0, 500 * 1024);
    const r = await f.api.inject({ method: 'POST', url: '/admin/v1/orgs/beta/contacts/import', headers: { ...AUTH, 'content-type': 'text/csv' }, payload: csv });
    t.equal(r.statusCode, 200);
    t.same(r.json(), { answeredBy: 'shard', bytes: csv.length, sha256: createHash('sha256').update(csv).digest('hex') });
  });

  t.test("a problem+json 422 comes back as the shard wrote it, with the api process's request id", async (t) => {
    const f = await startRelay(t, nats.url);
    const r = await f.api.inject({ method: 'PUT', url: '/admin/v1/orgs/acme/triggers/t1', headers: AUTH, payload: { sql: 'DROP TABLE x' } });
    t.equal(r.statusCode, 422);
    t.equal(r.headers['content-type'], 'application/problem+json; charset=utf-8');
    const problem = r.json();
    t.equal(problem.code, 'invalid_trigger');
    t.equal(problem.detail, 'refused on the shard');
    t.equal(problem.reason, 'not_a_select', 'extra members kept');
    t.match(r.headers['request-id'], /^api-/);
    t.equal(problem.requestId, r.headers['request-id'], 'the problem names the request the client made');
  });

  t.test('custom headers come back; hop-by-hop ones and those Connection names do not', async (t) => {
    const f = await startRelay(t, nats.url);
    const r = await f.api.inject({ url: '/admin/v1/orgs/acme/quarantine', headers: AUTH });
    t.equal(r.statusCode, 200);
    t.equal(r.headers['x-total-count'], '3');
    t.equal(r.headers['cache-control'], 'no-store');
    t.equal(r.headers['link'], '</admin/v1/orgs/acme/quarantine?after=2>; rel="next"');
    t.same(r.headers['set-cookie'], ['a=1', 'b=2'], 'a repeated header keeps every value');
    t.equal(r.headers['x-shard-secret'], undefined, 'a header named in Connection is hop-by-hop');
    t.not(r.headers['connection'], 'X-Shard-Secret');
    t.not(r.headers['keep-alive'], 'timeout=5');
    for (const name of Object.keys(r.headers)) t.notMatch(name, /^(audience-|http-)/, `${name} is no relay header`);
    t.match(r.headers['request-id'], /^api-/, "the shard's Request-Id does not leak");
  });

  t.test('an empty 204 answer stays empty', async (t) => {
    const f = await startRelay(t, nats.url);
    const r = await f.api.inject({ method: 'POST', url: '/admin/v1/orgs/acme/flows/welcome/pause', headers: AUTH });
    t.equal(r.statusCode, 204);
    t.equal(r.rawPayload.length, 0);
  });

  t.test('not relayed: local orgs, control-plane routes, and anything without the admin key', async (t) => {
    const f = await startRelay(t, nats.url);
    const local = await f.api.inject({ url: '/admin/v1/orgs/home/events/samples', headers: AUTH });
    t.equal(local.json().answeredBy, 'api', 'an org this process serves is answered here');
    t.equal((await f.api.inject({ url: '/admin/v1/orgs/acme/tokens', headers: AUTH })).json().answeredBy, 'api');
    t.equal((await f.api.inject({ url: '/admin/v1/orgs/acme', headers: AUTH })).json().answeredBy, 'api');
    t.equal((await f.api.inject({ url: '/admin/v1/orgs/ghost/tokens', headers: AUTH })).statusCode, 200, 'tokens of an org no shard serves');
    const before = f.shardCalls();
    const noKey = await f.api.inject({ url: '/admin/v1/orgs/acme/events/samples', headers: { authorization: 'Bearer wrong' } });
    t.equal(noKey.statusCode, 401);
    t.equal(noKey.json().code, 'invalid_admin_key');
    t.equal(f.shardCalls(), before, 'checked on the api process before relaying');
  });

  t.test('an api process without org databases: relay-only routes answer like the real ones', async (t) => {
    const f = await startRelay(t, nats.url);
    for (const request of [
      { url: '/admin/v1/orgs/acme/events/samples?limit=5', headers: { ...AUTH, accept: 'application/json' } },
      { method: 'POST' as const, url: '/admin/v1/orgs/acme/flows', headers: AUTH, payload: { id: 'welcome', name: 'Grüße' } },
      { method: 'PUT' as const, url: '/admin/v1/orgs/acme/triggers/t1', headers: AUTH, payload: { sql: 'x' } },
      { method: 'POST' as const, url: '/admin/v1/orgs/acme/flows/welcome/pause', headers: AUTH },
      { url: '/admin/v1/orgs/acme/flows/welcome/nothing-here', headers: AUTH },
    ]) {
      const viaApi = await f.api.inject(request);
      const viaBare = await f.bare.inject(request);
      t.equal(viaBare.statusCode, viaApi.statusCode, `${request.method ?? 'GET'} ${request.url}`);
      t.equal(viaBare.headers['content-type'], viaApi.headers['content-type']);
      if (viaApi.statusCode < 400) t.same(viaBare.rawPayload, viaApi.rawPayload);
      else t.equal(viaBare.json().code, viaApi.json().code);
    }
    const head = await f.bare.inject({ method: 'HEAD', url: '/admin/v1/orgs/acme/quarantine', headers: AUTH });
    t.equal(head.statusCode, 200);
    t.equal(head.headers['x-total-count'], '3');
    t.equal((await f.bare.inject({ url: '/admin/v1/orgs/acme/tokens', headers: AUTH })).json().answeredBy, 'bare', 'tokens stay local');
    t.equal((await f.bare.inject({ url: '/admin/v1/orgs/acme/events/samples', headers: { authorization: 'Bearer nope' } })).statusCode, 401);
    t.equal((await f.bare.inject({ url: '/admin/v1/orgs/ghost/quarantine', headers: AUTH })).json().code, 'shard_unavailable');
    t.equal((await f.bare.inject({ url: '/admin/v1/orgs/a.b/quarantine', headers: AUTH })).json().code, 'invalid_request');
  });

  t.test('the shard advertises itself as a NATS micro service, one endpoint per org', async (t) => {
    const f = await startRelay(t, nats.url);
    const info = (await f.apiNc.request('$SRV.INFO.audience-shard', '', { timeout: 2000 })).json<{ endpoints: { subject: string }[] }>();
    t.same(info.endpoints.map((e) => e.subject).sort(), ['audience.admin.acme', 'audience.admin.beta']);
  });
}

function pick(headers: Record<string, unknown>, names: string[]): Record<string, string> {
  return Object.fromEntries(names.filter((n) => typeof headers[n] === 'string').map((n) => [n, headers[n] as string]));
}
