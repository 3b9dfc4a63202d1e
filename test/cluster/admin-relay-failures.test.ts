/**
 * The admin relay when things go wrong: no shard serves the org, a shard stops answering, a request
 * sent straight to a shard's subject without the admin key, hostile slugs, bodies and answers over
 * NATS max_payload.
 */
import { request as httpRequest } from 'node:http';
import { Readable } from 'node:stream';
import t from 'tap';
import type { Msg } from '@nats-io/transport-node';
import { decodeAnswer, encodeRequest } from '../../src/cluster/relay-message.js';
import { hasNatsServerBinary, startNatsServer } from '../helpers/nats-server.js';
import { ADMIN_KEY, AUTH, UNKNOWN_ORG, startRelay } from '../helpers/admin-relay.js';
import { scaled } from '../helpers/deadline.js';

/** Far beyond any delay of a loaded machine: an answer before it is the fast path, not the timeout. */
const RELAY_TIMEOUT_MS = scaled(30_000);

if (!hasNatsServerBinary()) {
  t.comment('skipped: the admin relay tests need /usr/sbin/nats-server');
} else {
  const nats = await startNatsServer(t);

  t.test('an org no shard serves: 503 shard_unavailable with Retry-After at once, not after the timeout', async (t) => {
    const f = await startRelay(t, nats.url, { timeoutMs: RELAY_TIMEOUT_MS });
    for (const url of ['/admin/v1/orgs/ghost/events/samples', '/admin/v1/orgs/nobody_here/quarantine']) {
      const started = performance.now();
      const r = await f.api.inject({ url, headers: AUTH });
      const ms = performance.now() - started;
      t.equal(r.statusCode, 503, url);
      t.equal(r.headers['content-type'], 'application/problem+json; charset=utf-8');
      t.equal(r.json().code, 'shard_unavailable');
      t.match(r.json().detail, /no process serves org/);
      t.equal(r.headers['retry-after'], '1');
      t.ok(ms < RELAY_TIMEOUT_MS, `answered in ${ms.toFixed(0)} ms, before the relay timeout`);
    }
  });

  t.test('an org the control plane does not know: 404 org_not_found on both kinds of api process, nothing published', async (t) => {
    const f = await startRelay(t, nats.url, { timeoutMs: 10_000 });
    const published: string[] = [];
    const watch = f.apiNc.subscribe(`audience.admin.${UNKNOWN_ORG}`, { callback: (_e, m) => void published.push(m.subject) });
    t.teardown(() => watch.unsubscribe());
    for (const app of [f.api, f.bare]) {
      const r = await app.inject({ url: `/admin/v1/orgs/${UNKNOWN_ORG}/events/samples`, headers: AUTH });
      t.equal(r.statusCode, 404);
      t.equal(r.json().code, 'org_not_found');
    }
    await f.apiNc.flush();
    t.same(published, [], 'nothing was relayed');
  });

  t.test('a shard that closes: its orgs answer 503 at once; removeOrg stops one org, the others stay served', async (t) => {
    const f = await startRelay(t, nats.url, { timeoutMs: RELAY_TIMEOUT_MS });
    const samples = (org: string) => f.api.inject({ url: `/admin/v1/orgs/${org}/events/samples`, headers: AUTH });
    t.equal(await f.server.addOrg('ghost'), false, 'an org this shard does not own is not served');
    await f.server.removeOrg('beta');
    t.same(f.server.orgs(), ['acme']);
    t.equal((await samples('acme')).statusCode, 200, 'still served across the rebuild');
    t.equal((await samples('beta')).statusCode, 503);
    t.equal(await f.server.addOrg('beta'), true);
    t.equal((await samples('beta')).statusCode, 200, 'served again once added back');
    await f.server.close();
    const started = performance.now();
    const r = await samples('acme');
    t.equal(r.statusCode, 503);
    t.equal(r.json().code, 'shard_unavailable');
    t.ok(performance.now() - started < RELAY_TIMEOUT_MS, 'before the relay timeout');
  });

  t.test('a shard that stops answering: 503 once the relay timeout passes, saying a write may have happened', async (t) => {
    const f = await startRelay(t, nats.url, { timeoutMs: 500 });
    const started = performance.now();
    const r = await f.api.inject({ url: '/admin/v1/orgs/acme/flows/welcome/sends', headers: AUTH });
    const ms = performance.now() - started;
    t.equal(r.statusCode, 503);
    t.equal(r.json().code, 'shard_unavailable');
    t.match(r.json().detail, /did not answer within 500 ms; a change may or may not have been made/);
    t.equal(r.headers['retry-after'], '1');
    t.ok(ms >= 480 && ms < scaled(10_000), `answered after ${ms.toFixed(0)} ms`);
  });

  t.test("straight to a shard's subject over NATS: a wrong or missing admin key is refused before any route", async (t) => {
    const f = await startRelay(t, nats.url);
    const send = async (subject: string, url: string, authorization?: string, raw?: boolean): Promise<{ status: number; code?: string }> => {
      const headers = encodeRequest({ method: 'GET', url, requestId: 'nats-1' }, authorization === undefined ? {} : { authorization });
      const msg: Msg = await f.apiNc.request(subject, '', { timeout: 2000, ...(raw ? {} : { headers }) });
      const answer = decodeAnswer(msg.headers, msg.data)!;
      const body = answer.body.byteLength > 0 ? JSON.parse(Buffer.from(answer.body).toString()) : {};
      return { status: answer.status, code: body.code };
    };
    const before = f.shardCalls();
    t.same(await send('audience.admin.acme', '/admin/v1/orgs/acme/events/samples', 'Bearer wrong-key-0123456789'), { status: 401, code: 'invalid_admin_key' });
    t.same(await send('audience.admin.acme', '/admin/v1/orgs/acme/events/samples'), { status: 401, code: 'invalid_admin_key' });
    t.same(await send('audience.admin.acme', '/admin/v1/orgs/acme/events/samples', '', true), { status: 400, code: 'invalid_request' }, 'no relay headers at all');
    // With the key, only this org's org-database routes: not another org's, not the control plane's.
    const key = `Bearer ${ADMIN_KEY}`;
    t.same(await send('audience.admin.acme', '/admin/v1/orgs/beta/events/samples', key), { status: 400, code: 'invalid_request' });
    t.same(await send('audience.admin.acme', '/admin/v1/orgs/acme/tokens', key), { status: 400, code: 'invalid_request' });
    t.same(await send('audience.admin.acme', '/admin/v1/orgs', key), { status: 400, code: 'invalid_request' });
    t.equal(f.shardCalls(), before, 'no route ran');
    t.same(await send('audience.admin.acme', '/admin/v1/orgs/acme/events/samples', key), { status: 200, code: undefined });
  });

  t.test('hostile slugs never form a subject: refused before anything is published', async (t) => {
    const f = await startRelay(t, nats.url);
    const published: string[] = [];
    const spy = f.shardNc.subscribe('audience.admin.>', { callback: (_err, msg) => void published.push(msg.subject) });
    await f.shardNc.flush();
    // Over real HTTP: inject would resolve `%2E%2E` as a dot segment before the router saw it.
    const base = await f.api.listen({ host: '127.0.0.1', port: 0 });
    const hostile = ['%2E%2E', '..', '*', '%2A', '%3E', 'a%20b', 'a.b', 'acme.beta', 'acme.%3E', 'x'.repeat(41), 'Acme', '1abc', 'a', 'caf%C3%A9', 'acme%00'];
    for (const slug of hostile) {
      const r = await get(`${base}/admin/v1/orgs/${slug}/events/samples`);
      t.equal(r.status, 400, slug);
      t.equal(r.code, 'invalid_request', slug);
    }
    // Past the router's 100-character parameter limit Fastify answers 414 before any hook.
    t.equal((await get(`${base}/admin/v1/orgs/${'x'.repeat(300)}/events/samples`)).status, 414);
    // The shard side refuses them too (owned() says yes to anything but `ghost` in this fixture).
    for (const slug of ['a.b', '*', '>', 'acme.>', 'a b', '..']) await t.rejects(f.server.addOrg(slug), /not a slug/, slug);
    await f.apiNc.flush();
    await f.shardNc.flush();
    spy.unsubscribe();
    t.same(published, [], 'nothing reached NATS');
  });

  t.test('a body over max_payload: 413 payload_too_large saying to split the import, nothing sent', async (t) => {
    const f = await startRelay(t, nats.url);
    const maxPayload = f.apiNc.info!.max_payload;
    const big = Buffer.alloc(maxPayload + 1, 'a');
    const before = f.shardCalls();
    const declared = await f.api.inject({ method: 'POST', url: '/admin/v1/orgs/acme/contacts/import', headers: { ...AUTH, 'content-type': 'text/csv' }, payload: big });
    t.equal(declared.statusCode, 413);
    t.equal(declared.json().code, 'payload_too_large');
    t.match(declared.json().detail, /split the import into files under \d+ bytes/);
    // Without Content-Length (chunked): refused once the bytes read pass the limit.
    const chunked = await f.api.inject({
      method: 'POST',
      url: '/admin/v1/orgs/acme/contacts/import',
      headers: { ...AUTH, 'content-type': 'text/csv' },
      payload: Readable.from([big.subarray(0, 600_000), big.subarray(600_000)]),
    });
    t.equal(chunked.statusCode, 413);
    t.equal(chunked.json().code, 'payload_too_large');
    t.equal(f.shardCalls(), before, 'the shard saw neither');
    // Over a real socket, both ways, and the connection still answers afterwards.
    const base = await f.api.listen({ host: '127.0.0.1', port: 0 });
    for (const chunkedUpload of [false, true]) {
      const r = await post(`${base}/admin/v1/orgs/acme/contacts/import`, big, chunkedUpload);
      t.equal(r.status, 413, chunkedUpload ? 'chunked over HTTP' : 'Content-Length over HTTP');
      t.equal(r.code, 'payload_too_large');
    }
    t.equal((await get(`${base}/admin/v1/orgs/acme/events/samples`)).status, 200);
    // Just under the limit goes through (the headers count against max_payload too).
    const fits = Buffer.alloc(maxPayload - 1024, 'a');
    const ok = await f.api.inject({ method: 'POST', url: '/admin/v1/orgs/acme/contacts/import', headers: { ...AUTH, 'content-type': 'text/csv' }, payload: fits });
    t.equal(ok.statusCode, 200);
    t.equal(ok.json().bytes, fits.length);
  });

  t.test("an answer over max_payload: 502 shard_answer_too_large instead of no answer", async (t) => {
    const f = await startRelay(t, nats.url, { timeoutMs: 5_000 });
    const size = f.apiNc.info!.max_payload;
    const started = performance.now();
    const r = await f.api.inject({ url: `/admin/v1/orgs/acme/events/types?size=${size}`, headers: AUTH });
    t.equal(r.statusCode, 502);
    t.equal(r.json().code, 'shard_answer_too_large');
    t.match(r.json().detail, /fewer rows with limit/);
    t.equal(r.json().requestId, r.headers['request-id']);
    t.ok(performance.now() - started < 2000, 'not a timeout');
    t.equal((await f.api.inject({ url: '/admin/v1/orgs/acme/events/types?size=1000', headers: AUTH })).statusCode, 200);
  });
}

/** A GET over real HTTP with the path exactly as written (no dot-segment resolution). */
function get(url: string): Promise<{ status: number; code?: string }> {
  const { hostname, port } = new URL(url);
  const path = url.slice(url.indexOf('/admin/'));
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, path, headers: AUTH }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, code: text ? (JSON.parse(text) as { code?: string }).code : undefined }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A POST over real HTTP, with Content-Length or chunked, written in 64 KB pieces. */
function post(url: string, body: Buffer, chunked: boolean): Promise<{ status: number; code?: string }> {
  const { hostname, port, pathname } = new URL(url);
  const headers = { ...AUTH, 'content-type': 'text/csv', ...(chunked ? {} : { 'content-length': String(body.length) }) };
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, path: pathname, method: 'POST', headers }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, code: (JSON.parse(text) as { code?: string }).code }));
    });
    // The server may answer and close before the whole body is written.
    req.on('error', (error: NodeJS.ErrnoException) => (error.code === 'EPIPE' || error.code === 'ECONNRESET' ? undefined : reject(error)));
    for (let at = 0; at < body.length; at += 64 * 1024) req.write(body.subarray(at, at + 64 * 1024));
    req.end();
  });
}
