/**
 * The API reference as a partner sees it: /docs in a real Chromium renders every operation of the
 * OpenAPI document and the error codes, under the page's Content-Security-Policy, without a request to
 * any other host and without a script error.
 */
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import t from 'tap';
import { operations } from '../../src/openapi/operations.js';
import { startTestApp } from '../helpers/app.js';

/** Debian's package (.ci/run installs it). */
const CHROMIUM = '/usr/bin/chromium';

t.test('/docs renders every operation in Chromium, from the service alone', async (t) => {
  t.ok(existsSync(CHROMIUM), `${CHROMIUM} is installed (apt-get install -y chromium)`);
  const h = await startTestApp(t);
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  const problems: string[] = [];
  const elsewhere: string[] = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('response', (res) => {
    if (res.status() >= 400) problems.push(`${res.status()} ${res.url()}`);
  });
  page.on('request', (request) => {
    if (!request.url().startsWith(url) && !request.url().startsWith('data:')) elsewhere.push(request.url());
  });

  const response = await page.goto(`${url}/docs`);
  t.equal(response?.status(), 200);
  t.equal(new URL(page.url()).pathname, '/docs/', '/docs redirects to the page');
  await page.waitForSelector('.opblock', { timeout: 20_000 });
  const rendered = await page.$$eval('.opblock', (blocks) =>
    blocks.map((block) => `${block.querySelector('.opblock-summary-method')?.textContent} ${block.querySelector('.opblock-summary-path')?.getAttribute('data-path')}`),
  );
  const documented = operations.map((op) => `${op.method} ${op.path.replace(/:(\w+)/g, '{$1}')}`);
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
