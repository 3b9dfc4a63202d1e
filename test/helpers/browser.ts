/** Debian's Chromium, headless through playwright-core (.ci/run installs the package when it is missing). */
import { existsSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';
import type { Test } from 'tap';

export const CHROMIUM = '/usr/bin/chromium';

/** Asserts that Chromium is installed, launches it, and closes it at the test's end. */
export async function launchChromium(t: Test): Promise<Browser> {
  t.ok(existsSync(CHROMIUM), `${CHROMIUM} is installed (apt-get install -y chromium)`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  t.teardown(() => browser.close());
  return browser;
}

/**
 * What a page must never do, collected as it happens: script errors and console errors (`problems`;
 * console messages matching `expectedConsole` are left out) and requests to any host but the service
 * at `serviceUrl` (`elsewhere`).
 */
export function watchPage(page: Page, serviceUrl: string, expectedConsole?: RegExp): { problems: string[]; elsewhere: string[] } {
  const problems: string[] = [];
  const elsewhere: string[] = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && !expectedConsole?.test(message.text())) problems.push(`console: ${message.text()}`);
  });
  page.on('request', (request) => {
    if (!request.url().startsWith(serviceUrl) && !request.url().startsWith('data:')) elsewhere.push(request.url());
  });
  return { problems, elsewhere };
}

/** Opens the console at `serviceUrl` and signs in with the test admin key; resolves on the orgs page. */
export async function signIn(page: Page, serviceUrl: string, adminKey: string): Promise<void> {
  await page.goto(`${serviceUrl}/console`);
  await page.getByLabel('Admin key').fill(adminKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Orgs' }).waitFor();
}
