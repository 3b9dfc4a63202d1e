/**
 * A flow with steps in the console (issue 26), in Debian's Chromium: New flow → Triggered → a trigger →
 * Steps → the JSON of a wait-unless-bought journey → saved, started; a contact's cart enters them and the
 * flow's page lists the steps and the entry waiting, found by the contact; Test with a contact says where
 * an entry would wait; a mistake in the JSON is refused with the path that is wrong.
 * Screenshot: docs/console/flow-steps.png.
 */
import { join } from 'node:path';
import t from 'tap';
import { ADMIN_KEY, customEvent, startTestApp } from '../helpers/app.js';
import { launchChromium, signIn, watchPage } from '../helpers/browser.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../helpers/flows.js';
import { ROOT } from '../helpers/paths.js';

const SHOTS = join(ROOT, 'docs/console/');
const CART_TRIGGER = `SELECT identity, identity_type, ts, event_type, event_id, event_raw
FROM event_triggers
WHERE event_type = 'custom_cart_updated'
  AND ts > {cursor_start_time} AND ts <= {cursor_end_time}`;

t.test('a flow with steps, written, started and watched in the console', async (t) => {
  const browser = await launchChromium(t);
  const h = await startTestApp(t);
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const cred = (await h.createOrg('acme')).production;
  await putQuery(h, 'triggers', 'cart_updated', CART_TRIGGER);

  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const { problems, elsewhere } = watchPage(page, url, /status of 422/);
  await signIn(page, url, ADMIN_KEY);
  await page.goto(`${url}/console/#/orgs/acme/flows/new`);
  await page.getByRole('button', { name: /^Triggered/ }).click();
  await page.getByRole('button', { name: /When a contact triggers an event/ }).click();
  await page.getByLabel('cart_updated').check();
  await page.getByRole('button', { name: /^Steps/ }).click();
  const steps = page.getByLabel(/Steps and exit/);
  t.match(await steps.inputValue(), /"waitUntil"/, 'a journey to start from');

  // A wrong event name: the service's reason, with where.
  await steps.fill(JSON.stringify({ steps: [{ waitUntil: { event: 'no_such_trigger', timeoutSeconds: 3600 }, then: 'exit' }, { message: { channel: 'outbox', template: { text: 'x' } } }] }));
  await page.getByRole('button', { name: 'Create draft' }).click();
  await page.getByText(/\/steps\/0\/waitUntil\/event: no_such_trigger is neither/).waitFor();
  t.pass('refused with the path');

  await steps.fill(
    JSON.stringify({
      steps: [
        { waitUntil: { event: 'custom_order_completed', timeoutSeconds: 3600 }, then: 'exit' },
        { message: { channel: 'outbox', template: { text: 'You left something', to: '{{ contact.email_address }}' } } },
      ],
      exit: { event: 'custom_order_completed' },
    }),
  );
  // Runs when asked below (Run now), so the test first sees where an entry would wait.
  await page.getByLabel('Real time (run as soon as new events are stored)').uncheck();
  await page.getByRole('button', { name: 'Create draft' }).click();
  await page.getByRole('heading', { name: 'cart updated journey' }).waitFor();
  const saved = (await h.admin('GET', '/admin/v1/orgs/acme/flows/cart-updated-journey')).json().definition;
  t.match(saved, { realTime: false, trigger: 'cart_updated', steps: [{ then: 'exit' }, { message: { channel: 'outbox' } }], exit: { event: 'custom_order_completed' } });
  t.notOk('message' in saved, 'no message beside the steps');
  const listed = page.getByRole('list', { name: 'Steps of the flow' });
  t.match(await listed.textContent(), /wait until custom_order_completed \(at most 1 h\); if it comes: exit.*send an outbox message/);
  await page.getByRole('button', { name: 'Start' }).click();
  await page.getByRole('button', { name: 'Pause' }).waitFor();

  t.equal((await h.collect(customEvent(cred, { messageId: 'cart-ada', traits: { email: 'ada@example.com' }, properties: { eventName: 'cart_updated', properties: {} } }))).statusCode, 200);
  await h.compacted();
  // Test with a contact: where ada's entry would wait.
  await page.getByLabel('Contact (e-mail, or user_id:…)').fill('ada@example.com');
  await page.getByRole('button', { name: 'Test', exact: true }).click();
  await page.getByText(/enters the steps: waits in step 1 until .* or custom_order_completed/).waitFor();
  t.pass('the simulation names the step and the event');

  await runFlow(h, 'cart-updated-journey');
  await h.app.flowsRole!.steps.pass('acme');
  await page.getByLabel(/Entries of a contact/).fill('ada@example.com');
  await page.getByRole('button', { name: 'Show entries' }).click();
  const entries = page.getByRole('table', { name: 'Entries in the steps' });
  await entries.waitFor();
  t.match(await entries.textContent(), /1 entry in the steps.*ada@example\.com.*1\. wait until custom_order_completed.*or custom_order_completed/s);
  await page.screenshot({ path: join(SHOTS, 'flow-steps.png'), fullPage: true });
  await page.getByLabel(/Entries of a contact/).fill('bob@example.com');
  await page.getByRole('button', { name: 'Show entries' }).click();
  await page.getByText('email:bob@example.com has no entry in the steps now.').waitFor();
  t.pass('another contact has none');

  // Editing keeps the steps (the single-message form would drop them).
  await page.goto(`${url}/console/#/orgs/acme/flows/cart-updated-journey/edit`);
  t.match(await page.getByLabel(/Steps and exit/).inputValue(), /custom_order_completed/);
  t.same(elsewhere, [], 'no request leaves the service');
  t.same(problems, [], 'no script error');
});

t.test("a live flow's page follows its runs: last run and cursor without a reload", async (t) => {
  const browser = await launchChromium(t);
  const h = await startTestApp(t);
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const cred = (await h.createOrg('acme')).production;
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  await startFlow(h, { id: 'live', realTime: true, message: { channel: 'outbox', template: { text: 'hi' } } });

  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const { problems, elsewhere } = watchPage(page, url);
  await signIn(page, url, ADMIN_KEY);
  await page.goto(`${url}/console/#/orgs/acme/flows/live`);
  const summary = page.locator('section[aria-labelledby="flow-title"] p').first();
  await summary.getByText(/last run\s*—/).waitFor();
  t.pass('never run yet');

  // Events arrive; the flow runs in the background; the page, left alone, shows it.
  t.equal((await h.collect(customEvent(cred, { messageId: 'b-1', traits: { email: 'ada@example.com' } }))).statusCode, 200);
  await h.compacted();
  await summary.getByText(/last run\s*\d/).waitFor({ timeout: 15_000 });
  t.pass('its last run, read again while the page stayed open');
  t.same(problems, []);
  t.same(elsewhere, []);
});
