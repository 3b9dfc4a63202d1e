/**
 * A tracking plan in the console (issue 42): on the Events page, a custom type's Plan opens its editor, a
 * draft comes from the stored events, saving makes version 1, and a violation shows in the types table and
 * in the plan's counts per reason. Debian's Chromium through playwright-core.
 */
import { join } from 'node:path';
import t from 'tap';
import { ADMIN_KEY, customEvent, startTestApp } from '../helpers/app.js';
import { launchChromium, signIn, watchPage } from '../helpers/browser.js';
import { ROOT } from '../helpers/paths.js';

t.test('a plan drafted from events, saved, and its violations shown', async (t) => {
  const browser = await launchChromium(t);
  const h = await startTestApp(t);
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const creds = (await h.createOrg('acme')).production;
  for (let i = 0; i < 6; i++) t.equal((await h.collect(customEvent(creds, { messageId: `b-${i}`, properties: { eventName: 'booking_completed', properties: { city: ['Lisbon', 'Porto'][i % 2], nights: i + 1 } } }))).statusCode, 200);
  await h.compacted();

  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  // The browser reports every 4xx on its own: no plan yet (404), a refused schema (422); the page shows those.
  const { problems, elsewhere } = watchPage(page, url, /Failed to load resource: .* status of (404|422)/);
  await signIn(page, url, ADMIN_KEY);
  await page.goto(`${url}/console#/orgs/acme`);
  const row = page.locator('[data-event-type="custom_booking_completed"]');
  await row.waitFor();
  t.match(await row.locator('[data-violations]').textContent(), /^0$/, 'no violation yet');
  await row.getByRole('button', { name: 'Plan' }).click();
  const plan = page.locator('[data-plan="custom_booking_completed"]');
  await plan.getByText('No plan: any properties are stored.').waitFor();
  await plan.getByRole('button', { name: 'Draft from events' }).click();
  await plan.getByText('A draft from the newest 6 stored events').waitFor();
  const draft = JSON.parse(await plan.getByLabel("JSON Schema of the event's own properties").inputValue());
  t.same(draft.required, ['city', 'nights'], 'the draft requires what every event carried');
  t.equal(draft.properties.nights.type, 'integer', 'and types it');
  await plan.getByRole('button', { name: 'Save plan' }).click();
  await plan.getByText('Version 1 is in force').waitFor();
  t.same((await h.admin('GET', '/admin/v1/orgs/acme/events/plans/custom_booking_completed')).json().plan.schema, draft, 'saved as drafted');

  // A booking without nights: stored (observe), counted, shown.
  t.equal((await h.collect(customEvent(creds, { messageId: 'b-bad', properties: { eventName: 'booking_completed', properties: { city: 'Faro' } } }))).statusCode, 200);
  await h.compacted();
  await page.reload();
  await row.waitFor();
  t.match(await row.locator('[data-violations]').textContent(), /^1$/, 'the types table counts it');
  await row.getByRole('button', { name: 'Plan' }).click();
  await plan.getByRole('table', { name: 'Violations per reason' }).waitFor();
  t.match(await plan.getByRole('table', { name: 'Violations per reason' }).textContent(), /\/properties required must have required property 'nights'\s*1/, 'the reason, counted');
  t.match(await plan.textContent(), /b-bad \(stored\)/, 'the newest violating event');
  await page.screenshot({ path: join(ROOT, 'docs/console/plans.png'), fullPage: true });

  // A schema the service refuses: the reason on the page, the plan unchanged.
  await plan.getByLabel("JSON Schema of the event's own properties").fill('{ "$ref": "https://evil.example/s.json" }');
  await plan.getByRole('button', { name: 'Save plan' }).click();
  await plan.getByText(/points outside the schema/).waitFor();
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/events/plans/custom_booking_completed')).json().plan.version, 1, 'version 1 still in force');
  t.same(problems, [], 'no script error');
  t.same(elsewhere, [], 'nothing loaded from elsewhere');
});
