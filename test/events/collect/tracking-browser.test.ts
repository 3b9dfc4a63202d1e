/**
 * analytics.js (@segment/analytics-next 1.84, its UMD build) in Debian's Chromium, unchanged but for
 * cdnURL: it loads its settings from this service's GET /v1/projects/{writeKey}/settings, which name this
 * service as the only destination, and sends its events to POST /v1/{t,p,i,a} across origins (the page
 * is served from another port, by the test). The events arrive, the anonymous ones under the person the
 * identify names, and the profile reads back; a revoked write key is an error the SDK reports, and
 * nothing is stored.
 *
 * What analytics-next does, found here: each call's promise resolves after the delivery, with a context
 * whose failedDelivery() is set for an HTTP 4xx (dropped, "Non-retryable error: 401") — a network error
 * instead queues the event for retry and sets nothing. A settings fetch that fails (404) rejects the
 * load with the response body as the message, and calls made on that instance never resolve.
 * analytics.alias(to) after identify sends userId and previousId both the identified user's id: the
 * identity the SDK adds to every event overwrites `to`. Events of an id no identify has named wait in
 * pending_identity, so "nothing stored" looks there too.
 */
import { join } from 'node:path';
import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext } from 'playwright-core';
import t, { type Test } from 'tap';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { launchChromium, watchPage } from '../../helpers/browser.js';
import { ROOT } from '../../helpers/paths.js';

const UMD = join(ROOT, 'node_modules/@segment/analytics-next/dist/umd/');

/**
 * The page: analytics.js and two functions the test calls. `start` loads analytics and answers whether
 * the load resolved, or with what it rejected (or that it did neither in 10 s); `call` makes one call,
 * awaits its promise and answers what the context it resolves with says: the event, and failedDelivery()
 * when the delivery failed. `ajsErrors` collects analytics' 'error' events. No chunk of the UMD build is
 * loaded with these settings; one would come from cdn.segment.com (its public path is fixed when the
 * script runs), which the check for other hosts would catch.
 */
const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Pricing</title><link rel="icon" href="data:,">
<script src="/umd/index.js"></script>
<script>
  const text = (error) => String((error && error.message) || error);
  window.ajsErrors = [];
  window.start = (settings) => {
    window.ajs = AnalyticsNext.AnalyticsBrowser.load(settings);
    window.ajs.on('error', (e) => window.ajsErrors.push({ code: e.code, reason: text(e.reason) }));
    const answer = window.ajs.then(() => ({ loaded: true }), (error) => ({ loaded: false, error: text(error) }));
    return Promise.race([answer, new Promise((resolve) => setTimeout(() => resolve({ loaded: false, error: 'neither loaded nor failed in 10 s' }), 10000))]);
  };
  window.call = async (method, args) => {
    const ctx = await window.ajs[method](...args);
    const failed = ctx.failedDelivery();
    return { event: JSON.parse(JSON.stringify(ctx.event)), failed: failed ? text(failed.reason) : null };
  };
</script></head><body><h1>Pricing</h1></body></html>`;

interface PageApi {
  start(settings: object): Promise<{ loaded: boolean; error?: string }>;
  call(method: string, args: unknown[]): Promise<{ event: Record<string, unknown>; failed: string | null }>;
  ajsErrors: Array<{ code: string; reason: string }>;
}

type Sent = { path: string; body: Record<string, unknown>; authorization: string | undefined };

/** Serves the page at / and the .js files of analytics-next's dist/umd/ at /umd/<name>: nothing else. */
async function servePage(t: Test): Promise<string> {
  const files = new Set(readdirSync(UMD).filter((name) => name.endsWith('.js')));
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://page.invalid').pathname;
    if (req.method === 'GET' && path === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
      return;
    }
    // Only a name listed in the folder: no "..", no "/", no other file.
    const name = path.startsWith('/umd/') ? path.slice('/umd/'.length) : '';
    if (req.method !== 'GET' || !files.has(name)) {
      res.writeHead(404).end();
      return;
    }
    readFile(UMD + name).then(
      (body) => res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(body),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/**
 * The page in a new tab (in a browser context of its own when opened from the browser), watched: what it
 * sends to the service, what the service answers, what it logs.
 */
async function openPage(opener: Browser | BrowserContext, pageUrl: string, serviceUrl: string, expectedConsole?: RegExp) {
  const page = await opener.newPage();
  const { problems, elsewhere } = watchPage(page, serviceUrl, expectedConsole);
  const sent: Sent[] = [];
  const answered: string[] = [];
  const consoleErrors: string[] = [];
  page.on('request', (request) => {
    if (request.method() === 'POST' && request.url().startsWith(serviceUrl)) {
      sent.push({ path: new URL(request.url()).pathname, body: JSON.parse(request.postData() ?? 'null'), authorization: request.headers().authorization });
    }
  });
  page.on('response', (response) => {
    if (response.url().startsWith(serviceUrl)) answered.push(`${response.request().method()} ${new URL(response.url()).pathname} ${response.status()}`);
  });
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
  await page.goto(`${pageUrl}/`);
  return {
    page,
    problems,
    sent,
    answered,
    consoleErrors,
    /** Requests to neither the service nor the page's own server (the page and analytics.js). */
    foreign: () => elsewhere.filter((url) => !url.startsWith(`${pageUrl}/`)),
    start: (settings: object) => page.evaluate((s) => (window as unknown as PageApi).start(s), settings),
    call: (method: string, ...args: unknown[]) => page.evaluate(([m, a]) => (window as unknown as PageApi).call(m, a), [method, args] as [string, unknown[]]),
    ajsErrors: () => page.evaluate(() => (window as unknown as PageApi).ajsErrors),
  };
}

async function stored(h: TestApp) {
  await h.compacted();
  const events = await h.db('acme').all<{ event_name: string; email: string | null; client_id: string; message_id: string; raw: string }>(
    'SELECT event_name, email, client_id, message_id, raw FROM events ORDER BY log_seq, message_id',
  );
  const quarantined = await h.db('acme').all<{ code: string }>('SELECT code FROM quarantine');
  // Events of an id no identify has named yet wait here for one (events/compaction/plan-batch.ts).
  const pending = await h.db('acme').all<{ client_id: string; message_id: string }>('SELECT client_id, message_id FROM pending_identity ORDER BY log_seq');
  return { events, quarantined, pending };
}

t.test('analytics.js in Chromium: settings from this service, events to it, the profile after', async (t) => {
  const browser = await launchChromium(t);
  const h = await startTestApp(t);
  const serviceUrl = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const pageUrl = await servePage(t);
  const { production } = await h.createOrg('acme');
  const p = await openPage(browser, pageUrl, serviceUrl);

  const loaded = await p.start({ writeKey: production.writeKey, cdnURL: serviceUrl });
  t.same(loaded, { loaded: true }, 'analytics.js loaded', { requested: p.answered, elsewhere: p.foreign() });
  if (!loaded.loaded) return; // calls on an instance that did not load never settle
  t.equal(p.answered[0], `GET /v1/projects/${production.writeKey}/settings 200`, 'with the settings from this service');

  const calls: Array<[string, ...unknown[]]> = [
    ['track', 'Viewed Pricing', { plan: 'pro' }],
    ['page', 'Pricing'],
    ['identify', 'user-1', { email: 'ada@example.com', firstName: 'Ada' }],
    ['track', 'Order Completed', { order_id: 'o1', revenue: 30, products: [{ product_id: 'p1', quantity: 1, price: 30 }] }],
    ['alias', 'user-1b'],
  ];
  const delivered = [];
  for (const [method, ...args] of calls) {
    const ctx = await p.call(method, ...args);
    t.equal(ctx.failed, null, `${method}: delivered (no failedDelivery on its context)`);
    delivered.push(ctx);
  }

  const paths = ['/v1/t', '/v1/p', '/v1/i', '/v1/t', '/v1/a'];
  t.same(p.answered.slice(1), paths.map((path) => `POST ${path} 200`), "analytics.js's one-letter paths, each answered 200");
  t.same(p.sent.map((s) => s.path), paths, 'one request per call, nothing else sent');
  const basic = `Basic ${btoa(`${production.writeKey}:`)}`;
  t.ok(p.sent.every((s) => s.authorization === basic && s.body.writeKey === production.writeKey), 'the write key as the Basic user name and in the body');
  const anonymousId = delivered[0]!.event.anonymousId as string;
  t.match(anonymousId, /^[0-9a-f-]{36}$/, 'an anonymousId of its own');
  t.ok(p.sent.every((s) => s.body.anonymousId === anonymousId), 'on every message');
  t.same(
    p.sent.map((s) => s.body.userId ?? null),
    [null, null, 'user-1', 'user-1', 'user-1'],
    'userId from identify on',
  );
  // analytics-next 1.84: alias(to) after identify sends previousId = the identified user's id, and the
  // identity added to every event overwrites `to` (user-1b) with it too.
  t.match(p.sent[4]?.body, { type: 'alias', previousId: 'user-1', userId: 'user-1' }, "alias: previousId is the identified user's id");

  const { events, quarantined, pending } = await stored(h);
  const byMessage = new Map(events.map((e) => [e.message_id, e]));
  const rawOf = (messageId: string | undefined) => JSON.parse(byMessage.get(messageId ?? '')?.raw ?? '{}');
  const messageIds = delivered.map((c) => c.event.messageId as string);
  t.same(
    events.map((e) => e.event_name),
    ['custom_viewed_pricing', 'page_view', 'identify', 'identify', 'complete_transaction', 'alias'],
    'every event stored, the identify once per id it carries',
  );
  t.match(byMessage.get(messageIds[0]!), { event_name: 'custom_viewed_pricing', client_id: anonymousId, email: 'ada@example.com' }, 'the anonymous track under the identified e-mail');
  t.match(byMessage.get(messageIds[1]!), { event_name: 'page_view', client_id: anonymousId, email: 'ada@example.com' }, 'the anonymous page too');
  t.equal(rawOf(messageIds[1]).properties?.title, 'Pricing', 'the page name as its title');
  t.match(byMessage.get(messageIds[2]!), { event_name: 'identify', client_id: anonymousId, email: 'ada@example.com' }, 'identify maps the anonymousId');
  t.match(byMessage.get(`${messageIds[2]!}:1`), { event_name: 'identify', client_id: 'user-1', email: 'ada@example.com' }, 'and the userId');
  t.match(byMessage.get(messageIds[3]!), { event_name: 'complete_transaction', email: 'ada@example.com' }, 'Order Completed is a transaction');
  t.match(rawOf(messageIds[3]).properties, { transactionId: 'o1', revenue: 30, cartItems: [{ productId: 'p1', quantity: 1, price: 30 }] }, 'with its order id, revenue and products');
  t.match(byMessage.get(messageIds[4]!), { event_name: 'alias', client_id: 'user-1', email: 'ada@example.com' }, 'the alias');
  t.same(quarantined, [], 'nothing quarantined');
  t.same(pending, [], 'nothing left waiting for an identity');

  await h.admin('PATCH', '/admin/v1/orgs/acme', { audienceApi: true });
  const token = (await h.admin('POST', '/admin/v1/orgs/acme/tokens', { createdBy: 'ops@example.com' })).json().token as string;
  const profile = await h.app.inject({ method: 'GET', url: '/audience/v2/contacts?identity=email:ada@example.com', headers: { authorization: `Bearer ${token}` } });
  t.equal(profile.statusCode, 200, 'the profile is found by the e-mail', { body: profile.body });
  t.match(profile.json(), { contact: { first_name: 'Ada', user_id: 'user-1', order_count: 1, total_lifetime_value: 30 } }, 'the profile: traits and the order');

  t.same(p.problems, [], 'no page errors');
  t.same(p.foreign(), [], 'nothing requested from any other host');
});

t.test('a revoked write key: the load rejects with the 404, inline settings deliver nothing (401), nothing stored', async (t) => {
  // One browser context for the three pages: a context takes a second to open here.
  const context = await (await launchChromium(t)).newContext();
  const h = await startTestApp(t);
  const serviceUrl = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const pageUrl = await servePage(t);
  const oldKey = (await h.createOrg('acme')).production.writeKey;
  // Settings a page kept from before the rotation (given inline, they are never fetched).
  const kept = await fetch(`${serviceUrl}/v1/projects/${oldKey}/settings`);
  t.equal(kept.status, 200, 'the settings of the key, kept');
  const rotated = await h.admin('POST', '/admin/v1/orgs/acme/credentials/production/write-key/rotate');
  t.equal(rotated.statusCode, 200, 'the write key rotated');
  const newKey = rotated.json().writeKey as string;
  const refusals = /Failed to load resource: the server responded with a status of 40[14]|No org environment has this write key/;

  // The settings fetch with the old key: 404, and the load rejects with it.
  const fetched = await openPage(context, pageUrl, serviceUrl, refusals);
  const load = await fetched.start({ writeKey: oldKey, cdnURL: serviceUrl });
  t.equal(load.loaded, false, 'AnalyticsBrowser.load rejects');
  t.match(load.error, /not_found.*No org environment has this write key/, "with the service's 404 body as its message");
  t.same(fetched.answered, [`GET /v1/projects/${oldKey}/settings 404`], 'the settings fetch answered 404');
  t.ok(fetched.consoleErrors.some((m) => /No org environment has this write key/.test(m)), 'analytics.js logs it on the console');
  const settled = await fetched.page.evaluate(() =>
    Promise.race([(window as unknown as PageApi).call('track', ['Viewed Pricing']).then(() => 'resolved', () => 'rejected'), new Promise((r) => setTimeout(() => r('pending'), 300))]),
  );
  t.equal(settled, 'pending', 'a call on the failed instance never settles');

  // Settings inline with the old key: the track reaches the service, 401, and its context says so.
  const inline = await openPage(context, pageUrl, serviceUrl, refusals);
  t.same(await inline.start({ writeKey: oldKey, cdnSettings: await kept.json() }), { loaded: true }, 'loaded from inline settings');
  const refused = await inline.call('track', 'Viewed Pricing', { plan: 'pro' });
  t.equal(refused.failed, 'Non-retryable error: 401', 'ctx.failedDelivery(): the 401');
  t.same(await inline.ajsErrors(), [{ code: 'delivery_failure', reason: 'Non-retryable error: 401' }], "and analytics emits 'error'");
  t.ok(inline.consoleErrors.some((m) => /status of 401/.test(m)), 'the 401 on the console');

  // The rotated key works from a page like it.
  const current = await openPage(context, pageUrl, serviceUrl);
  t.same(await current.start({ writeKey: newKey, cdnURL: serviceUrl }), { loaded: true }, 'the rotated key loads its settings');
  t.equal((await current.call('track', 'Viewed Pricing', { plan: 'pro' })).failed, null, 'the rotated key delivers');

  // The anonymous event of the rotated key waits for an identity; the old key's left nothing anywhere.
  const { events, quarantined, pending } = await stored(h);
  t.same(pending, [{ client_id: current.sent[0]?.body.anonymousId, message_id: current.sent[0]?.body.messageId }], "only the rotated key's event is stored");
  t.same(events, [], 'no event');
  t.same(quarantined, [], 'nothing quarantined');
  // Checked last, a while after the calls: nothing sent later either.
  t.same(fetched.sent, [], 'the failed instance sent nothing');
  t.same(inline.answered, ['POST /v1/t 401'], 'the refused track was sent once, not retried');
  for (const watched of [fetched, inline, current]) {
    t.same(watched.problems, [], 'no page errors');
    t.same(watched.foreign(), [], 'nothing requested from any other host');
  }
});
