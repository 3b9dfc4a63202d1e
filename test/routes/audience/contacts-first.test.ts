/**
 * GET /audience/v2/contacts answered before Fastify (contacts-first.ts) answers exactly what the route
 * answers. Every request is sent twice, over HTTP (the first answer, when it takes it) and through
 * inject() (always the Fastify route), on a frozen clock, so the two answers must be equal byte for byte
 * but for the request id. The org's budget shows each request charged once: its `RateLimit` remaining
 * counts down by exactly one per authenticated request, whichever path answered.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import fc from 'fast-check';
import Fastify from 'fastify';
import t, { type Test } from 'tap';
import { Agent, request } from 'undici';
import { ManualClock } from '../../../src/core/context.js';
import { emailHash } from '../../../src/events/profiles/profile-index.js';
import { answerFirst } from '../../../src/routes/audience/contacts-first.js';
import { ADMIN_KEY, startTestApp, type TestApp } from '../../helpers/app.js';
import { redisUrl, redisUrlIfReachable, uniquePrefix } from '../../helpers/redis-server.js';

/** Requests that reached the Fastify route's handler (Fastify's own tracing channel). */
function countRouteHandler(t: Test): { count: number } {
  const seen = { count: 0 };
  const onStart = (message: unknown) => {
    if ((message as { request?: { routeOptions?: { url?: string } } }).request?.routeOptions?.url === '/audience/v2/contacts') seen.count++;
  };
  subscribe('tracing:fastify.request.handler:start', onStart);
  t.teardown(() => unsubscribe('tracing:fastify.request.handler:start', onStart));
  return seen;
}

interface Contact {
  email: string;
  userId: string;
  name: string;
}

async function setup(t: Test, contacts: Contact[], config: Record<string, unknown> = {}, rateLimit = 1_000) {
  const clock = new ManualClock(Date.now());
  const h = await startTestApp(t, { clock, config });
  await h.createOrg('acme', { audienceApi: true, rateLimit });
  await h.createOrg('other', { audienceApi: false });
  const csv = ['email_address,user_id,first_name', ...contacts.map((c) => [c.email, c.userId, c.name].map(csvCell).join(','))].join('\n');
  const imported = await h.app.inject({
    method: 'POST',
    url: '/admin/v1/orgs/acme/contacts/import',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'text/csv' },
    payload: `${csv}\n`,
  });
  if (imported.statusCode !== 200) throw new Error(imported.body);
  const issue = async (slug: string) => (await h.admin('POST', `/admin/v1/orgs/${slug}/tokens`, { createdBy: 'ops@example.com' })).json() as { token: string; id: string };
  const revoked = await issue('acme');
  const gone = await h.admin('DELETE', `/admin/v1/orgs/acme/tokens/${revoked.id}`);
  if (gone.statusCode !== 200) throw new Error(gone.body);
  const tokens = { acme: (await issue('acme')).token, other: (await issue('other')).token, revoked: revoked.token };
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const dispatcher = new Agent({ connections: 2 });
  t.teardown(() => dispatcher.close());
  return { h, url, dispatcher, tokens };
}

const csvCell = (value: string) => `"${value.replaceAll('"', '""')}"`;

/** The same request over HTTP and through inject(). */
async function both(h: TestApp, url: string, dispatcher: Agent, method: 'GET' | 'HEAD', path: string, headers: Record<string, string>) {
  const http = await request(`${url}${path}`, { method, headers, dispatcher });
  const httpBody = await http.body.text();
  const injected = await h.app.inject({ method, url: path, headers });
  return {
    http: { status: http.statusCode, headers: http.headers as Record<string, string>, body: httpBody },
    inject: { status: injected.statusCode, headers: injected.headers as Record<string, string>, body: injected.body },
  };
}

/** The headers an answer is made of (not the connection's, nor the id each request gets). */
function answerHeaders(headers: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!['date', 'connection', 'keep-alive', 'request-id', 'ratelimit', 'transfer-encoding'].includes(name)) kept[name] = String(value);
  }
  return kept;
}

const remaining = (headers: Record<string, string>) => {
  const match = /^"org";r=(\d+);t=\d+$/.exec(headers.ratelimit ?? '');
  return match ? Number(match[1]) : undefined;
};

// Addresses of every length up to the longest an import takes, with the characters RFC 5321 allows.
const contactsArb = fc.uniqueArray(
  fc.record({
    email: fc.emailAddress({ size: 'medium' }).filter((e) => e.length <= 254 && !/["\\]/.test(e)),
    userId: fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' }).filter((s) => s.trim() === s && !/[\p{Cc}"]/u.test(s)),
    name: fc.string({ maxLength: 20 }).filter((s) => !/[\p{Cc}"]/u.test(s)),
  }),
  { minLength: 3, maxLength: 12, selector: (c) => c.email.toLowerCase(), comparator: (a, b) => a === b },
).filter((cs) => new Set(cs.map((c) => c.userId)).size === cs.length);

t.test('every request: the HTTP answer is the route’s, and the budget is charged once', async (t) => {
  // The longest address an import takes (254 characters, a `+` in its 64-character local part) among them.
  const longest = { email: `a+b${'c'.repeat(61)}@${'x'.repeat(63)}.${'y'.repeat(63)}.${'z'.repeat(57)}.com`, userId: 'u-longest', name: 'Long' };
  const contacts = [longest, ...fc.sample(contactsArb, { numRuns: 1, seed: 39 })[0]!];
  t.equal(longest.email.length, 254);
  const { h, url, dispatcher, tokens } = await setup(t, contacts);
  const handled = countRouteHandler(t);
  const contentFields = (await h.admin('GET', '/admin/v1/orgs/acme')).json().org.contentFields as string[];

  const identity = fc.oneof(
    { arbitrary: fc.constantFrom(...contacts).map((c) => `email:${c.email}`), weight: 4 },
    { arbitrary: fc.constantFrom(...contacts).map((c) => `email:${c.email.toUpperCase()}`), weight: 1 },
    { arbitrary: fc.constantFrom(...contacts).map((c) => `email-hash:${emailHash(c.email.toLowerCase())}`), weight: 1 },
    { arbitrary: fc.constantFrom(...contacts).map((c) => `user_id:${c.userId}`), weight: 1 },
    { arbitrary: fc.constantFrom('email:nobody@example.com', 'user_id:nobody', 'email:not-an-email', 'phone:1', '', 'email-hash:abc'), weight: 1 },
    { arbitrary: fc.string({ maxLength: 300 }), weight: 1 },
  );
  const query = fc.record({
    identity: fc.option(identity, { nil: undefined, freq: 10 }),
    encode: fc.boolean(),
    fields: fc.option(fc.oneof({ arbitrary: fc.subarray(contentFields, { minLength: 1 }).map((f) => f.join(',')), weight: 4 }, fc.constantFrom('nope', '', 'first_name,,user_id')), { nil: undefined, freq: 2 }),
    extra: fc.constantFrom(...Array<string>(12).fill(''), '&after=x', '&wait=0', '&x=1', '&__proto__=1', '&constructor=a', '&identity=user_id:u', '&fields=first_name'),
  });
  const requestArb = fc.record({
    method: fc.constantFrom<'GET' | 'HEAD'>('GET', 'GET', 'GET', 'GET', 'GET', 'HEAD'),
    path: fc.constantFrom(...Array<string>(8).fill('/audience/v2/contacts'), '/audience/v2/contacts/', '/Audience/v2/contacts'),
    query,
    bearer: fc.constantFrom(...Array<string>(8).fill(tokens.acme), tokens.other, tokens.revoked, 'aud_garbage', undefined),
    scheme: fc.constantFrom('Bearer ', 'bearer  '),
    accept: fc.constantFrom(undefined, undefined, 'application/json', 'application/json', '*/*', 'text/html', 'application/json;q=0'),
    requestId: fc.constantFrom(undefined, 'trace-1', 'has space'),
  });

  let lastRemaining: number | undefined;
  let fastAnswers = 0;
  await fc.assert(
    fc.asyncProperty(requestArb, async (r) => {
      const q = r.query;
      const value = (v: string) => (q.encode ? encodeURIComponent(v) : v.replaceAll('&', '%26').replaceAll('#', '%23'));
      const parts = [q.identity === undefined ? '' : `identity=${value(q.identity)}`, q.fields === undefined ? '' : `fields=${value(q.fields)}`].filter((p) => p !== '');
      const path = `${r.path}?${parts.join('&')}${q.extra}`;
      const headers: Record<string, string> = {};
      if (r.bearer !== undefined) headers.authorization = `${r.scheme}${r.bearer}`;
      if (r.accept !== undefined) headers.accept = r.accept;
      if (r.requestId !== undefined) headers['request-id'] = r.requestId;
      const before = handled.count;
      const { http, inject } = await both(h, url, dispatcher, r.method, path, headers);
      const routeRuns = handled.count - before;

      t.equal(http.status, inject.status, `status of ${r.method} ${path}`);
      // Problem bodies carry the request id too.
      const unnamed = (answer: typeof http) => answer.body.replaceAll(answer.headers['request-id'] ?? '', '<id>');
      // inject() keeps a HEAD answer's body, which Node drops on the wire.
      if (r.method === 'GET') t.equal(unnamed(http), unnamed(inject), `body of ${r.method} ${path}`);
      else t.equal(http.body, '', 'HEAD: no body');
      t.same(answerHeaders(http.headers), answerHeaders(inject.headers), 'headers');
      if (r.requestId === 'trace-1') t.equal(http.headers['request-id'], 'trace-1');
      else t.match(http.headers['request-id'], /^[0-9a-f-]{36}$/);
      // Charged once each: the HTTP answer's remaining, then inject's one less, then the next request's one less again.
      const [first, second] = [remaining(http.headers), remaining(inject.headers)];
      t.equal(first === undefined, second === undefined, 'both charged or neither');
      if (first !== undefined && second !== undefined) {
        if (lastRemaining !== undefined) t.equal(first, lastRemaining - 1, 'one unit for the HTTP request');
        t.equal(second, first - 1, 'one unit for the injected one');
        lastRemaining = second;
      }
      // The inject() went through the route once; the HTTP request did only when not answered first.
      const onlyParams = q.extra === '' || (q.extra === '&fields=first_name' && q.fields === undefined);
      const plain = r.path === '/audience/v2/contacts' && onlyParams;
      if (http.status === 200 && r.method === 'GET') {
        t.equal(routeRuns, plain ? 1 : 2, `the route ran ${plain ? 'for inject() only' : 'for both'}: ${path}`);
        if (plain) fastAnswers++;
      }
    }),
    { numRuns: 300 },
  );
  t.comment(`answered first ${fastAnswers} of the generated requests`);
  // Every contact by every identity, whatever the draw above: answered first, as the route answers it.
  for (const c of contacts) {
    for (const identity of [`email:${c.email}`, `email-hash:${emailHash(c.email.toLowerCase())}`, `user_id:${c.userId}`]) {
      const path = `/audience/v2/contacts?identity=${encodeURIComponent(identity)}`;
      const before = handled.count;
      const { http, inject } = await both(h, url, dispatcher, 'GET', path, { authorization: `Bearer ${tokens.acme}` });
      t.equal(http.status, 200, `${identity.length} characters: found`);
      t.equal(http.body, inject.body, 'the route’s body');
      t.equal(handled.count - before, 1, 'the route ran for inject() only: the HTTP request was answered first');
    }
  }
});

const lookupOf = (url: string, dispatcher: Agent, token: string, identity: string) =>
  request(`${url}/audience/v2/contacts?identity=${encodeURIComponent(identity)}`, { dispatcher, headers: { authorization: `Bearer ${token}` } }).then(async (res) => ({
    status: res.statusCode,
    headers: res.headers as Record<string, string>,
    body: await res.body.text(),
  }));

t.test('answered first, counted as the route counts: lookups by status and request durations', async (t) => {
  const contacts = [{ email: 'ada@example.com', userId: 'u-1', name: 'Ada' }];
  const { h, url, dispatcher, tokens } = await setup(t, contacts);
  const handled = countRouteHandler(t);
  const read = async () => {
    const text = await h.metrics();
    const value = (pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? 0);
    return {
      ok: value(/^audience_lookups_total\{status="200"\} (\d+)$/m),
      notFound: value(/^audience_lookups_total\{status="404"\} (\d+)$/m),
      durations: value(/^audience_http_request_duration_seconds_count\{method="GET",route="\/audience\/v2\/contacts",status="200"\} (\d+)$/m),
    };
  };
  const before = await read();
  for (let i = 0; i < 25; i++) t.equal((await lookupOf(url, dispatcher, tokens.acme, 'email:ada@example.com')).status, 200);
  t.equal((await lookupOf(url, dispatcher, tokens.acme, 'email:nobody@example.com')).status, 404);
  const after = await read();
  t.equal(handled.count, 1, 'only the unknown contact reached the route');
  t.equal(after.ok - before.ok, 25, 'audience_lookups_total{status="200"}');
  t.equal(after.durations - before.durations, 25, 'the route’s request-duration series');
  t.equal(after.notFound - before.notFound, 1, 'the 404, counted by the route');
});

t.test('a limiter that asks Redis: answered when it allows, the route answers its 429', async (t) => {
  const url = await redisUrlIfReachable();
  if (!url) throw new Error(`Redis not reachable at ${redisUrl()}: this machine kind runs one`);
  const contacts = [{ email: 'ada@example.com', userId: 'u-1', name: 'Ada' }];
  const app = await setup(t, contacts, { redisUrl: url, redisKeyPrefix: uniquePrefix() }, 5);
  const handled = countRouteHandler(t);
  const answers = [];
  for (let i = 0; i < 8; i++) answers.push(await lookupOf(app.url, app.dispatcher, app.tokens.acme, 'user_id:u-1'));
  t.same(answers.map((a) => a.status), [200, 200, 200, 200, 200, 429, 429, 429]);
  t.same(answers.slice(0, 5).map((a) => a.headers.ratelimit), [4, 3, 2, 1, 0].map((r) => `"org";r=${r};t=1`), 'one unit each, from the shared budget');
  t.equal(JSON.parse(answers[0]!.body).contact.first_name, 'Ada');
  t.equal(handled.count, 0, 'the 429s were the route’s (its hook refused them: no handler ran), the 200s the first answer’s');
  t.equal(answers[5]!.headers['retry-after'], '1');
});

t.test('answerFirst: a first answer that throws leaves the request to Fastify, or cuts it once begun', async (t) => {
  const app = Fastify({ logger: false });
  t.teardown(() => app.close());
  app.get('/x', async () => 'fastify');
  let mode: 'before' | 'after' | 'decline' = 'decline';
  answerFirst(app, () => (_request, response) => {
    if (mode === 'decline') return false;
    if (mode === 'after') response.writeHead(200, { 'content-length': '100' });
    throw new Error('a bug');
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  const get = () => request(`${url}/x`).then(async (res) => ({ status: res.statusCode, body: await res.body.text() }));
  t.same(await get(), { status: 200, body: 'fastify' }, 'declined: Fastify answers');
  mode = 'before';
  t.same(await get(), { status: 200, body: 'fastify' }, 'thrown before writing: Fastify answers');
  mode = 'after';
  await t.rejects(get(), 'thrown after the head was written: the connection is cut, not answered twice');
  mode = 'decline';
  t.same(await get(), { status: 200, body: 'fastify' }, 'the server goes on');
});
