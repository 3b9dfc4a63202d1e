/**
 * Segment's standard snippet (5.2.0, as Segment's source settings show it), self-hosted: its only change
 * is cdn.segment.com's host replaced by this service's, in Debian's Chromium. analytics.js comes from
 * GET /analytics.js/v1/{writeKey}/analytics.min.js, its settings and chunks from the service too; the
 * page's calls arrive as events, and nothing goes to Segment. The script's own answers (write key
 * embedded, the base named, caching, chunks by name only) are checked over HTTP.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { startTestApp, type TestApp, waitFor } from '../../helpers/app.js';
import { launchChromium, watchPage } from '../../helpers/browser.js';
import { ROOT } from '../../helpers/paths.js';

const UMD = join(ROOT, 'node_modules/@segment/analytics-next/dist/umd/');

/** Segment's snippet 5.2.0, verbatim but for the host of its script URL (`CDN`) and the write key. */
const snippet = (cdn: string, writeKey: string) =>
  `!function(){var i="analytics",analytics=window[i]=window[i]||[];if(!analytics.initialize)if(analytics.invoked)window.console&&console.error&&console.error("Segment snippet included twice.");else{analytics.invoked=!0;analytics.methods=["trackSubmit","trackClick","trackLink","trackForm","pageview","identify","reset","group","track","ready","alias","debug","page","screen","once","off","on","addSourceMiddleware","addIntegrationMiddleware","setAnonymousId","addDestinationMiddleware","register"];analytics.factory=function(e){return function(){if(window[i].initialized)return window[i][e].apply(window[i],arguments);var n=Array.prototype.slice.call(arguments);if(["track","screen","alias","group","page","identify"].indexOf(e)>-1){var c=document.querySelector("link[rel='canonical']");n.push({__t:"bpc",c:c&&c.getAttribute("href")||void 0,p:location.pathname,u:location.href,s:location.search,t:document.title,r:document.referrer})}n.unshift(e);analytics.push(n);return analytics}};for(var n=0;n<analytics.methods.length;n++){var key=analytics.methods[n];analytics[key]=analytics.factory(key)}analytics.load=function(key,n){var t=document.createElement("script");t.type="text/javascript";t.async=!0;t.setAttribute("data-global-segment-analytics-key",i);t.src="${cdn}/analytics.js/v1/" + key + "/analytics.min.js";var r=document.getElementsByTagName("script")[0];r.parentNode.insertBefore(t,r);analytics._loadOptions=n};analytics._writeKey="${writeKey}";;analytics.SNIPPET_VERSION="5.2.0";
  analytics.load("${writeKey}");
  analytics.page();
  }}();`;

/** A page on its own port with the snippet, an identify and a track, as a site would have them. */
async function servePage(t: Test, serviceUrl: string, writeKey: string): Promise<string> {
  const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Pricing</title><link rel="icon" href="data:,">
<script>${snippet(serviceUrl, writeKey)}</script>
<script>
  analytics.identify('u-ada', { email: 'ada@example.com', firstName: 'Ada' });
  analytics.track('Plan Chosen', { plan: 'pro' });
  analytics.ready(() => { window.ajsReady = true; });
</script></head><body><h1>Pricing</h1></body></html>`;
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/') res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function storedNames(h: TestApp): Promise<Array<{ event_name: string; email: string | null }>> {
  await h.compacted();
  return h.db('acme').all<{ event_name: string; email: string | null }>("SELECT event_name, email, message_id, json_extract_string(raw, '$.context.library.name') AS lib FROM events ORDER BY event_name");
}

t.test("Segment's standard snippet pointed at the service: analytics.js, settings and events all from and to it", async (t) => {
  const browser = await launchChromium(t);
  const h = await startTestApp(t);
  const serviceUrl = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const { writeKey } = (await h.createOrg('acme')).production;
  const pageUrl = await servePage(t, serviceUrl, writeKey);

  const page = await browser.newPage();
  const { problems, elsewhere } = watchPage(page, serviceUrl);
  const loaded: string[] = [];
  page.on('response', (response) => {
    if (response.url().startsWith(serviceUrl) && response.request().method() === 'GET') loaded.push(`${new URL(response.url()).pathname} ${response.status()}`);
  });
  await page.goto(`${pageUrl}/`);
  await page.waitForFunction(() => (window as unknown as { ajsReady?: boolean }).ajsReady === true);

  const names = await waitFor(async () => {
    const rows = await storedNames(h);
    return rows.length >= 3 ? rows : undefined;
  }, { what: 'the page, identify and track stored', timeoutMs: 20_000 });
  t.same([...new Set(names.map((r) => r.event_name))].sort(), ['custom_plan_chosen', 'identify', 'page_view'], `the snippet's page, then the identify and track: ${JSON.stringify(names)}`);
  t.ok(names.every((r) => r.email === 'ada@example.com'), 'all under the identified contact');
  t.ok(loaded.includes(`/analytics.js/v1/${writeKey}/analytics.min.js 200`), 'analytics.js from the service');
  t.ok(loaded.includes(`/v1/projects/${writeKey}/settings 200`), 'its settings from the service');
  t.same(loaded.filter((l) => !l.endsWith(' 200')), [], 'every script and setting it asked for was there');
  t.same(elsewhere.filter((url) => !url.startsWith(pageUrl)), [], 'nothing to cdn.segment.com or api.segment.io');
  t.same(problems, [], 'no script error');
});

t.test('the script: write key embedded, base from PUBLIC_URL never from the request, chunks only by name', async (t) => {
  const h = await startTestApp(t, { config: { publicUrl: 'https://audience.example.com/audience/' } });
  const { writeKey } = (await h.createOrg('acme')).production;
  const script = await h.app.inject({ url: `/analytics.js/v1/${writeKey}/analytics.min.js`, headers: { host: 'evil.example', 'x-forwarded-host': 'evil.example', forwarded: 'host=evil.example' } });
  t.equal(script.statusCode, 200);
  t.match(script.headers['content-type'], /^text\/javascript/);
  t.equal(script.headers['cache-control'], 'public, max-age=300', 'the same for every client: cacheable');
  t.match(script.body, 'a._cdn="https://audience.example.com/audience"', 'the base is PUBLIC_URL');
  t.notMatch(script.body, 'evil.example', 'no request header reaches it');
  t.match(script.body, `window.analyticsWriteKey=${JSON.stringify(writeKey)}`, 'the write key embedded as Segment embeds it');
  t.notMatch(script.body, '__WRITE_KEY__');

  for (const key of ['nope', `${writeKey}x`, '..%2F..%2Fpackage.json', 'a'.repeat(300)]) {
    const res = await h.app.inject({ url: `/analytics.js/v1/${key}/analytics.min.js` });
    t.ok(res.statusCode === 404 || res.statusCode === 400, `${key.slice(0, 40)}: ${res.statusCode}`);
    t.match(res.headers['content-type'], /^application\/problem\+json/, 'no script for it: a problem');
  }
  t.equal((await h.admin('DELETE', '/admin/v1/orgs/acme/credentials/production/write-key')).statusCode, 200);
  t.equal((await h.app.inject({ url: `/analytics.js/v1/${writeKey}/analytics.min.js` })).statusCode, 404, 'a revoked write key: no script');

  const chunk = readdirSync(UMD).find((file) => /\.bundle\.[0-9a-f]+\.js$/.test(file))!;
  const bundle = await h.app.inject({ url: `/analytics-next/bundles/${chunk}` });
  t.equal(bundle.statusCode, 200, `a chunk of the build: ${chunk}`);
  t.equal(bundle.body, readFileSync(join(UMD, chunk), 'utf8'));
  t.equal(bundle.headers['cache-control'], 'public, max-age=31536000, immutable');
  for (const file of ['..%2Fstandalone.js', 'standalone.js', 'index.js', '..%2F..%2F..%2Fpackage.json', 'x.bundle.0000000000.js', `${chunk}.map`, `${chunk}.gz`]) {
    t.equal((await h.app.inject({ url: `/analytics-next/bundles/${file}` })).statusCode, 404, `${file}: not served`);
  }
});

t.test('without PUBLIC_URL the base is the address the connection reached, and not cached', async (t) => {
  const h = await startTestApp(t);
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const { writeKey } = (await h.createOrg('acme')).production;
  const res = await fetch(`${url}/analytics.js/v1/${writeKey}/analytics.min.js`, { headers: { 'x-forwarded-host': 'evil.example' } });
  t.equal(res.status, 200);
  t.equal(res.headers.get('cache-control'), 'no-store');
  t.match(await res.text(), `a._cdn=${JSON.stringify(url)}`);
});
