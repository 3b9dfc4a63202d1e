/** GET /audience/v2/contacts: the status matrix of SPEC 6.2, identities, fields, rate limit, freshness. */
import t, { type Test } from 'tap';
import { Agent, request } from 'undici';
import { ManualClock } from '../../../src/core/context.js';
import { emailHash } from '../../../src/events/profiles/profile-index.js';
import { ADMIN_KEY, startTestApp, type TestApp, waitFor } from '../../helpers/app.js';

async function setup(t: Test, org: Record<string, unknown> = {}, clock?: ManualClock) {
  const h = await startTestApp(t, clock ? { clock } : {});
  const cred = await h.createOrg('acme', { audienceApi: true, ...org });
  await h.app.inject({
    method: 'POST',
    url: '/admin/v1/orgs/acme/contacts/import',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'text/csv' },
    payload: 'email_address,first_name,last_name,user_id,address_city,tier\nada@example.com,Ada,Lovelace,u-1,London,gold\n',
  });
  const token = await issue(h, 'acme');
  return { h, cred, token };
}

async function issue(h: TestApp, slug: string, body: Record<string, unknown> = {}): Promise<string> {
  const res = await h.admin('POST', `/admin/v1/orgs/${slug}/tokens`, { createdBy: 'ops@example.com', ...body });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json().token;
}

function lookup(h: TestApp, token: string | undefined, query: string, headers: Record<string, string> = {}) {
  return h.app.inject({
    method: 'GET',
    url: `/audience/v2/contacts?${query}`,
    headers: { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
  });
}

t.test('200: exactly the content fields in configured order, by every identity type', async (t) => {
  const { h, token } = await setup(t);
  const res = await lookup(h, token, 'identity=email:Ada@Example.com');
  t.equal(res.statusCode, 200);
  const body = res.json();
  t.equal(body.status, 'success');
  t.same(Object.keys(body.contact), (await h.admin('GET', '/admin/v1/orgs/acme')).json().org.contentFields);
  t.match(body.contact, { email_address: 'ada@example.com', first_name: 'Ada', user_id: 'u-1', address_city: 'London', address_state: null, campaigns_received: [], flow_variant_membership: [], total_lifetime_value_jde: '$0.00' });
  t.ok(res.headers['request-id']);
  t.equal(res.headers['ratelimit-policy'], '"org";q=50;w=1');
  t.match(res.headers.ratelimit, /^"org";r=49;t=\d+$/);

  for (const q of [`identity=email-hash:${emailHash('ada@example.com')}`, `identity=email-hash:${emailHash('ada@example.com').toUpperCase()}`, 'identity=user_id:u-1']) {
    const r = await lookup(h, token, q);
    t.equal(r.statusCode, 200, q);
    t.equal(r.json().contact.email_address, 'ada@example.com');
  }
});

t.test('fields: a subset in configured order; unknown or non-content fields are 400', async (t) => {
  const { h, token } = await setup(t);
  await h.admin('PATCH', '/admin/v1/orgs/acme', { contentFields: ['email_address', 'tier', 'first_name'] });
  const all = await lookup(h, token, 'identity=email:ada@example.com');
  t.same(all.json().contact, { email_address: 'ada@example.com', tier: 'gold', first_name: 'Ada' }, 'custom field served');
  const subset = await lookup(h, token, 'identity=email:ada@example.com&fields=first_name,email_address');
  t.same(Object.keys(subset.json().contact), ['email_address', 'first_name'], 'configured order');
  // Answers are cached per contact: a changed field list must not be served the cached one.
  t.same((await lookup(h, token, 'identity=email:ada@example.com')).json().contact, all.json().contact, 'all fields again');
  await h.admin('PATCH', '/admin/v1/orgs/acme', { contentFields: ['tier', 'email_address'] });
  const changed = await lookup(h, token, 'identity=email:ada@example.com');
  t.same(changed.json().contact, { tier: 'gold', email_address: 'ada@example.com' }, 'the new content fields');
  for (const fields of ['last_name', 'nope', '', 'first_name,,tier']) {
    const r = await lookup(h, token, `identity=email:ada@example.com&fields=${fields}`);
    t.equal(r.statusCode, 400, `fields=${fields}`);
    t.equal(r.json().code, 'invalid_fields');
  }
});

t.test('400 invalid_identity; 404 or 400 for an unknown contact; no e-mail in error bodies', async (t) => {
  const { h, token } = await setup(t);
  for (const q of ['', 'identity=', 'identity=ada@example.com', 'identity=phone:123', 'identity=email:not-an-email', 'identity=email-hash:abc', 'identity=user_id:']) {
    const r = await lookup(h, token, q);
    t.equal(r.statusCode, 400, q);
    t.equal(r.json().code, 'invalid_identity');
    t.notMatch(r.body, /not-an-email|ada@/);
  }
  const missing = await lookup(h, token, 'identity=email:ghost@example.com');
  t.equal(missing.statusCode, 404);
  t.equal(missing.json().code, 'contact_not_found');
  t.notMatch(missing.body, /ghost/);
  await h.admin('PATCH', '/admin/v1/orgs/acme', { notFoundStatus: 400 });
  const as400 = await lookup(h, token, 'identity=email:ghost@example.com');
  t.equal(as400.statusCode, 400);
  t.equal(as400.json().code, 'contact_not_found');
  t.equal(as400.json().status, 400);
});

t.test('401 for missing, malformed, unknown, revoked and expired tokens; 403 without the premium flag; 406', async (t) => {
  const clock = new ManualClock(Date.now());
  const { h, token } = await setup(t, {}, clock);
  const typo = token.slice(0, 10) + (token[10] === 'a' ? 'b' : 'a') + token.slice(11);
  const other = await issue(h, 'acme', { createdBy: 'other@example.com' });
  const expiring = await issue(h, 'acme', { expiresAt: new Date(clock.now() + 60_000).toISOString() });
  t.equal((await lookup(h, expiring, 'identity=email:ada@example.com')).statusCode, 200);
  await h.admin('POST', '/admin/v1/orgs/acme/tokens/revoke', { createdBy: 'other@example.com' });
  clock.advance(61_000);
  const cases: Array<[string, string | undefined, Record<string, string>]> = [
    ['missing', undefined, {}],
    ['malformed', 'hello', {}],
    ['checksum typo', typo, {}],
    ['unknown', 'aud_' + 'x'.repeat(36), {}],
    ['revoked', other, {}],
    ['expired', expiring, {}],
    ['basic scheme', undefined, { authorization: `Basic ${token}` }],
  ];
  for (const [name, tok, headers] of cases) {
    const r = await lookup(h, tok, 'identity=email:ada@example.com', headers);
    t.equal(r.statusCode, 401, name);
    t.equal(r.json().code, 'invalid_token', name);
    t.match(r.headers['www-authenticate'], /^Bearer /, name);
    t.match(r.headers['content-type'], /application\/problem\+json/);
  }
  t.equal((await lookup(h, token, 'identity=email:ada@example.com', { accept: 'text/html' })).statusCode, 406);
  t.equal((await lookup(h, token, 'identity=email:ada@example.com', { accept: 'application/json;q=0, text/html' })).statusCode, 406);
  t.equal((await lookup(h, token, 'identity=email:ada@example.com', { accept: '*/*' })).statusCode, 200);

  await h.admin('PATCH', '/admin/v1/orgs/acme', { audienceApi: false });
  const forbidden = await lookup(h, token, 'identity=email:ada@example.com');
  t.equal(forbidden.statusCode, 403);
  t.equal(forbidden.json().code, 'audience_api_not_enabled');
});

t.test('rate limit: tokens of one org share one budget; another org is unaffected (exact, manual clock)', async (t) => {
  const clock = new ManualClock(Date.now());
  const { h, token } = await setup(t, {}, clock);
  const second = await issue(h, 'acme', { createdBy: 'b@example.com' });
  await h.createOrg('globex', { audienceApi: true });
  const globex = await issue(h, 'globex');
  const results = await Promise.all(
    Array.from({ length: 200 }, (_, i) => lookup(h, i % 2 ? token : second, 'identity=email:ada@example.com')),
  );
  const ok = results.filter((r) => r.statusCode === 200).length;
  t.equal(ok, 50, 'burst of 50 across both tokens');
  const limited = results.find((r) => r.statusCode === 429)!;
  t.equal(limited.json().code, 'rate_limited');
  t.equal(limited.headers['retry-after'], '1');
  t.equal(limited.headers['ratelimit-policy'], '"org";q=50;w=1');
  t.match(limited.headers.ratelimit, /^"org";r=0;t=1$/);
  t.equal((await lookup(h, globex, 'identity=email:ada@example.com')).statusCode, 404, 'globex has its own budget');
  clock.advance(1000);
  t.equal((await lookup(h, token, 'identity=email:ada@example.com')).statusCode, 200, 'refilled after 1 s');
  const metrics = await h.metrics();
  t.match(metrics, /audience_rate_limited_total\{policy="org"\} 150/);
  t.match(metrics, /audience_lookups_total\{status="429"\} 150/);
  t.match(metrics, /audience_lookups_total\{status="200"\} 51/);
  await h.admin('PATCH', '/admin/v1/orgs/acme', { rateLimit: 5 });
  clock.advance(1000);
  const small = await Promise.all(Array.from({ length: 10 }, () => lookup(h, token, 'identity=email:ada@example.com')));
  t.equal(small.filter((r) => r.statusCode === 200).length, 5, 'per-org override');
});

t.test('rate limit over real HTTP: 200 concurrent requests with two tokens → about 50 succeed', async (t) => {
  const { h, token } = await setup(t);
  const second = await issue(h, 'acme', { createdBy: 'b@example.com' });
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  // Open the 200 connections first, so the burst is not spread over connection set-up time.
  const dispatcher = new Agent({ connections: 200 });
  t.teardown(() => dispatcher.close());
  await Promise.all(Array.from({ length: 200 }, () => request(`${url}/healthz`, { dispatcher }).then((r) => r.body.dump())));
  const started = performance.now();
  const statuses = await Promise.all(
    Array.from({ length: 200 }, async (_, i) => {
      const res = await request(`${url}/audience/v2/contacts?identity=email:ada@example.com`, {
        dispatcher,
        headers: { authorization: `Bearer ${i % 2 ? token : second}` },
      });
      await res.body.dump();
      return res.statusCode;
    }),
  );
  const ok = statuses.filter((s) => s === 200).length;
  // The budget legitimately refills at 50/s while the burst is being served (~0.1 s here).
  const refill = Math.floor(((performance.now() - started) / 1000) * 50);
  t.ok(ok >= 45 && ok <= 55 + refill, `${ok} succeeded (50 ± 5, + ${refill} refilled during the burst)`);
  t.equal(statuses.filter((s) => s === 429).length, 200 - ok, 'the rest are 429');
});

t.test('one keep-alive connection: a revoked token is refused on its next request, another token is its own', async (t) => {
  const { h, token } = await setup(t);
  const second = await issue(h, 'acme', { createdBy: 'b@example.com' });
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  // One connection for every request: the token memo is per connection.
  const dispatcher = new Agent({ connections: 1, pipelining: 1 });
  t.teardown(() => dispatcher.close());
  const ports = new Set<number>();
  h.app.server.on('connection', (socket) => ports.add(socket.remotePort ?? 0));
  const get = async (bearer: string) => {
    const res = await request(`${url}/audience/v2/contacts?identity=email:ada@example.com`, { dispatcher, headers: { authorization: `Bearer ${bearer}` } });
    await res.body.dump();
    return res.statusCode;
  };
  t.same([await get(token), await get(token), await get(second), await get(token)], [200, 200, 200, 200]);
  const [id] = h.app.tokens.list('acme').filter((r) => r.revokedAt === null && r.createdBy !== 'b@example.com').map((r) => r.id);
  const revoked = await h.admin('DELETE', `/admin/v1/orgs/acme/tokens/${id}`);
  t.equal(revoked.statusCode, 200, revoked.body);
  t.equal(await get(token), 401, 'the remembered token, revoked: refused at once');
  t.equal(await get(second), 200, 'the other token still answers');
  t.equal(await get(token.slice(0, -1) + (token.endsWith('a') ? 'b' : 'a')), 401, 'one character off: refused');
  t.equal(ports.size, 1, 'all on one connection');
});

t.test('failed authentications are limited per client address', async (t) => {
  const { h } = await setup(t);
  const statuses: number[] = [];
  for (let i = 0; i < 15; i++) statuses.push((await lookup(h, 'aud_' + 'y'.repeat(36), 'identity=email:ada@example.com')).statusCode);
  t.equal(statuses.filter((s) => s === 401).length, 10);
  t.equal(statuses.filter((s) => s === 429).length, 5);
});

t.test('freshness: an identify and a purchase show in the profile, refreshed by their commit', async (t) => {
  // How soon (SPEC 6.1: within 1 s at p99) is the benchmark's to measure (bench/freshness.ts, npm run bench),
  // on a machine kept for it; here the refresh must happen at all, within a scaled deadline.
  const { h, cred, token } = await setup(t);
  const base = { ...cred.production, clientId: 'c1', sentAt: Date.now() };
  const started = Date.now();
  await h.collect({ ...base, type: 'identify', traits: { email: 'ada@example.com', firstName: 'Augusta' } });
  const seen = async (check: (c: Record<string, unknown>) => boolean, what: string) => {
    await waitFor(async () => check((await lookup(h, token, 'identity=email:ada@example.com')).json().contact), { timeoutMs: 10_000, intervalMs: 10, what });
    t.pass(`${what} (${Date.now() - started} ms after the collect)`);
  };
  await seen((c) => c.first_name === 'Augusta', 'new first name in the profile');
  await h.collect({ ...base, type: 'track', event: 'complete_transaction', properties: { transactionId: 't1', revenue: 20, cartItems: [{ productId: 'p', variant: 'v', quantity: 1 }] } });
  const today = new Date().toISOString().slice(0, 10);
  await seen((c) => c.total_lifetime_value === 20 && c.last_purchase_date === today, 'purchase reflected');
});
