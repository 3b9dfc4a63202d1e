/**
 * The API reference as a partner sees it: /docs in a real Chromium renders every operation of the
 * OpenAPI document and the error codes, under the page's Content-Security-Policy, without a request to
 * any other host and without a script error.
 */
import t from 'tap';
import { startTestApp } from '../helpers/app.js';
import { launchChromium, watchPage } from '../helpers/browser.js';

t.test('/docs renders every operation in Chromium, from the service alone', async (t) => {
  const browser = await launchChromium(t);
  const h = await startTestApp(t);
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const page = await browser.newPage();
  const { problems, elsewhere } = watchPage(page, url);
  page.on('response', (res) => {
    if (res.status() >= 400) problems.push(`${res.status()} ${res.url()}`);
  });

  const response = await page.goto(`${url}/docs`);
  t.equal(response?.status(), 200);
  t.equal(new URL(page.url()).pathname, '/docs/', '/docs redirects to the page');
  await page.waitForSelector('.opblock', { timeout: 20_000 });
  const rendered = await page.$$eval('.opblock', (blocks) =>
    blocks.map((block) => `${block.querySelector('.opblock-summary-method')?.textContent} ${block.querySelector('.opblock-summary-path')?.getAttribute('data-path')}`),
  );
  const doc = (await (await fetch(`${url}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
  const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`));
  t.same([...rendered].sort(), [...documented].sort(), `every operation is on the page (${rendered.length})`);

  // A partner opens the collect operation and finds its error codes and where they are explained.
  await page.click('.opblock-post:has([data-path="/http/v1/collect"]) .opblock-summary');
  await page.waitForSelector('.opblock.is-open .responses-table');
  const opened = await page.textContent('.opblock.is-open');
  for (const code of ['invalid_credentials', 'schema_violation', 'log_outcome_unknown']) t.match(opened, code, `the collect operation shows ${code}`);
  const links = await page.$$eval('.opblock.is-open a[href^="/problems/"]', (anchors) => anchors.map((a) => a.getAttribute('href')!));
  t.ok(links.includes('/problems/schema_violation'), 'each code links to its page');
  await page.goto(`${url}/problems/schema_violation`);
  t.match(await page.textContent('body'), /Fix:/, 'which says how to fix it');

  t.same(elsewhere, [], 'no request leaves the service');
  t.same(problems, [], 'no script error, no CSP violation');
});
