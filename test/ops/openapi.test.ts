/**
 * /openapi.json is a valid OpenAPI 3.1 document that describes every route the service registers (and
 * nothing it does not), every $ref in it resolves, and /docs serves the reference without any CDN.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import t from 'tap';
import { errorCatalog } from '../../src/core/errors.js';
import { startTestApp } from '../helpers/app.js';

t.test('the document is valid OpenAPI 3.1 and covers exactly the registered routes', async (t) => {
  const h = await startTestApp(t);
  const res = await h.app.inject({ url: '/openapi.json' });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^application\/json/);
  const doc = res.json() as { openapi: string; paths: Record<string, Record<string, { responses: Record<string, unknown> }>>; components: { schemas: Record<string, unknown> } };
  t.equal(doc.openapi, '3.1.0');

  const result = await new Validator().validate(doc as never);
  t.ok(result.valid, `valid OpenAPI: ${JSON.stringify(result.errors)?.slice(0, 2000)}`);

  const refs = [...res.body.matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1]!);
  t.ok(refs.length > 20, 'schemas are referenced, not inlined');
  for (const ref of new Set(refs)) {
    const name = ref.replace('#/components/schemas/', '');
    t.ok(ref.startsWith('#/components/schemas/') && name in doc.components.schemas, `${ref} resolves`);
  }

  const documented = new Set(Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`)));
  const registered = new Set(
    h.app.registeredRoutes
      // Web pages, not API: the reference itself and the console; and browsers' CORS preflights.
      .filter((r) => r.method !== 'HEAD' && r.method !== 'OPTIONS' && !r.url.startsWith('/docs') && !r.url.startsWith('/console'))
      .map((r) => `${r.method} ${r.url.replace(/:(\w+)/g, '{$1}')}`),
  );
  for (const route of registered) t.ok(documented.has(route), `${route} is documented`);
  for (const route of documented) t.ok(registered.has(route), `${route} exists`);

  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) t.ok(op.responses['500'], `${method} ${path} names its errors`);
  }
  const named = new Set([...res.body.matchAll(/\/problems\/(\w+)/g)].map((m) => m[1]));
  for (const code of Object.keys(errorCatalog)) t.ok(named.has(code) || code === 'not_found', `${code} is documented on some route`);
});

t.test('/docs serves the reference from the service itself', async (t) => {
  const h = await startTestApp(t);
  const page = await h.app.inject({ url: '/docs/' });
  t.equal(page.statusCode, 200);
  t.match(page.headers['content-type'], /text\/html/);
  const external = [...page.body.matchAll(/(?:src|href)=["'](https?:)?\/\/[^"']+/g)].map((m) => m[0]);
  t.same(external, [], 'no script, style or font from another host');
  t.match(page.headers['content-security-policy'], /default-src 'none'; script-src 'self'/, 'and the browser is told to load nothing else');
  const css = await h.app.inject({ url: '/docs/swagger-ui.css' });
  t.equal(css.statusCode, 200);
  t.notMatch(css.body, /url\(["']?https?:/, 'the stylesheet loads nothing from another host');
  t.match((await h.app.inject({ url: '/docs/init.js' })).body, /url: '\.\.\/openapi\.json'.*validatorUrl: null/, 'the document of this service, no online validator');
  t.equal((await h.app.inject({ url: '/docs' })).headers.location, '/docs/');
  const scripts = [...page.body.matchAll(/<script[^>]+src=["']([^"']+)/g)].map((m) => m[1]!);
  t.ok(scripts.length > 0, 'loads its script');
  for (const src of scripts) {
    const script = await h.app.inject({ url: new URL(src, 'http://x/docs/').pathname });
    t.equal(script.statusCode, 200, `${src} is served locally`);
    if (src.includes('bundle')) t.ok(script.body.length > 100_000, 'the whole reference bundle');
  }
  t.notMatch(page.body, /test-admin-key/, 'no secret in the page');
});
