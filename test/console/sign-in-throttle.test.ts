/**
 * The console's sign-in after too many wrong admin keys, in Debian's Chromium: the 429 is shown as
 * "too many failed attempts, try again in N s", the button waits out N seconds, and then the right
 * key signs in.
 */
import t from 'tap';
import { ManualClock } from '../../src/core/context.js';
import { ADMIN_AUTH_POLICY } from '../../src/ratelimit/policies.js';
import { ADMIN_KEY, startTestApp } from '../helpers/app.js';
import { launchChromium, watchPage } from '../helpers/browser.js';

t.test('sign-in: too many wrong keys are said so, with the wait, and the right key works after it', async (t) => {
  const browser = await launchChromium(t);
  // The service's clock stands still, so the wait is exactly the one announced, however slow the browser.
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const h = await startTestApp(t, { clock });
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const page = await browser.newPage();
  const { problems, elsewhere } = watchPage(page, url, /Failed to load resource: .* status of 4\d\d/);

  // Someone at the same address has used up its budget of wrong keys.
  for (let i = 0; i < ADMIN_AUTH_POLICY.burst; i++) {
    const res = await fetch(`${url}/admin/v1/orgs`, { headers: { authorization: `Bearer guess-${i}` } });
    t.equal(res.status, 401, `wrong key ${i + 1}`);
  }

  await page.goto(`${url}/console`);
  await page.getByLabel('Admin key').fill(ADMIN_KEY);
  await page.getByRole('button', { name: 'Sign in' }).click();
  const alert = page.getByRole('alert');
  await alert.filter({ hasText: /Too many failed attempts: try again in 1 s/ }).waitFor();
  t.ok(await page.getByRole('button', { name: 'Sign in' }).isDisabled(), 'the button waits while the service would refuse');
  t.equal(await page.getByRole('heading', { name: 'Orgs' }).count(), 0, 'not signed in');

  clock.advance(1000);
  await alert.filter({ hasText: 'you can try again now' }).waitFor();
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Orgs' }).waitFor();
  t.pass('signed in with the right key once the wait was over');
  t.same(problems, [], 'no script or console error');
  t.same(elsewhere, [], 'no request to another host');
});
