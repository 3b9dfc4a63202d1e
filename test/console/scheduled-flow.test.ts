/**
 * Scheduled and recurring flows in the console (issue 26), in Debian's Chromium: New flow → Scheduled → a
 * segment and a time → save, start, and watch its occurrence go to done; New flow → Recurring → every
 * Monday at 09:00 in each contact's time, saved as such, edited without losing what the form does not show.
 * Screenshot: docs/console/flow-scheduled.png.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { ADMIN_KEY, startTestApp } from '../helpers/app.js';
import { launchChromium, signIn, watchPage } from '../helpers/browser.js';
import { putQuery } from '../helpers/flows.js';
import { ROOT } from '../helpers/paths.js';

const SHOTS = join(ROOT, 'docs/console/');

t.test('a scheduled send and a recurring one, made and watched in the console', async (t) => {
  const browser = await launchChromium(t);
  const h = await startTestApp(t);
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  await h.createOrg('acme');
  const imported = await h.app.inject({
    method: 'POST',
    url: '/admin/v1/orgs/acme/contacts/import',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/x-ndjson' },
    payload: ['ada', 'bob', 'cy'].map((name) => JSON.stringify({ email_address: `${name}@example.com`, first_name: name })).join('\n'),
  });
  t.equal(imported.statusCode, 200);
  await putQuery(h, 'segments', 'everyone', "SELECT email_address AS email FROM profiles WHERE email_address LIKE '%@example.com'");

  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const { problems, elsewhere } = watchPage(page, url);
  await signIn(page, url, ADMIN_KEY);
  await page.goto(`${url}/console/#/orgs/acme/flows/new`);

  // Scheduled: this minute in the org's zone (UTC), so it is sent as soon as it starts.
  await page.getByRole('button', { name: /^Scheduled/ }).click();
  await page.getByLabel('Name', { exact: true }).fill('Launch');
  await page.getByLabel('Id', { exact: true }).fill('launch');
  t.equal(await page.getByLabel('Audience segment').inputValue(), 'everyone', 'the live segment offered');
  await page.getByLabel('Send at').fill(new Date().toISOString().slice(0, 16));
  await page.getByRole('button', { name: 'Save as draft' }).click();
  await page.getByRole('heading', { name: 'Launch' }).waitFor();
  t.match(await page.locator('section[aria-labelledby="flow-title"] p').first().textContent(), /to segment everyone, once at \d{4}-\d{2}-\d{2} \d{2}:\d{2}, the org's time/, 'the flow says whom and when');
  t.equal(await page.getByRole('button', { name: 'Run now' }).count(), 0, 'no Run now: it sends at its time');
  await page.getByRole('button', { name: 'Start' }).click();
  await page.getByRole('button', { name: 'Pause' }).waitFor();
  const done = page.locator('[data-occurrence][data-status="done"]');
  for (let tries = 0; tries < 50 && (await done.count()) === 0; tries++) {
    await page.getByRole('region', { name: 'Occurrences' }).getByRole('button', { name: 'Refresh' }).click().catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  t.match(await done.textContent(), /done.*3 \/ 3.*3 sent/s, 'its occurrence: all three decided and sent');
  // The whole page again (its sends and results too), for the picture.
  await page.reload();
  await page.locator('[data-send="cy@example.com"]').waitFor();
  await page.locator('[data-occurrence][data-status="done"]').waitFor();
  await page.screenshot({ path: join(SHOTS, 'flow-scheduled.png'), fullPage: true });
  const outbox = (await readFile(join(h.dataDir, 'outbox', 'acme.jsonl'), 'utf8').catch(() => '')).trim().split('\n').filter(Boolean);
  t.equal(outbox.length, 3, 'three messages');

  // Recurring: every Monday at 09:00 where each contact is.
  await page.goto(`${url}/console/#/orgs/acme/flows/new`);
  await page.getByRole('button', { name: /^Recurring/ }).click();
  await page.getByLabel('Id', { exact: true }).fill('weekly');
  await page.getByLabel('On', { exact: true }).selectOption('monday');
  await page.getByLabel('At', { exact: true }).fill('09:00');
  await page.getByLabel("Each contact's time").check();
  await page.getByLabel('At most (contacts a second)').fill('20');
  await page.getByRole('button', { name: 'Save as draft' }).click();
  await page.getByRole('heading', { name: 'Weekly newsletter', exact: true }).waitFor();
  const saved = (await h.admin('GET', '/admin/v1/orgs/acme/flows/weekly')).json().definition;
  t.match(saved, { category: 'recurring', audience: { segment: 'everyone' }, schedule: { every: 'week', weekday: 'monday', time: '09:00', timeZone: 'contact' }, sendRatePerSecond: 20 });

  // What the form does not show (an experiment set through the API) survives an edit in it.
  t.equal((await h.admin('PUT', '/admin/v1/orgs/acme/flows/weekly', { ...saved, experiment: { variants: [{ label: 'A', weight: 1 }, { label: 'H', weight: 1, holdout: true }] } })).statusCode, 200);
  await page.goto(`${url}/console/#/orgs/acme/flows/weekly/edit`);
  await page.getByLabel('At most (contacts a second)').fill('30');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByRole('heading', { name: 'Weekly newsletter', exact: true }).waitFor();
  const edited = (await h.admin('GET', '/admin/v1/orgs/acme/flows/weekly')).json().definition;
  t.match(edited, { sendRatePerSecond: 30, schedule: { weekday: 'monday', timeZone: 'contact' } });
  t.equal(edited.experiment?.variants.length, 2, 'the experiment kept');

  t.same(elsewhere, [], 'no request leaves the service');
  t.same(problems, [], 'no script error');
});
