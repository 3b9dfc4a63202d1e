/**
 * The Segment-compatible tracking API (routes/http/tracking.ts) at the HTTP level: write keys (shown once,
 * hashed, rotated, revoked, one org's never another's), every path and body form the SDKs use, the mapping
 * into this service's events, and hostile input. The real SDKs are in tracking-sdks.test.ts.
 */
import { gzipSync } from 'node:zlib';
import t from 'tap';
import { startTestApp, type TestApp } from '../../helpers/app.js';

const basic = (writeKey: string) => `Basic ${Buffer.from(`${writeKey}:`).toString('base64')}`;

function send(h: TestApp, url: string, body: unknown, headers: Record<string, string> = {}, raw?: Buffer | string) {
  return h.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...headers }, payload: raw ?? JSON.stringify(body) });
}

async function events(h: TestApp, org = 'acme') {
  await h.compacted();
  return h.db(org).all<{ event_name: string; email: string | null; client_id: string; message_id: string; raw: string; event_time: string }>(
    'SELECT event_name, email, client_id, message_id, raw, CAST(event_time AS VARCHAR) AS event_time FROM events ORDER BY log_seq, message_id',
  );
}

async function quarantined(h: TestApp, org = 'acme') {
  await h.compacted();
  return h.db(org).all<{ code: string; raw: string }>('SELECT code, raw FROM quarantine ORDER BY received_at');
}

t.test('write keys: shown once at creation, by their last 4 characters after, stored hashed, rotated and revoked', async (t) => {
  const h = await startTestApp(t);
  const created = await h.createOrg('acme');
  const key = created.production.writeKey;
  t.match(key, /^wk_[0-9A-Za-z]{32}$/);
  t.not(created.staging.writeKey, key, 'one per environment');

  const got = (await h.admin('GET', '/admin/v1/orgs/acme')).json();
  t.equal(got.credentials.production.writeKey.last4, key.slice(-4));
  t.notMatch(JSON.stringify(got), key, 'never shown again');
  const control = JSON.stringify(await h.app.control.get('org.acme'));
  t.notMatch(control, key, 'the control plane keeps no write key');
  t.match(control, /"hash":"[0-9a-f]{64}"/);

  const track = (writeKey: string) => send(h, '/v1/track', { userId: 'u1', event: 'Signed Up' }, { authorization: basic(writeKey) });
  t.equal((await track(key)).statusCode, 200);

  const rotated = (await h.admin('POST', '/admin/v1/orgs/acme/credentials/production/write-key/rotate')).json();
  t.match(rotated, { environment: 'production', writeKey: /^wk_/, last4: rotated.writeKey.slice(-4) });
  t.equal((await track(key)).statusCode, 401, 'the old key stops at once');
  t.equal((await track(rotated.writeKey)).statusCode, 200);
  t.equal((await track(created.staging.writeKey)).statusCode, 200, "the other environment's key is untouched");

  const secretRotated = await h.admin('POST', '/admin/v1/orgs/acme/credentials/production/rotate');
  t.equal(secretRotated.statusCode, 200);
  t.equal((await track(rotated.writeKey)).statusCode, 200, 'rotating the partner secret leaves the write key');

  const revoked = await h.admin('DELETE', '/admin/v1/orgs/acme/credentials/production/write-key');
  t.same(revoked.json(), { environment: 'production', writeKey: null });
  const refused = await track(rotated.writeKey);
  t.equal(refused.statusCode, 401);
  t.equal(refused.json().code, 'invalid_credentials');
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme')).json().credentials.production.writeKey, null);
  t.equal((await h.admin('POST', '/admin/v1/orgs/nope/credentials/production/write-key/rotate')).statusCode, 404);
  t.equal((await h.app.inject({ method: 'POST', url: '/admin/v1/orgs/acme/credentials/production/write-key/rotate' })).statusCode, 401, 'the admin key is required');

  // Deleting the org: its write keys stop at once.
  const other = await h.createOrg('other');
  t.equal((await h.admin('DELETE', '/admin/v1/orgs/other')).statusCode, 200);
  t.equal((await track(other.production.writeKey)).statusCode, 401);
});

t.test('every form of presenting the write key, and every wrong one, on every path', async (t) => {
  const h = await startTestApp(t);
  const { production } = await h.createOrg('acme');
  const key = production.writeKey;
  const msg = { anonymousId: 'a1', event: 'Clicked', properties: { n: 1 } };
  const ok = async (url: string, body: unknown, headers: Record<string, string> = {}, why = url) => {
    const res = await send(h, url, body, headers);
    t.equal(res.statusCode, 200, `${why}: ${res.body}`);
    t.same(res.json(), { success: true }, why);
  };
  await ok('/v1/track', msg, { authorization: basic(key) }, 'Basic user name');
  await ok('/v1/track', msg, { authorization: `Basic ${Buffer.from(`:${key}`).toString('base64')}` }, 'Basic password');
  await ok('/v1/track', { ...msg, writeKey: key }, {}, 'writeKey in the body');
  await ok('/api/s/track', { ...msg, type: 'track' }, { 'x-write-key': `jitsu-id:${key}` }, 'X-Write-Key id:secret');
  await ok('/api/s/s2s/track', { ...msg, type: 'track' }, { 'x-write-key': key }, 'X-Write-Key alone');
  for (const [letter, body] of Object.entries({ t: msg, i: { anonymousId: 'a1', traits: { email: 'ada@example.com' } }, p: { anonymousId: 'a1', name: 'Home' }, s: { anonymousId: 'a1', name: 'Main' }, g: { anonymousId: 'a1', groupId: 'g1' }, a: { userId: 'u1', previousId: 'a1' } })) {
    await ok(`/v1/${letter}`, { ...body, writeKey: key }, { 'content-type': 'text/plain' }, `/v1/${letter} as text/plain`);
  }
  await ok('/v1/b', { writeKey: key, batch: [{ type: 'track', ...msg }] }, { 'content-type': 'text/plain' });
  await ok('/v1/batch', { batch: [{ type: 'track', ...msg }, { type: 'page', anonymousId: 'a1' }] }, { authorization: basic(key) });
  await ok('/v1/import', { batch: [{ type: 'track', ...msg, timestamp: '2025-01-02T03:04:05Z' }] }, { authorization: basic(key) });
  const gz = await send(h, '/v1/batch', undefined, { authorization: basic(key), 'content-encoding': 'gzip' }, gzipSync(JSON.stringify({ batch: [{ type: 'track', ...msg }] })));
  t.equal(gz.statusCode, 200, `gzip: ${gz.body}`);

  const before = (await events(h)).length;
  const wrong: Array<[string, Record<string, string>, unknown]> = [
    ['no key', {}, msg],
    ['an unknown key', { authorization: basic('wk_' + 'x'.repeat(32)) }, msg],
    ['the partner secret as the key', { authorization: basic(production.partnerSecret) }, msg],
    ['the partner id as the key', { authorization: basic(production.partnerId) }, msg],
    ['an empty Basic', { authorization: 'Basic ' }, msg],
    ['Basic that is not base64', { authorization: 'Basic %%%' }, msg],
    ['a Bearer', { authorization: `Bearer ${key}` }, msg],
    ['the key with a suffix', { authorization: basic(`${key}x`) }, msg],
    ['a prototype name', { authorization: basic('__proto__') }, msg],
    ['a key in a header Jitsu masks', { 'x-write-key': 'id:***' }, { ...msg, writeKey: 'id:***' }],
  ];
  for (const [why, headers, body] of wrong) {
    const res = await send(h, '/v1/track', body, headers);
    t.equal(res.statusCode, 401, why);
    t.equal(res.json().code, 'invalid_credentials', why);
    t.match(res.json().detail, /HTTP Basic user name/, `${why}: says how to send the key`);
  }
  t.equal((await events(h)).length, before, 'nothing stored for a wrong key');
});

t.test('the settings analytics.js loads name this service, for a known write key only', async (t) => {
  const h = await startTestApp(t);
  const { production } = await h.createOrg('acme');
  const res = await h.app.inject({ method: 'GET', url: `/v1/projects/${production.writeKey}/settings`, headers: { host: 'evil.example' } });
  t.equal(res.statusCode, 200);
  t.equal(res.headers['access-control-allow-origin'], '*');
  // Inject has no socket: the configured address (tracking-settings.test.ts: never a request header).
  t.match(res.json().integrations['Segment.io'], { apiKey: production.writeKey, apiHost: '127.0.0.1:0/v1', protocol: 'http' });
  t.equal((await h.app.inject({ method: 'GET', url: '/v1/projects/wk_unknown/settings' })).statusCode, 404);
  const preflight = await h.app.inject({ method: 'OPTIONS', url: '/api/s/track', headers: { origin: 'http://example.com', 'access-control-request-method': 'POST' } });
  t.equal(preflight.statusCode, 204);
  t.match(preflight.headers['access-control-allow-headers'], /X-Write-Key/);
});

t.test('Segment messages become events: ids, identity, names, ecommerce types, times, dedupe, alias, history', async (t) => {
  const h = await startTestApp(t);
  const { production } = await h.createOrg('acme');
  const auth = { authorization: basic(production.writeKey) };
  const sentAt = new Date(Date.now() + 3_600_000).toISOString(); // the client's clock is an hour ahead
  const batch = [
    { type: 'track', anonymousId: 'anon-1', event: 'Viewed Pricing', properties: { plan: 'pro' }, messageId: 'm-anon', timestamp: new Date(Date.now() + 3_600_000 - 60_000).toISOString() },
    { type: 'identify', userId: 'user-1', anonymousId: 'anon-2', traits: { email: 'Ada@Example.com', firstName: 'Ada' }, messageId: 'm-id' },
    { type: 'track', userId: 'user-1', event: 'Order Completed', messageId: 'm-order', properties: { order_id: 'o1', revenue: 30, products: [{ product_id: 'p1', quantity: 2, price: 15 }] } },
    { type: 'track', userId: 'user-1', event: 'Order Completed', messageId: 'm-order-bad', properties: { revenue: 30 } },
    { type: 'track', anonymousId: 'anon-2', event: 'Product Viewed', messageId: 'm-view', properties: { product_id: 'p9', name: 'Sock' } },
    { type: 'track', anonymousId: 'anon-3', event: 'addedToWishList!', messageId: 'm-camel', context: { traits: { email: 'bob@example.com' } } },
    { type: 'page', anonymousId: 'anon-2', name: 'Pricing', properties: { url: 'https://x.test/pricing' }, messageId: 'm-page' },
    { type: 'alias', userId: 'user-1', previousId: 'anon-1', messageId: 'm-alias' },
  ];
  const res = await send(h, '/v1/batch', { batch, sentAt }, auth);
  t.equal(res.statusCode, 200, res.body);
  const rows = await events(h);
  const by = (id: string) => rows.find((r) => r.message_id === id);
  t.match(by('m-order'), { event_name: 'complete_transaction', email: 'ada@example.com', client_id: 'user-1' }, 'a spec event with what it needs becomes predefined');
  t.same(JSON.parse(by('m-order')!.raw).properties.cartItems, [{ product_id: 'p1', quantity: 2, price: 15, productId: 'p1', variant: 'default' }]);
  t.match(by('m-order-bad'), { event_name: 'custom_order_completed' }, 'one without becomes custom, never refused');
  t.match(by('m-view'), { event_name: 'product_view', email: 'ada@example.com', client_id: 'anon-2' }, 'identify mapped the anonymousId too');
  t.match(by('m-camel'), { event_name: 'custom_added_to_wish_list', email: 'bob@example.com' }, 'free names in snake case; context.traits.email is the identity');
  t.equal(JSON.parse(by('m-camel')!.raw).context.eventName, 'addedToWishList!', 'the original name is kept');
  t.match(by('m-page'), { event_name: 'page_view' });
  t.equal(JSON.parse(by('m-page')!.raw).properties.title, 'Pricing');
  t.match(by('m-id'), { event_name: 'identify', client_id: 'anon-2' });
  t.match(by('m-id:1'), { event_name: 'identify', client_id: 'user-1' });
  t.match(by('m-anon'), { event_name: 'custom_viewed_pricing', email: 'ada@example.com', client_id: 'anon-1' }, 'the alias released the anonymous event to the identified person');
  t.match(by('m-alias'), { event_name: 'alias', email: 'ada@example.com' });
  const skewed = Date.parse(by('m-anon')!.event_time.replace(' ', 'T').replace(/\+00$/, 'Z'));
  t.ok(Math.abs(skewed - (Date.now() - 60_000)) < 30_000, `the client's hour of skew is corrected (${by('m-anon')!.event_time})`);

  // A retry of the same batch is stored once (messageId → dedupe).
  t.equal((await send(h, '/v1/batch', { batch, sentAt }, auth)).statusCode, 200);
  t.equal((await events(h)).length, rows.length);

  // /v1/import: history, kept out of flows (context.backfill).
  t.equal((await send(h, '/v1/import', { batch: [{ type: 'track', userId: 'user-1', event: 'Old Thing', timestamp: '2024-05-01T10:00:00Z', messageId: 'm-old' }] }, auth)).statusCode, 200);
  const old = (await events(h)).find((r) => r.message_id === 'm-old')!;
  t.equal(JSON.parse(old.raw).context.backfill, true);
  t.match(old.event_time, /^2024-05-01 10:00:00/);

  // The profile sees it all.
  await h.admin('PATCH', '/admin/v1/orgs/acme', { audienceApi: true });
  const token = (await h.admin('POST', '/admin/v1/orgs/acme/tokens', { createdBy: 'ops@example.com' })).json().token as string;
  const profile = await h.app.inject({ method: 'GET', url: '/audience/v2/contacts?identity=email:ada@example.com', headers: { authorization: `Bearer ${token}` } });
  t.equal(profile.statusCode, 200, profile.body);
  t.match(profile.json(), { contact: { first_name: 'Ada', user_id: 'user-1', order_count: 1, total_lifetime_value: 30 } }, "the identify's traits and the order are on the profile");
});

t.test('rejected messages are kept in quarantine and answered 400; limits 413; other encodings 415', async (t) => {
  const h = await startTestApp(t);
  const { production } = await h.createOrg('acme');
  const auth = { authorization: basic(production.writeKey) };
  const cases: Array<[string, unknown]> = [
    ['no id', { event: 'X' }],
    ['no event name', { anonymousId: 'a' }],
    ['a name without letters', { anonymousId: 'a', event: '!!!' }],
    ['a bad e-mail', { anonymousId: 'a', event: 'X', context: { traits: { email: 'not-an-email' } } }],
    ['an alias without previousId', { type: 'alias', userId: 'u' }],
  ];
  for (const [why, body] of cases) {
    const url = (body as { type?: string }).type === 'alias' ? '/v1/alias' : '/v1/track';
    const res = await send(h, url, { ...(body as object), context: { ...((body as { context?: object }).context ?? {}), debug: true } }, auth);
    t.equal(res.statusCode, 400, why);
    t.equal(res.json().code, 'message_rejected', why);
    t.ok(res.json().errors.length > 0, `${why}: the reasons with context.debug`);
  }
  const batch = await send(h, '/v1/batch', { batch: [{ type: 'track', anonymousId: 'a', event: 'Good' }, { type: 'nope', anonymousId: 'a' }] }, auth);
  t.equal(batch.statusCode, 400);
  t.match(batch.json().detail, /quarantine/);
  const notArray = await send(h, '/v1/batch', { batch: { 0: {} }, writeKey: production.writeKey }, {});
  t.equal(notArray.statusCode, 400);
  const q = await quarantined(h);
  t.equal(q.length, cases.length + 2 + 1, 'every rejected message kept');
  t.same(q.filter((r) => r.code === 'batch_rejected').length, 1, 'the good member of the bad batch too');
  t.notOk(q.some((r) => r.raw.includes(production.writeKey)), 'never the write key');
  t.equal((await events(h)).length, 0, 'nothing stored as an event');

  const big = await send(h, '/v1/track', { anonymousId: 'a', event: 'X', properties: { s: 'x'.repeat(33 * 1024) } }, auth);
  t.equal(big.statusCode, 413);
  const bigMember = await send(h, '/v1/batch', { batch: [{ type: 'track', anonymousId: 'a', event: 'X', properties: { s: 'x'.repeat(33 * 1024) } }] }, auth);
  t.equal(bigMember.statusCode, 413, 'a member over 32 KB');
  const bomb = gzipSync(JSON.stringify({ batch: [{ type: 'track', anonymousId: 'a', event: 'X', properties: { s: 'x'.repeat(600 * 1024) } }] }));
  t.ok(bomb.length < 10 * 1024, 'a small body that inflates past 500 KB');
  const bombed = await send(h, '/v1/batch', undefined, { ...auth, 'content-encoding': 'gzip' }, bomb);
  t.equal(bombed.statusCode, 413);
  const notGzip = await send(h, '/v1/batch', undefined, { ...auth, 'content-encoding': 'gzip' }, 'not gzip at all');
  t.equal(notGzip.statusCode, 400);
  t.equal(notGzip.json().code, 'invalid_request');
  t.equal((await send(h, '/v1/batch', undefined, { ...auth, 'content-encoding': 'br' }, '{}')).statusCode, 415);
  t.equal((await send(h, '/v1/track', undefined, { ...auth, 'content-type': 'application/xml' }, '<x/>')).json().code, 'invalid_json', 'any Content-Type is read as JSON, as Segment does');
  t.equal((await send(h, '/v1/track', { anonymousId: 'a', event: 'X' }, { ...auth, 'content-type': 'application/x-www-form-urlencoded' })).statusCode, 200);
  t.equal((await send(h, '/v1/track', undefined, auth, '{"anonymousId":')).json().code, 'invalid_json');
  const deep = '{"anonymousId":"a","event":"X","properties":' + '{"a":'.repeat(200) + '1' + '}'.repeat(200) + '}';
  t.equal((await send(h, '/v1/track', undefined, auth, deep)).json().code, 'json_too_deep');
  const proto = await send(h, '/v1/track', undefined, auth, '{"anonymousId":"a","event":"X","__proto__":{"admin":true}}');
  t.equal(proto.statusCode, 400, 'prototype keys refused');
  t.equal((await send(h, '/v1/track', [1, 2], auth)).statusCode, 400, 'a body that is not an object');
  t.equal((await send(h, '/api/s/nope', { anonymousId: 'a' }, { 'x-write-key': production.writeKey })).statusCode, 400, 'an unknown Jitsu type');
});

t.test("one org's write key never writes into another org", async (t) => {
  const h = await startTestApp(t);
  const acme = await h.createOrg('acme');
  await h.createOrg('beta');
  // Whatever the body claims, the key decides the org and environment.
  const res = await send(h, '/v1/track', { anonymousId: 'a', event: 'X', partnerId: 'beta', org: 'beta', context: { org: 'beta' }, traits: { email: 'x@example.com' } }, { authorization: basic(acme.staging.writeKey) });
  t.equal(res.statusCode, 200);
  t.equal((await events(h, 'acme')).length, 1);
  t.equal((await events(h, 'beta')).length, 0);
  const [row] = await h.db('acme').all<{ environment: string }>('SELECT environment FROM events');
  t.equal(row!.environment, 'staging');
});

t.test('an alias sent before the identify links once the identify comes (Segment\'s server-side order)', async (t) => {
  const h = await startTestApp(t);
  const { production } = await h.createOrg('acme');
  const auth = { authorization: basic(production.writeKey) };
  const post = async (body: unknown) => t.equal((await send(h, '/v1/batch', body, auth)).statusCode, 200);
  // Anonymous browsing, then sign-up: alias (anonymous → user) first, identify of the user in a later request.
  await post({ batch: [{ type: 'track', anonymousId: 'anon-9', event: 'Viewed Pricing', messageId: 'm-browse' }] });
  await post({ batch: [{ type: 'alias', previousId: 'anon-9', userId: 'user-9', messageId: 'm-alias' }] });
  await post({ batch: [{ type: 'track', anonymousId: 'anon-9', event: 'Clicked Signup', messageId: 'm-click' }] });
  t.same((await events(h)).length, 0, 'nothing has a person yet: every event waits');
  await post({ batch: [{ type: 'identify', userId: 'user-9', traits: { email: 'nine@example.com' }, messageId: 'm-identify' }] });
  const rows = await events(h);
  t.same(
    rows.map((r) => [r.message_id, r.email]).sort(),
    [['m-alias', 'nine@example.com'], ['m-browse', 'nine@example.com'], ['m-click', 'nine@example.com'], ['m-identify', 'nine@example.com']],
    'the identify released the alias, and the alias the anonymous events',
  );
  // The link is kept: a later anonymous event resolves at once.
  await post({ batch: [{ type: 'track', anonymousId: 'anon-9', event: 'Viewed Docs', messageId: 'm-later' }] });
  t.equal((await events(h)).find((r) => r.message_id === 'm-later')?.email, 'nine@example.com');
  const [stored] = await h.db('acme').all<{ n: bigint }>("SELECT count(*) AS n FROM identify_mappings WHERE client_id = 'anon-9'");
  t.equal(Number(stored?.n), 1, 'and stored, so a restart keeps it');
});
