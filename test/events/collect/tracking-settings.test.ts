/**
 * The settings analytics.js loads (GET /v1/projects/{writeKey}/settings) name the collector from PUBLIC_URL,
 * or else from the address the connection reached: never from a request header. Generated hostile Host,
 * X-Forwarded-Host, X-Forwarded-Proto and Forwarded headers, over real HTTP and with TRUST_PROXY=true (which
 * lets Fastify read the X-Forwarded-* headers), give the answer a request without them gets; a cache in
 * front of the service cannot be made to hand other sites an attacker's collector.
 */
import { request } from 'node:http';
import fc from 'fast-check';
import t from 'tap';
import { startTestApp } from '../../helpers/app.js';
import { COLLECT_AND_API, startRoleApp } from '../../helpers/role-app.js';

type Settings = { integrations: { 'Segment.io': { apiHost: string; protocol: string } } };

/** GET over real HTTP with exactly these headers (fetch would not send a Host of our choosing). */
function get(url: string, headers: Record<string, string>): Promise<{ status: number; cacheControl: string | undefined; body: Settings }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, cacheControl: res.headers['cache-control'], body: JSON.parse(text) as Settings }));
    });
    req.on('error', reject).end();
  });
}

const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?$/);
const hostName = fc.oneof(
  fc.array(label, { minLength: 1, maxLength: 4 }).map((labels) => `${labels.join('.')}.example`),
  fc.constantFrom('evil.example', '127.0.0.1', '[::1]', 'localhost', 'collector.attacker.test'),
);
const hostile = fc.record(
  {
    host: fc.tuple(hostName, fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined })).map(([h, p]) => (p === undefined ? h : `${h}:${p}`)),
    'x-forwarded-host': hostName,
    'x-forwarded-proto': fc.constantFrom('https', 'http', 'javascript', 'wss'),
    forwarded: hostName.map((h) => `for=203.0.113.7;host=${h};proto=https`),
  },
  { requiredKeys: ['host'] },
);

t.test('without PUBLIC_URL: the address the connection reached, marked no-store, whatever the headers say', async (t) => {
  const h = await startRoleApp(t, COLLECT_AND_API, { config: { trustProxy: true } });
  const base = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const { writeKey } = (await h.createOrg('acme')).production;
  const url = `${base}/v1/projects/${writeKey}/settings`;
  const plain = await get(url, {});
  t.equal(plain.status, 200);
  t.same(plain.body.integrations['Segment.io'], { apiKey: writeKey, apiHost: `${new URL(base).host}/v1`, protocol: 'http', unbundledIntegrations: [], addBundledMetadata: false });
  t.equal(plain.cacheControl, 'no-store', 'a shared cache keeps none of it');

  let runs = 0;
  await fc.assert(
    fc.asyncProperty(hostile, async (headers) => {
      runs++;
      const answer = await get(url, headers);
      t.equal(answer.status, 200);
      t.same(answer.body, plain.body, `the same settings with ${JSON.stringify(headers)}`);
      t.equal(answer.cacheControl, 'no-store');
    }),
    { numRuns: 50 },
  );
  t.ok(runs >= 50);
});

t.test("with PUBLIC_URL: its host, path and scheme, whatever the headers say", async (t) => {
  const h = await startRoleApp(t, COLLECT_AND_API, { config: { trustProxy: true, publicUrl: 'https://collect.example.com/audience/' } });
  const base = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const { writeKey } = (await h.createOrg('acme')).production;
  const url = `${base}/v1/projects/${writeKey}/settings`;
  const plain = await get(url, {});
  t.match(plain.body.integrations['Segment.io'], { apiHost: 'collect.example.com/audience/v1', protocol: 'https' });
  t.equal(plain.cacheControl, undefined, 'the same answer for everyone: cacheable');

  await fc.assert(
    fc.asyncProperty(hostile, async (headers) => {
      const answer = await get(url, headers);
      t.same(answer.body, plain.body, `the same settings with ${JSON.stringify(headers)}`);
    }),
    { numRuns: 50 },
  );
  // Inject has no socket address: PUBLIC_URL all the same.
  const injected = await h.app.inject({ method: 'GET', url: `/v1/projects/${writeKey}/settings`, headers: { host: 'evil.example', 'x-forwarded-host': 'evil.example' } });
  t.same(injected.json(), plain.body, 'through inject too');
});
