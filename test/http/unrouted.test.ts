/**
 * No method or URL answers 500: every method Node's parser accepts, on every route and on any path,
 * is answered problem+json with its Request-Id — 405 with `Allow` on a path that exists under other
 * methods, 404 on one that does not — before authentication and without reading a body. Through
 * inject(); test/http/early-errors.test.ts does the same over a socket to a real process.
 */
import { METHODS } from 'node:http';
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { ADMIN_KEY, startTestApp, type TestApp } from '../helpers/app.js';
import { API_ONLY, startRoleApp } from '../helpers/role-app.js';

/** A registered route's URL with its parameters filled in. */
const concrete = (url: string) => url.replace(/:\w+/g, 'acme').replace(/\*$/, 'x');

function routeMethods(h: TestApp): Map<string, Set<string>> {
  const byUrl = new Map<string, Set<string>>();
  for (const { method, url } of h.app.registeredRoutes) byUrl.set(url, (byUrl.get(url) ?? new Set()).add(method));
  return byUrl;
}

function isProblem(t: Test, res: { statusCode: number; headers: Record<string, unknown>; body: string }, label: string): void {
  t.not(res.statusCode, 500, label);
  t.match(res.headers['content-type'], /^application\/problem\+json/, `${label}: problem+json`);
  t.match(res.headers['request-id'], /\S/, `${label}: a Request-Id`);
  if (res.body !== '') t.equal(JSON.parse(res.body).requestId, res.headers['request-id'], `${label}: the same id in the body`);
}

t.test('every method on every route: answered, or 405 with the methods the path has', async (t) => {
  const h = await startTestApp(t);
  const routed = new Set(h.app.registeredRoutes.map((r) => r.method));
  const failures: string[] = [];
  for (const [url, methods] of routeMethods(h)) {
    const path = concrete(url);
    for (const method of METHODS.filter((m) => !methods.has(m))) {
      const res = await h.app.inject({ method: method as 'GET', url: path });
      const label = `${method} ${path}`;
      // A wildcard route answers the method on this path too (OPTIONS /v1/*: the tracking API's CORS preflight).
      if (res.statusCode < 300 && routed.has(method)) continue;
      if (res.statusCode === 500 || !String(res.headers['content-type']).startsWith('application/problem+json')) failures.push(`${label}: ${res.statusCode} ${res.headers['content-type']}`);
      // Another route may take the method on this very path (DELETE …/tokens/:id matches …/tokens/revoke).
      if (routed.has(method) && res.statusCode !== 405) continue;
      const allow = String(res.headers.allow ?? '').split(', ');
      if (res.statusCode !== 405 || [...methods].some((m) => !allow.includes(m)) || allow.includes(method)) {
        failures.push(`${label}: ${res.statusCode}, Allow: ${res.headers.allow}`);
      }
      if (res.headers['request-id'] === undefined || (res.body && res.json().requestId !== res.headers['request-id'])) failures.push(`${label}: request id`);
    }
  }
  t.same(failures, [], 'every unrouted method on a known path is 405 problem+json with Allow');

  const query = await h.app.inject({ method: 'QUERY' as 'GET', url: '/admin/v1/orgs' });
  t.equal(query.statusCode, 405, 'QUERY without Content-Type, the 500 of the finding');
  t.equal(query.headers.allow, 'GET, HEAD, POST');
  t.match(query.json(), { code: 'method_not_allowed', detail: '/admin/v1/orgs answers GET, HEAD, POST, not QUERY' });
  t.equal(query.headers['www-authenticate'], undefined, 'answered before authentication');
});

t.test('unknown paths: 404 for every method, whatever body and Content-Type, the body not read', async (t) => {
  const h = await startRoleApp(t, API_ONLY);
  for (const method of METHODS) {
    for (const contentType of [undefined, 'text/plain', 'application/json', ';;;']) {
      const res = await h.app.inject({
        method: method as 'GET',
        url: '/no/such/path?x=1',
        headers: contentType ? { 'content-type': contentType } : {},
        ...(contentType ? { payload: '{"a":' } : {}),
      });
      isProblem(t, res, `${method} (${contentType})`);
      t.equal(res.statusCode, 404, `${method} with ${contentType}: 404, not 400 or 415 from parsing a body no route wants`);
    }
  }
});

t.test('property: any method, any path and query string, any body: never 500, always problem+json with a Request-Id', async (t) => {
  const h = await startTestApp(t);
  const known = [...routeMethods(h).keys()].map(concrete);
  const hostileSegment = fc.constantFrom('__proto__', 'constructor', 'prototype', '%00', '..', '%2e%2e', '%2F', '%zz', '%', 'x'.repeat(150), '%E2%80%AE', 'ünï', '*', '');
  const segment = fc.oneof(hostileSegment, fc.webSegment(), fc.string({ maxLength: 20 }).map(encodeURIComponent));
  const path = fc.oneof(
    fc.constantFrom(...known),
    fc.array(segment, { maxLength: 6 }).map((s) => `/${s.join('/')}`),
    fc.tuple(fc.constantFrom(...known), fc.array(segment, { minLength: 1, maxLength: 3 })).map(([p, s]) => `${p}/${s.join('/')}`),
  );
  const query = fc.oneof(fc.constant(''), fc.webQueryParameters().map((q) => `?${q}`), fc.constantFrom('?__proto__[x]=1', '?constructor.prototype.x=1', '?a=1&a=2&a=3', '?%zz', `?q=${'x'.repeat(5000)}`, '?identity=email:%00'));
  const body = fc.option(fc.record({ contentType: fc.constantFrom('application/json', 'text/plain', 'text/csv', 'application/x-ndjson', 'a/b;;', ''), payload: fc.string({ maxLength: 200 }) }), { nil: undefined });
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...METHODS), path, query, body, async (method, p, q, b) => {
      runs++;
      const res = await h.app.inject({
        method: method as 'GET',
        url: p + q,
        headers: b ? { 'content-type': b.contentType } : {},
        ...(b ? { payload: b.payload } : {}),
      });
      if (res.statusCode === 500) throw new Error(`${method} ${p}${q}: 500 ${res.body}`);
      if (res.statusCode >= 400) {
        if (!String(res.headers['content-type']).startsWith('application/problem+json')) throw new Error(`${method} ${p}${q}: ${res.statusCode} ${res.headers['content-type']}`);
        if (method !== 'HEAD' && JSON.parse(res.body).requestId !== res.headers['request-id']) throw new Error(`${method} ${p}${q}: request id`);
      }
      if (res.headers['request-id'] === undefined) throw new Error(`${method} ${p}${q}: no Request-Id`);
    }),
    { numRuns: 1500 },
  );
  t.equal(runs, 1500);
});

t.test('router refusals before any route: a path that is not percent-encoding, a segment over 1024 characters', async (t) => {
  const h = await startRoleApp(t, API_ONLY);
  const badUrl = await h.app.inject({ url: '/admin/v1/orgs/%zz' });
  isProblem(t, badUrl, 'bad percent-encoding');
  t.match(badUrl.json(), { status: 400, code: 'invalid_request', detail: /percent-encoding/ });
  const long = await h.app.inject({ url: `/admin/v1/orgs/${'a'.repeat(1025)}` });
  isProblem(t, long, 'long segment');
  t.match(long.json(), { status: 414, code: 'uri_too_long', detail: /over 1024 characters/ });
  // Up to the router's limit a segment reaches its route, whose schema says what is wrong with it.
  const limit = await h.app.inject({ url: `/admin/v1/orgs/${'a'.repeat(1024)}`, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  isProblem(t, limit, 'a segment at the limit');
  t.match(limit.json(), { status: 400, code: 'invalid_request', detail: /slug/ });
});
