/**
 * The real clients teams already run, unchanged, against the service listening on 127.0.0.1: Segment's
 * analytics-node, RudderStack's rudder-sdk-node (gzip by default) and @jitsu/js in Node. Each sends identify,
 * track and page, and an anonymous track later aliased; the events, identities and profile arrive; a
 * revoked write key is an error in each SDK (never a silent success); a batch the SDK retries after an
 * answer it did not get is stored once. analytics.js in Chromium is tracking-browser.test.ts.
 */
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Analytics as SegmentAnalytics } from '@segment/analytics-node';
import RudderAnalytics from '@rudderstack/rudder-sdk-node';
import { jitsuAnalytics } from '@jitsu/js';
import t, { type Test } from 'tap';
import { startTestApp, type TestApp } from '../../helpers/app.js';

interface Row {
  event_name: string;
  email: string | null;
  client_id: string;
  message_id: string;
}

async function setUp(t: Test) {
  const h = await startTestApp(t);
  const baseUrl = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const { production } = await h.createOrg('acme', { audienceApi: true });
  const token = (await h.admin('POST', '/admin/v1/orgs/acme/tokens', { createdBy: 'ops@example.com' })).json().token as string;
  return { h, baseUrl, writeKey: production.writeKey, token };
}

async function rows(h: TestApp): Promise<Row[]> {
  await h.compacted();
  return h.db('acme').all<Row>('SELECT event_name, email, client_id, message_id FROM events ORDER BY log_seq, message_id');
}

async function profile(h: TestApp, token: string, email: string) {
  const res = await h.app.inject({ method: 'GET', url: `/audience/v2/contacts?identity=email:${email}`, headers: { authorization: `Bearer ${token}` } });
  return { status: res.statusCode, contact: res.statusCode === 200 ? (res.json().contact as Record<string, unknown>) : undefined };
}

/** A revoked key: the one the org had before a rotation. */
async function revokedKey(h: TestApp, writeKey: string): Promise<string> {
  const res = await h.admin('POST', '/admin/v1/orgs/acme/credentials/production/write-key/rotate');
  if (res.statusCode !== 200) throw new Error(res.body);
  return writeKey;
}

/**
 * The person every SDK sends: anonymous first (a track that waits for an identity), then identified by
 * userId with an e-mail, an order and a page; last, the anonymous id aliased to the userId, which gives
 * the waiting track its person.
 */
function checkPerson(t: Test, all: Row[], email: string, userId: string, anonymousId: string) {
  const mine = all.filter((r) => r.email === email);
  const names = mine.map((r) => r.event_name).sort();
  t.same(names, ['alias', 'complete_transaction', 'custom_viewed_pricing', 'identify', 'page_view'].sort(), `${email}: every event, under the person`);
  t.equal(mine.find((r) => r.event_name === 'custom_viewed_pricing')?.client_id, anonymousId, 'the anonymous track joined the person through the alias');
  t.equal(mine.find((r) => r.event_name === 'complete_transaction')?.client_id, userId);
}

const ORDER = { order_id: 'o1', revenue: 30, products: [{ product_id: 'p1', quantity: 1, price: 30 }] };

t.test('Segment analytics-node', async (t) => {
  const { h, baseUrl, writeKey, token } = await setUp(t);
  const analytics = new SegmentAnalytics({ writeKey, host: baseUrl, flushInterval: 20, maxRetries: 3 });
  const delivered = (call: (cb: (err?: unknown) => void) => void) => new Promise<void>((resolve, reject) => call((err) => (err ? reject(err) : resolve())));
  await delivered((cb) => analytics.track({ anonymousId: 'seg-anon', event: 'Viewed Pricing', properties: { plan: 'pro' } }, cb));
  await delivered((cb) => analytics.identify({ userId: 'seg-user', traits: { email: 'seg@example.com', firstName: 'Sam' } }, cb));
  await delivered((cb) => analytics.track({ userId: 'seg-user', event: 'Order Completed', properties: ORDER }, cb));
  await delivered((cb) => analytics.page({ userId: 'seg-user', name: 'Pricing', properties: { url: 'https://shop.test/pricing' } }, cb));
  await delivered((cb) => analytics.alias({ userId: 'seg-user', previousId: 'seg-anon' }, cb));
  await analytics.closeAndFlush();
  checkPerson(t, await rows(h), 'seg@example.com', 'seg-user', 'seg-anon');
  const found = await profile(h, token, 'seg@example.com');
  t.equal(found.status, 200);
  t.match(found.contact, { first_name: 'Sam', user_id: 'seg-user', order_count: 1, total_lifetime_value: 30 });

  const before = (await rows(h)).length;
  const old = await revokedKey(h, writeKey);
  const revoked = new SegmentAnalytics({ writeKey: old, host: baseUrl, flushInterval: 20, maxRetries: 1 });
  const errors: unknown[] = [];
  revoked.on('error', (e) => errors.push(e));
  const failed = await delivered((cb) => revoked.track({ userId: 'seg-user', event: 'Lost' }, cb)).then(() => undefined, (e: unknown) => e);
  await revoked.closeAndFlush();
  t.match(String((failed as { reason?: unknown })?.reason ?? failed), /401/, 'the callback gets the 401');
  t.ok(errors.length > 0, "and the client's error event fires");
  t.equal((await rows(h)).length, before, 'nothing stored');
});

t.test('analytics-node retries a batch whose answer it never got: stored once', async (t) => {
  const { h, baseUrl, writeKey } = await setUp(t);
  // A proxy that forwards the first batch to the service, waits until it is stored, then answers 503.
  let forwarded = 0;
  const proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const upstream = httpRequest(`${baseUrl}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
        answer.resume();
        answer.on('end', () => {
          forwarded++;
          if (forwarded === 1) res.writeHead(503).end();
          else res.writeHead(answer.statusCode ?? 502, { 'content-type': 'application/json' }).end('{"success":true}');
        });
      });
      upstream.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => proxy.close(() => resolve())));
  const analytics = new SegmentAnalytics({ writeKey, host: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, flushInterval: 20, maxRetries: 3 });
  const done = new Promise<void>((resolve, reject) =>
    analytics.track({ userId: 'retry-user', event: 'Order Completed', properties: ORDER, context: { traits: { email: 'retry@example.com' } } }, (err) => (err ? reject(err) : resolve())),
  );
  await done;
  await analytics.closeAndFlush();
  t.ok(forwarded >= 2, `the SDK sent the batch again (${forwarded} times)`);
  const stored = (await rows(h)).filter((r) => r.email === 'retry@example.com');
  t.equal(stored.length, 1, 'stored once: the retry carries the same messageId');
});

t.test('RudderStack rudder-sdk-node (gzip)', async (t) => {
  const { h, baseUrl, writeKey, token } = await setUp(t);
  const client = new RudderAnalytics(writeKey, { dataPlaneUrl: baseUrl, flushAt: 1, flushInterval: 20, retryCount: 0, logLevel: 'error' });
  const flushed = () => new Promise<void>((resolve, reject) => void client.flush((err?: Error) => (err ? reject(err) : resolve())).catch(reject));
  client.track({ anonymousId: 'rs-anon', event: 'Viewed Pricing', properties: { plan: 'pro' } });
  await flushed();
  client.identify({ userId: 'rs-user', traits: { email: 'rs@example.com', firstName: 'Rita' } });
  client.track({ userId: 'rs-user', event: 'Order Completed', properties: ORDER });
  client.page({ userId: 'rs-user', name: 'Pricing', properties: { url: 'https://shop.test/pricing' } });
  await flushed();
  client.alias({ userId: 'rs-user', previousId: 'rs-anon' });
  await flushed();
  checkPerson(t, await rows(h), 'rs@example.com', 'rs-user', 'rs-anon');
  t.match((await profile(h, token, 'rs@example.com')).contact, { first_name: 'Rita', order_count: 1 });

  const before = (await rows(h)).length;
  const old = await revokedKey(h, writeKey);
  const handled: unknown[] = [];
  const revoked = new RudderAnalytics(old, { dataPlaneUrl: baseUrl, flushAt: 1, flushInterval: 20, retryCount: 0, logLevel: 'error', errorHandler: (e) => handled.push(e) });
  const failed = await new Promise<unknown>((resolve) => {
    revoked.track({ userId: 'rs-user', event: 'Lost' }, ((err?: unknown) => resolve(err)) as () => void);
  });
  t.match(String((failed as { response?: { status?: number } })?.response?.status ?? failed), /401/, "the call's callback gets the 401");
  t.equal(handled.length, 1, "the client's errorHandler too");
  t.equal((await rows(h)).length, before, 'nothing stored');
});

t.test('@jitsu/js in Node (X-Write-Key as Jitsu writes it, id:secret; Jitsu has no alias)', async (t) => {
  const { h, baseUrl, writeKey, token } = await setUp(t);
  const errors: string[] = [];
  const jitsu = jitsuAnalytics({ host: baseUrl, writeKey: `acme:${writeKey}`, errorPolicy: (message: string) => void errors.push(message), s2s: true });
  await jitsu.track('Viewed Pricing', { plan: 'pro' });
  await jitsu.identify('js-user', { email: 'js@example.com', firstName: 'Jo' });
  await jitsu.track('Order Completed', ORDER);
  await jitsu.page('Pricing', { url: 'https://shop.test/pricing' });
  // Jitsu has no alias: its identify carries the anonymousId it gave the earlier track, and both are mapped.
  const mine = (await rows(h)).filter((r) => r.email === 'js@example.com');
  t.same(mine.map((r) => r.event_name).sort(), ['complete_transaction', 'custom_viewed_pricing', 'identify', 'identify', 'page_view']);
  const anonymous = mine.find((r) => r.event_name === 'custom_viewed_pricing')!.client_id;
  t.not(anonymous, 'js-user', 'the track before identify was anonymous, and joined the person');
  t.same(mine.filter((r) => r.event_name === 'identify').map((r) => r.client_id).sort(), [anonymous, 'js-user'].sort(), 'the identify mapped both ids');
  t.match((await profile(h, token, 'js@example.com')).contact, { first_name: 'Jo', order_count: 1 });
  t.same(errors, [], 'no error while the key was good');

  const before = (await rows(h)).length;
  const old = await revokedKey(h, writeKey);
  const revoked = jitsuAnalytics({ host: baseUrl, writeKey: `acme:${old}`, errorPolicy: (message: string) => void errors.push(message), s2s: true });
  await revoked.track('Lost', {});
  t.match(errors, [/failed with error: 401/], "the client's error policy hears the 401");
  t.equal((await rows(h)).length, before, 'nothing stored');
});

/** A stored event's name, time and properties, by the client's messageId or by name. */
async function stored(h: TestApp, where: string, value: string) {
  await h.compacted();
  const [row] = await h.db('acme').all<{ event_name: string; event_time: Date; raw: string }>(`SELECT event_name, event_time, raw FROM events WHERE ${where} = $1 ORDER BY log_seq DESC LIMIT 1`, [value]);
  return row && { name: row.event_name, time: row.event_time.toISOString(), raw: JSON.parse(row.raw) as { properties: Record<string, unknown> } };
}

t.test('what each SDK sends lands as docs/partners.md maps it: back-dated times, Signed In, page names, snake-case traits', async (t) => {
  const { h, baseUrl, writeKey, token } = await setUp(t);
  const past = '2026-01-02T03:04:05.000Z';
  const segment = new SegmentAnalytics({ writeKey, host: baseUrl, flushInterval: 20, maxRetries: 3 });
  const delivered = (call: (cb: (err?: unknown) => void) => void) => new Promise<void>((resolve, reject) => call((err) => (err ? reject(err) : resolve())));
  await delivered((cb) => segment.track({ userId: 'sn-user', event: 'Signed In', timestamp: new Date(past), messageId: 'seg-signed-in', context: { traits: { email: 'sn@example.com' } } }, cb));
  await delivered((cb) => segment.identify({ userId: 'sn-user', traits: { email: 'sn@example.com', first_name: 'Snake', last_name: 'Case' } }, cb));
  await segment.closeAndFlush();
  const signedIn = await stored(h, 'message_id', 'seg-signed-in');
  t.equal(signedIn?.name, 'authentication', 'Signed In with the message-level userId is authentication');
  t.equal(signedIn?.raw.properties.userId, 'sn-user');
  // The service corrects the client's clock (SPEC 4.4): sentAt and receipt are within a second here.
  t.ok(Math.abs(Date.parse(signedIn!.time) - Date.parse(past)) < 5000, `analytics-node's back-dated timestamp is the event time (${signedIn?.time})`);
  t.match((await profile(h, token, 'sn@example.com')).contact, { first_name: 'Snake', last_name: 'Case' }, 'first_name and last_name reach the profile');

  const rudder = new RudderAnalytics(writeKey, { dataPlaneUrl: baseUrl, flushAt: 1, flushInterval: 20, retryCount: 0, logLevel: 'error' });
  rudder.track({ userId: 'rs-back', event: 'Old Order', timestamp: new Date(past), context: { traits: { email: 'rs-back@example.com' } } });
  await new Promise<void>((resolve, reject) => void rudder.flush((err?: Error) => (err ? reject(err) : resolve())).catch(reject));
  const backDated = await stored(h, 'event_name', 'custom_old_order');
  t.ok(Math.abs(Date.parse(backDated!.time) - Date.parse(past)) < 5000, `RudderStack's back-dated timestamp is the event time, not its originalTimestamp (${backDated?.time})`);

  const jitsu = jitsuAnalytics({ host: baseUrl, writeKey: `acme:${writeKey}`, s2s: true });
  await jitsu.identify('js-page', { email: 'js-page@example.com' });
  await jitsu.page('Home', { url: 'https://shop.test/' });
  const page = await stored(h, 'event_name', 'page_view');
  t.equal(page?.raw.properties.title, 'Home', "Jitsu's page(name, properties) has its name as the title");
});
