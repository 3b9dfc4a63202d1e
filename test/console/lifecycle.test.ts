/**
 * Deleting in the console (issue 40), in Debian's Chromium: a trigger a flow names is refused with the
 * flow named; the flow is deleted (archived) from its page and shown under "Deleted flows"; then the
 * trigger is deleted from its editor and leaves the list.
 */
import t from 'tap';
import { ADMIN_KEY, startTestApp } from '../helpers/app.js';
import { launchChromium, signIn, watchPage } from '../helpers/browser.js';
import { BOOKING_TRIGGER, putQuery, startFlow } from '../helpers/flows.js';

t.test('a flow and then its trigger deleted from the console', async (t) => {
  const browser = await launchChromium(t);
  const h = await startTestApp(t);
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  await h.createOrg('acme');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  await startFlow(h, { id: 'welcome', name: 'Welcome', message: { channel: 'outbox', template: { text: 'hi' } } });

  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  // The refused delete answers 409, which the browser reports as a failed resource.
  const { problems, elsewhere } = watchPage(page, url, /status of 409/);
  page.on('dialog', (dialog) => void dialog.accept());
  await signIn(page, url, ADMIN_KEY);

  // The trigger first: refused, the flow that names it named.
  await page.goto(`${url}/console/#/orgs/acme/triggers/booking_completed`);
  await page.getByRole('button', { name: 'Delete' }).click();
  t.match(await page.getByRole('alert').textContent(), /flows name trigger booking_completed: welcome.*trigger_in_use/s, 'refused, naming the flow');

  // The flow: deleted from its page, archived, gone from the list, under "Deleted flows".
  await page.goto(`${url}/console/#/orgs/acme/flows/welcome`);
  await page.getByRole('button', { name: 'Delete' }).click();
  await page.getByText('This flow was deleted').waitFor();
  t.match(await page.locator('[data-said]').textContent(), /Deleted \(archived\): 0 sends cancelled, 0 waiting entries/);
  t.equal(await page.getByRole('button', { name: 'Start' }).count(), 0, 'no action left on it');
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/flows/welcome')).json().status, 'archived');
  await page.goto(`${url}/console/#/orgs/acme/flows`);
  await page.getByText('No flow yet').waitFor();
  await page.getByLabel('Deleted flows').check();
  await page.getByRole('link', { name: 'Welcome' }).waitFor();

  // Now the trigger goes: the editor leads back to the list, which no longer has it.
  await page.goto(`${url}/console/#/orgs/acme/triggers/booking_completed`);
  await page.getByRole('button', { name: 'Delete' }).click();
  await page.waitForURL(/#\/orgs\/acme\/triggers$/);
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/triggers/booking_completed')).statusCode, 404, 'deleted');
  t.equal(await page.getByRole('link', { name: 'booking_completed' }).count(), 0, 'not listed');

  t.same(elsewhere, [], 'no request leaves the service');
  t.same(problems, [], 'no script error');
});
