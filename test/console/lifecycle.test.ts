/**
 * Deleting in the console (issue 40), in Debian's Chromium: a trigger a flow names is refused with the
 * flow named; the flow is deleted (archived) from its page and shown under "Deleted flows"; then the
 * trigger is deleted from its editor and leaves the list. Topics on the settings page: added, changed,
 * refused while a flow names one, deleted once none does.
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

t.test('topics added, changed and deleted on the settings page', async (t) => {
  const browser = await launchChromium(t);
  const h = await startTestApp(t);
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  await h.createOrg('acme');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const { problems, elsewhere } = watchPage(page, url, /status of 409/);
  page.on('dialog', (dialog) => void dialog.accept());
  await signIn(page, url, ADMIN_KEY);
  await page.goto(`${url}/console/#/orgs/acme/settings`);
  const topics = page.getByRole('table', { name: 'Topics' });
  await topics.locator('[data-topic="all"]').waitFor();
  t.equal(await topics.getByRole('button', { name: 'Delete topic all' }).count(), 0, 'all cannot be deleted');

  const form = page.getByRole('form', { name: 'Add or change a topic' });
  await form.getByLabel('Topic').fill('news');
  await form.getByLabel('Name').fill('Newsletter');
  await form.getByLabel('Default').selectOption('unsubscribed');
  await form.getByRole('button', { name: 'Save topic' }).click();
  await topics.locator('[data-topic="news"]').getByText('unsubscribed (opt-in)').waitFor();
  t.match((await h.admin('GET', '/admin/v1/orgs/acme/topics')).json().topics, [{ topic: 'all' }, { topic: 'news', name: 'Newsletter', default: 'unsubscribed' }], 'created as an opt-in topic');
  await topics.getByRole('button', { name: 'Change topic news' }).click();
  t.equal(await form.getByLabel('Name').inputValue(), 'Newsletter', 'Change fills the form');
  await form.getByLabel('Name').fill('Weekly news');
  await form.getByRole('button', { name: 'Save topic' }).click();
  await topics.locator('[data-topic="news"]').getByText('Weekly news').waitFor();

  // A flow names it: refused, the flow named; archived, the topic goes.
  await startFlow(h, { id: 'digest', name: 'Digest', topic: 'news', message: { channel: 'outbox', template: { text: 'hi' } } });
  await topics.getByRole('button', { name: 'Delete topic news' }).click();
  t.match(await page.getByRole('alert').textContent(), /flows name topic news: digest.*topic_in_use/s, 'refused, naming the flow');
  t.equal((await h.admin('DELETE', '/admin/v1/orgs/acme/flows/digest')).statusCode, 200);
  await topics.getByRole('button', { name: 'Delete topic news' }).click();
  await topics.locator('[data-topic="news"]').waitFor({ state: 'detached' });
  t.same((await h.admin('GET', '/admin/v1/orgs/acme/topics')).json().topics.map((x: { topic: string }) => x.topic), ['all'], 'deleted');

  t.same(elsewhere, [], 'no request leaves the service');
  t.same(problems, [], 'no script error');
});
