/**
 * The console in Debian's Chromium, as a data engineer uses it: sign in (a wrong key first), create an
 * org and copy its credentials, send a first event with the empty Events page's request and one with
 * Segment's SDK and see both arrive on the activity chart without a reload, send sample events (one held
 * for an identity until it comes), see their type and samples, start a trigger from
 * the type, preview it and save it, make a segment, build a flow through Triggered → When a contact
 * triggers an event → Configure Event Trigger with an experiment and a segment exclusion, start it, and
 * see its funnel, its sends and why an excluded contact was not messaged; then every page at 390 px.
 * Screenshots of each page go to docs/console/.
 * Lists longer than a page show the rest with "Load more".
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, symlinkSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Analytics } from '@segment/analytics-node';
import type { Page } from 'playwright-core';
import t, { type Test } from 'tap';
import { ADMIN_KEY, customEvent, startTestApp } from '../helpers/app.js';
import { launchChromium, signIn, watchPage } from '../helpers/browser.js';
import { ROOT } from '../helpers/paths.js';

const SHOTS = join(ROOT, 'docs/console/');

t.test('from sample events to a saved trigger in the console', async (t) => {
  const browser = await launchChromium(t);
  const h = await startTestApp(t);
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  // The browser reports every 4xx on its own (a refused sign-in, a refused trigger): the page shows
  // those, and the test checks it does. Anything else is a fault.
  const { problems, elsewhere } = watchPage(page, url, /Failed to load resource: .* status of 4\d\d/);
  mkdirSync(SHOTS, { recursive: true });
  // Each page photographed is also checked: every form control has a label (or an aria-label) to be found by.
  const shot = async (name: string) => {
    await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
    const unlabelled = await page.$$eval('input, select, textarea, button', (controls) =>
      controls
        .filter((c) => !((c as HTMLInputElement).labels?.length || c.getAttribute('aria-label') || (c.tagName === 'BUTTON' && c.textContent?.trim())))
        .map((c) => c.outerHTML.slice(0, 100)),
    );
    for (const control of unlabelled) problems.push(`${name}: a control without a label: ${control}`);
  };

  // Sign in: a wrong key is said so, the right one opens the orgs.
  await page.goto(`${url}/console`);
  await page.getByLabel('Admin key').fill('not-the-admin-key');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').filter({ hasText: 'not accepted' }).waitFor();
  await shot('sign-in');
  await page.getByLabel('Admin key').fill(ADMIN_KEY);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Orgs' }).waitFor();
  t.pass('signed in');

  // A new org: its credentials are shown once.
  await page.getByLabel('Slug').fill('acme');
  await page.getByLabel('Name').fill('Acme Travel');
  await page.getByRole('button', { name: 'Create org' }).click();
  await page.getByRole('region', { name: /Partner credentials of Acme Travel/ }).waitFor();
  const partnerId = (await page.textContent('[data-credential="production-id"]'))!;
  const partnerSecret = (await page.textContent('[data-credential="production-secret"]'))!;
  t.match(partnerSecret, /^ps_/, 'the production secret is on the page');
  const writeKey = (await page.textContent('[data-credential="production-write-key"]'))!;
  t.match(writeKey, /^wk_/, 'and the write key');
  const stagingSecret = (await page.textContent('[data-credential="staging-secret"]'))!;
  const stagingWriteKey = (await page.textContent('[data-credential="staging-write-key"]'))!;
  await shot('org-created');
  await page.getByRole('button', { name: 'I have copied them' }).click();
  t.equal(await page.locator('[data-credential]').count(), 0, 'and gone once acknowledged');

  // The empty Events page teaches the first event: the request, this org's partner id in it. Run as shown
  // (with the staging secret, so production's counts below stay the partner's), it sends one.
  await page.getByRole('link', { name: 'Acme Travel' }).click();
  await page.getByLabel('Environment').selectOption('staging');
  const teaching = page.locator('[data-first-event] pre');
  await teaching.getByText(/"partnerId":"pk_/).waitFor();
  const snippet = (await teaching.textContent())!;
  t.notOk(snippet.includes(partnerId), "staging's partner id, not production's");
  await shot('events-empty');
  // Not execFileSync: the service answering curl runs in this process.
  const { stdout: firstEvent } = await promisify(execFile)('bash', ['-c', snippet.replace(/^PARTNER_SECRET=.*$/m, `PARTNER_SECRET='${stagingSecret}'`)], { encoding: 'utf8' });
  t.match(firstEvent, /^\{"messageId":"[0-9a-f-]{36}"\}$/, 'the snippet, run as shown, is accepted');
  // No reload, no button: the activity is read again every few seconds, and the types table follows it.
  const perType = page.locator('[data-chart="events-per-type"] svg[aria-description]');
  await perType.waitFor();
  t.match(await perType.getAttribute('aria-description'), /totals custom_booking_completed: 1$/, 'the event arrives on the chart');
  await page.locator('[data-event-type="custom_booking_completed"]').waitFor();
  t.pass('and in the types table');
  await shot('events-first');
  // Then a partner's SDK, pointed at the service with the write key: its event joins the chart as it arrives.
  const analytics = new Analytics({ writeKey: stagingWriteKey, host: url, flushAt: 1 });
  analytics.track({ userId: 'u-1', event: 'Booking Completed', properties: { city: 'Porto' }, context: { traits: { email: 'ada@example.com' } } });
  await analytics.closeAndFlush();
  await page.waitForFunction(() => /custom_booking_completed: 2$/.test(document.querySelector('[data-chart="events-per-type"] svg[aria-description]')?.getAttribute('aria-description') ?? ''));
  t.pass("the SDK's event on the chart, without a reload");
  await page.getByLabel('Environment').selectOption('production');
  await page.getByRole('link', { name: 'Orgs' }).click();

  // Sample events, as a partner sends them; one of them rejected.
  for (const [i, email] of ['ada@example.com', 'bob@example.com', 'cy@example.com'].entries()) {
    const event = customEvent({ partnerId, partnerSecret }, { messageId: `booking-${i}`, traits: { email }, properties: { eventName: 'booking_completed', properties: { city: 'Lisbon', nights: 2 + i } } });
    t.equal((await h.collect(event)).statusCode, 200);
  }
  t.equal((await h.collect(customEvent({ partnerId, partnerSecret }, { type: 'bogus' }))).statusCode, 412);
  // A visitor not identified yet: accepted, held until an identify names its clientId.
  const visit = customEvent({ partnerId, partnerSecret }, { messageId: 'visit-1', clientId: 'visitor-9', traits: {}, properties: { eventName: 'page_viewed', properties: {} } });
  t.equal((await h.collect(visit)).statusCode, 200);
  await h.compacted();

  // Events: the type with its count and properties, samples, the quarantine.
  await page.getByRole('link', { name: 'Acme Travel' }).click();
  const row = page.locator('[data-event-type="custom_booking_completed"]');
  await row.waitFor();
  t.match(await row.textContent(), /custom_booking_completed\s*3/, 'the event type and its count');
  t.match(await row.textContent(), /nights: (number|integer|bigint|ubigint)/, 'its property keys with their types');
  await row.getByRole('button', { name: 'Samples' }).click();
  await page.getByRole('heading', { name: /Samples of/ }).waitFor();
  t.match(await page.textContent('pre.json'), /"eventName": "booking_completed"/, 'a sample as received');
  t.match(await page.textContent('#quarantine-title + *, section[aria-labelledby="quarantine-title"]'), /schema_violation/, 'the quarantine with its reason');
  t.match(await perType.getAttribute('aria-description'), /totals custom_booking_completed: 3$/, 'the chart per type: the three bookings');
  t.match(await page.locator('[data-chart="collect-rate"] svg[aria-description]').getAttribute('aria-description'), /totals stored: 3; quarantined: 1$/, 'collected against quarantined');
  const held = page.locator('[data-held-count]');
  t.match(await held.textContent(), /^1 accepted production event without an e-mail waits for an identify/, 'the visitor held for an identity');
  t.match(await page.locator('[data-held] tbody tr').textContent(), /custom_page_viewed\s*visitor-9\s*visit-1/, 'with its type, clientId and id');
  await shot('events');
  // The visitor identifies: its event is stored and no longer held, without a reload.
  const identify = { ...customEvent({ partnerId, partnerSecret }, { messageId: 'identify-9', clientId: 'visitor-9', traits: { email: 'dee@example.com' } }), type: 'identify', event: undefined, properties: undefined };
  t.equal((await h.collect(identify)).statusCode, 200);
  await page.getByText('No production event is waiting for an identify.').waitFor();
  await page.locator('[data-event-type="custom_page_viewed"]').waitFor();
  t.pass('released: stored, and listed among the types');

  // A trigger from the event type: prefilled, previewed, saved.
  await row.getByRole('link', { name: 'New trigger from this event type' }).click();
  await page.getByRole('heading', { name: 'New trigger' }).waitFor();
  t.equal(await page.getByLabel('Name').inputValue(), 'booking_completed', 'named after the event type');
  t.match(await page.textContent('.cm-content'), /event_type = 'custom_booking_completed'/, 'the reference query for the type');
  await page.getByRole('button', { name: 'Validate' }).click();
  await page.getByRole('status').filter({ hasText: 'Valid: the SQL passes' }).waitFor();
  await page.getByRole('button', { name: 'Preview', exact: true }).click();
  await page.getByRole('heading', { name: /^3 rows from/ }).waitFor();
  t.equal(await page.locator('table.preview tbody tr').count(), 3, 'the three events in the preview');
  // At 1280×800 the results start below the editor: they are brought into view.
  await page.waitForFunction(() => {
    const box = document.querySelector('section[aria-labelledby="preview-title"]')!.getBoundingClientRect();
    return box.top >= 0 && box.top < window.innerHeight;
  });
  t.pass('the preview results in view without scrolling');
  await shot('trigger-preview');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('heading', { name: 'Trigger booking_completed' }).waitFor();
  await page.getByText(/v1 live, hash/).waitFor();
  t.pass('saved: v1 live');

  // A change to the live trigger is compared with it before it is saved: cy would no longer be messaged.
  await page.locator('.cm-content').click();
  await page.keyboard.press('Control+End');
  await page.keyboard.type(' AND length(identity) = 15');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('heading', { name: /^Against live v1: 0 added, 1 removed, 2 unchanged/ }).waitFor();
  t.equal(await page.locator('[data-removed]').getAttribute('data-removed'), 'cy@example.com', 'the contact the change removes');
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/triggers/booking_completed')).json().latestVersion, 1, 'nothing saved before the comparison was seen');
  t.ok(await page.getByRole('button', { name: 'Save: make this live' }).isVisible(), 'Save again makes it live');
  await shot('trigger-diff');

  // A refused version keeps v1 live, and says why.
  await page.locator('.cm-content').click();
  await page.keyboard.press('Control+A');
  await page.keyboard.type('SELECT * FROM other_org.events');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('alert').waitFor();
  t.match(await page.getByRole('alert').textContent(), /invalid_trigger/, 'the refusal and its code');
  // No reload needed: the badge and the versions show the refused version at once.
  await page.getByText(/latest refused: /).waitFor();
  await page.locator('tr[data-version="2"]', { hasText: 'refused' }).waitFor();
  t.pass('the status and the versions are read again after a refused save');
  // The edited SQL is not live: leaving asks first; staying keeps it, leaving goes.
  const asked: string[] = [];
  page.once('dialog', (dialog) => void (asked.push(dialog.message()), dialog.dismiss()));
  await page.getByRole('link', { name: 'Triggers' }).click();
  await page.waitForTimeout(200);
  t.same(asked, ['Leave this page? What you edited is not saved.'], 'a link away asks first');
  t.ok(await page.getByRole('heading', { name: 'Trigger booking_completed' }).isVisible(), 'staying: still the editor');
  t.match(await page.locator('.cm-content').textContent(), /other_org\.events/, 'with the edit kept');
  t.match(page.url(), /#\/orgs\/acme\/triggers\/booking_completed$/, 'and its address');
  // A link planted in QUERIES_DIR is listed as not read, with why.
  symlinkSync(join(h.dataDir, 'webhook.key'), join(h.dataDir, 'queries', 'acme', 'planted.sql'));
  page.once('dialog', (dialog) => void dialog.accept());
  await page.getByRole('link', { name: 'Triggers' }).click();
  const listed = page.locator('[data-query="booking_completed"]');
  await listed.waitFor();
  t.match(await listed.textContent(), /latest refused, previous live.*v1/s, 'the list: v1 still live, the latest refused');
  t.match(await page.locator('[data-query="planted"]').textContent(), /file not read.*QUERIES_DIR\/acme\/planted\.sql is a symbolic link; only regular files are read/s, 'a refused file, and why');
  await shot('triggers');

  // A segment of the contacts not to message.
  await page.getByRole('link', { name: 'Segments' }).click();
  await page.getByText(/^No segment yet\. A segment is a query over profiles/).waitFor();
  await shot('segments-empty');
  await page.getByRole('link', { name: 'New segment' }).click();
  const segmentEditor = await page.locator('form.editor').textContent();
  t.match(segmentEditor, /A segment returns one column, email/, "a segment's editor explains a segment");
  t.notMatch(segmentEditor, /cursor_start_time/, 'not the trigger window');
  t.match(await page.locator('.cm-content').textContent(), /^SELECT email_address AS email FROM profiles/, 'a starting query that runs');
  await page.getByLabel('Name').fill('already_booked');
  await page.locator('.cm-content').click();
  await page.keyboard.press('Control+A');
  await page.keyboard.type("SELECT email_address AS email FROM profiles WHERE email_address = 'bob@example.com'");
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('heading', { name: 'Segment already_booked' }).waitFor();

  // A trait: each contact's bookings, counted in SQL; its values listed once computed.
  await page.getByRole('link', { name: 'Traits' }).click();
  await page.getByText(/^No trait yet\. A trait is a query that returns email, value/).waitFor();
  await page.getByRole('link', { name: 'New trait' }).click();
  t.match(await page.locator('form.editor').textContent(), /A trait returns email, value, one row per contact/, "a trait's editor explains a trait");
  t.match(await page.locator('.cm-content').textContent(), /^SELECT identity AS email, count\(\*\) AS value/, 'a starting query that runs');
  await page.getByLabel('Name').fill('lifetime_bookings');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('heading', { name: 'Trait lifetime_bookings' }).waitFor();
  await page.getByRole('link', { name: 'Traits' }).click();
  let values = '';
  for (let tries = 0; tries < 50 && !/\d+ contacts · v1/.test(values); tries++) {
    if (tries > 0) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      await page.reload();
    }
    values = (await page.locator('[data-query="lifetime_bookings"] .values').textContent()) ?? '';
  }
  t.match(values, /^[1-9]\d* contacts · v1 · /, `the values, once computed: ${values}`);
  await shot('traits');

  // A flow on the product's path: Triggered → When a contact triggers an event → Configure Event Trigger.
  await page.getByRole('link', { name: 'Flows' }).click();
  await page.locator('[data-empty]').getByText(/No flow yet\. A flow messages a contact/).waitFor();
  await shot('flows-empty');
  await page.getByRole('link', { name: 'New flow' }).click();
  t.notOk(await page.getByRole('button', { name: /Scheduled/ }).isDisabled(), 'Scheduled is offered too (test/console/scheduled-flow.test.ts)');
  await page.getByRole('button', { name: /^Triggered/ }).click();
  await page.getByRole('button', { name: /When a contact triggers an event/ }).click();
  await page.getByRole('group', { name: 'Configure Event Trigger' }).getByLabel(/booking_completed/).check();
  await page.getByLabel('Segment', { exact: true }).selectOption('already_booked');
  t.ok(await page.getByLabel('Exclude its members').isChecked(), 'the segment excludes by default');
  await page.getByRole('button', { name: 'Add variant' }).click();
  await page.getByRole('button', { name: 'Add variant' }).click();
  await page.getByRole('button', { name: 'Preview the message' }).click();
  const rendered = page.getByRole('region', { name: 'Message preview' });
  await rendered.locator('pre').waitFor();
  t.match(await rendered.textContent(), /"email": "(ada|bob|cy)@example\.com"[\s\S]*"event": "custom_booking_completed"[\s\S]*"variant": "A"/, 'the message rendered against a real row of the trigger');
  // A branch for long stays: the sample rows (2 to 4 nights) take it; the live bookings below (1 night) do not.
  await page.getByRole('button', { name: 'Add branch' }).click();
  await page.getByLabel('Field').fill('event.properties.nights');
  await page.getByLabel('Value').fill('2');
  await page.getByLabel('Message of branch 1').fill('{ "email": "{{ contact.email_address }}", "long_stay": "{{ event.properties.nights }} nights" }');
  await page.getByRole('button', { name: 'Preview the message' }).click();
  await rendered.getByText('long_stay').waitFor();
  t.match(await rendered.textContent(), /"long_stay": "[234] nights"/, 'the preview picks the branch the row takes');
  // Sending safely: the topic every org has, and a cap of this flow.
  t.equal(await page.getByLabel('Subscription topic').inputValue(), 'all', 'a flow checks consent to all by default');
  await page.getByLabel('Cap this flow per contact').check();
  await page.getByLabel('At most (messages)').fill('5');
  await page.getByLabel('Within (seconds)').fill('3600');
  // A conversion goal: a purchase within a day of entering (issue 26).
  await page.getByLabel('Goal event').fill('custom_purchase');
  await page.getByLabel('Conversion window (seconds)').fill('86400');
  // Runs when asked (Run now below), so the test first sees what it would do: a flow runs in real time by default.
  t.ok(await page.getByLabel('Real time (run as soon as new events are stored)').isChecked(), 'real time by default');
  await page.getByLabel('Real time (run as soon as new events are stored)').uncheck();
  await shot('flow-new');
  await page.getByRole('button', { name: 'Save as draft' }).click();
  await page.getByRole('heading', { name: 'booking completed follow-up' }).waitFor();
  const saved = (await h.admin('GET', '/admin/v1/orgs/acme/flows/booking-completed-follow-up')).json().definition;
  t.match(saved, { realTime: false, frequencyCap: { maxSends: 5, withinSeconds: 3600 }, maxEventAgeSeconds: 86400, goal: { event: 'custom_purchase', withinSeconds: 86400 } }, 'the cap and the goal set in the form are saved');
  t.notOk('topic' in saved, 'topic all is the default, not written');
  await page.getByRole('button', { name: 'Start' }).click();
  await page.getByRole('button', { name: 'Run now' }).waitFor();
  t.pass('the flow is live');

  // Bookings after the start; the flow runs on them.
  for (const [i, email] of ['ada@example.com', 'bob@example.com', 'cy@example.com'].entries()) {
    const event = customEvent({ partnerId, partnerSecret }, { messageId: `live-${i}`, traits: { email }, properties: { eventName: 'booking_completed', properties: { city: 'Porto', nights: 1 } } });
    t.equal((await h.collect(event)).statusCode, 200);
  }
  await h.compacted();
  // Test with a contact: what the flow would do, before it runs (nothing recorded: the run below still sends).
  await page.getByLabel('Contact (e-mail, or user_id:…)').fill('bob@example.com');
  await page.getByRole('button', { name: 'Test', exact: true }).click();
  await page.getByRole('row', { name: /live-1 excluded_by_segment/ }).waitFor();
  t.match(await page.getByRole('row', { name: /booking-1/ }).textContent(), /not_in_a_window/, 'a booking from before the flow went live: no run reads it');
  await page.getByLabel('Contact (e-mail, or user_id:…)').fill('ada@example.com');
  await page.getByRole('button', { name: 'Test', exact: true }).click();
  await page.locator('[data-simulated="sent"]').waitFor();
  t.match(await page.locator('[data-simulated="sent"]').textContent(), /live-0sent(A|B)outbox/, 'the decision, the variant and the message for that contact');
  await shot('flow-simulate');
  await page.getByRole('button', { name: 'Run now' }).click();
  await page.getByRole('status').filter({ hasText: /^Run: 3 rows/ }).waitFor();
  await page.locator('[data-send="cy@example.com"]').waitFor();
  const sent = await page.locator('[data-send]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-send')).sort());
  t.same(sent, ['ada@example.com', 'cy@example.com'], 'sends to the contacts outside the segment');
  t.match(await page.locator('[data-send="ada@example.com"]').textContent(), /^ada@example.com(A|B)/, 'each in a variant');
  // The flow's activity: the funnel and the sends per status, read again while the flow is live.
  await page.locator('[data-flow-totals]').filter({ hasText: '3 trigger rows entered, 2 messages sent and 2 delivered' }).waitFor();
  t.match(await page.locator('[data-counts-what]').textContent(), /count trigger rows.*Results below count contacts/s, 'the page says why the funnel and the results differ');
  t.match(await page.locator('[data-chart="funnel"] svg[aria-description]').getAttribute('aria-description'), /^entered \(trigger rows\): 3; decided to message: 2; messages sent: 2; delivered: 2$/, 'the funnel');
  t.match(await page.locator('[data-skipped]').textContent(), /^excluded_by_segment\s*1$/, 'bob, not messaged, by reason');
  t.match(await page.locator('[data-chart="sends-per-status"] svg[aria-description]').getAttribute('aria-description'), /totals delivered: 2$/, 'sends per status');
  const outbox = async () => (await readFile(join(h.dataDir, 'outbox', 'acme.jsonl'), 'utf8').catch(() => '')).trim().split('\n').filter(Boolean);
  for (let tries = 0; tries < 50 && (await outbox()).length < 2; tries++) await new Promise((resolve) => setTimeout(resolve, 100));
  const delivered = (await outbox()).map((line) => JSON.stringify(JSON.parse(line)));
  t.equal(delivered.length, 2, 'two messages in the outbox');
  t.notOk(delivered.some((line) => line.includes('long_stay')), 'one-night bookings get the flow message, not the branch');
  // Dead letters are a status filter away, however many sends there are.
  await page.getByRole('region', { name: 'Sends', exact: true }).getByLabel('Status').selectOption('dead');
  await page.getByText('No dead send.').waitFor();
  t.equal(await page.locator('[data-send]').count(), 0, 'no dead send: the filter reached the API');
  await page.getByRole('region', { name: 'Sends', exact: true }).getByLabel('Status').selectOption('');
  await page.locator('[data-send="cy@example.com"]').waitFor();
  t.equal(await page.locator('[data-send]').count(), 2, 'both sends again with every status');

  // Why was bob not messaged?
  await page.getByLabel('Contact e-mail').fill('bob@example.com');
  await page.getByRole('button', { name: 'Show decisions' }).click();
  const decision = page.locator('[data-outcome]').first();
  await decision.waitFor();
  t.equal(await decision.getAttribute('data-outcome'), 'excluded_by_segment', 'bob: excluded by the segment');
  t.match(await decision.textContent(), /exclude segment already_booked/, 'and the reason says which');

  // Results: ada buys after entering; the charts are drawn and the table says what the endpoint says.
  const purchase = customEvent({ partnerId, partnerSecret }, { messageId: 'purchase-ada', traits: { email: 'ada@example.com' }, properties: { eventName: 'purchase', properties: {} } });
  t.equal((await h.collect(purchase)).statusCode, 200);
  await h.compacted();
  const resultsRegion = page.getByRole('region', { name: 'Results' });
  await resultsRegion.getByRole('button', { name: 'Refresh' }).click();
  await resultsRegion.locator('[data-chart="rates"] svg').waitFor();
  const results = (await h.admin('GET', '/admin/v1/orgs/acme/flows/booking-completed-follow-up/results')).json() as {
    variants: Array<{ variant: string; entered: number; sent: number; converted: number; rate: number | null }>;
  };
  t.same(results.variants.map((v) => v.entered).reduce((a, b) => a + b), 2, 'ada and cy entered');
  t.same(results.variants.map((v) => v.converted).reduce((a, b) => a + b), 1, 'ada converted');
  await resultsRegion.locator('[data-variant="A"] td').first().waitFor();
  for (const v of results.variants) {
    const cells = await resultsRegion.locator(`[data-variant="${v.variant}"] td`).allTextContents();
    t.same(cells.slice(0, 3), [String(v.entered), String(v.sent), String(v.converted)], `variant ${v.variant}: entered, sent, converted as the endpoint says`);
    t.match(cells[3], v.rate === null ? /^—/ : new RegExp(`^${(v.rate * 100).toFixed(1)} %`), `variant ${v.variant}: its rate`);
  }
  const rateChart = resultsRegion.locator('[data-chart="rates"] svg');
  t.match(await rateChart.getAttribute('aria-label'), /Conversion rate per variant/, 'the rate chart is an SVG with a name');
  t.ok((await rateChart.locator('circle').count()) >= 1, 'a dot per variant with entries');
  t.ok(await resultsRegion.locator('[data-chart="daily"] svg').count(), 'and conversions per day');
  await resultsRegion.screenshot({ path: join(SHOTS, 'flow-results.png') });
  await shot('flow-activity');

  // Editing the saved flow: the form comes back filled in; a change is saved and nothing else is lost.
  await page.getByRole('link', { name: 'Edit' }).click();
  await page.getByRole('heading', { name: 'Edit booking completed follow-up' }).waitFor();
  t.equal(await page.getByLabel('Segment', { exact: true }).inputValue(), 'already_booked', 'the segment filter is filled in');
  t.equal(await page.getByLabel('Field').inputValue(), 'event.properties.nights', 'and the branch');
  await page.getByLabel('Run every (seconds)').fill('120');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByRole('button', { name: 'Run now' }).waitFor();
  const edited = (await (await fetch(`${url}/admin/v1/orgs/acme/flows/booking-completed-follow-up`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })).json()) as {
    definition: { scheduleSeconds: number; branches: unknown[]; experiment: { variants: unknown[] }; segmentFilter: { segment: string } };
    status: string;
  };
  t.match(edited, { status: 'live', definition: { scheduleSeconds: 120, segmentFilter: { segment: 'already_booked' } } }, 'the change saved, the flow still live');
  t.equal(edited.definition.branches.length, 1, 'the branch kept');
  t.equal(edited.definition.experiment.variants.length, 2, 'the variants kept');

  // The trigger's versions: what v1 fired, why v2 was refused.
  await page.goto(`${url}/console/#/orgs/acme/triggers/booking_completed`);
  await page.locator('[data-version="2"]').waitFor();
  t.match(await page.locator('[data-version="1"]').textContent(), /valid.*3 rows, 2 sent/, 'v1 fired three rows, two of them sent');
  t.match(await page.locator('[data-version="2"]').textContent(), /refused/, 'v2 refused, with its reason');

  // The profile as the Audience API returns it, with the variant the flow put the contact in.
  await page.getByRole('link', { name: 'Profiles' }).click();
  await page.getByLabel('Identity').fill('ada@example.com');
  let membership = '';
  const inVariant = /"booking-completed-follow-up-(A|B)"/;
  for (let tries = 0; tries < 50 && !inVariant.test(membership); tries++) {
    await page.getByRole('button', { name: 'Look up' }).click();
    const row = page.locator('[data-field="flow_variant_membership"]');
    await row.waitFor();
    membership = (await row.textContent()) ?? '';
    if (!inVariant.test(membership)) await new Promise((resolve) => setTimeout(resolve, 200));
  }
  t.match(membership, inVariant, `flow_variant_membership names the flow and the variant: ${membership}`);
  t.same(await page.locator('tr.not-content').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-field'))), ['lifetime_bookings', 'timezone'], 'every field of a default profile is a content field by default, but timezone (optional: quiet hours read it); the trait is shown, not served until the org lists it');
  t.match(await page.locator('[data-field="lifetime_bookings"]').textContent(), /lifetime_bookings\s*[1-9]/, "the trait's value in the profile");
  t.match(await page.locator('[data-topic="all"]').textContent(), /allsubscribeddefault/, "the contact's consent to the topic every org has");
  t.match(await page.locator('.freshness').textContent(), /^Newest event in this profile: \d{4}-\d\d-\d\dT[\d:.]+Z · answered at \d{4}-/, 'how fresh the profile is (its meta)');
  await shot('profile-variant');

  // Contacts imported from a file: the refused lines said, an imported column shown greyed (not a content field).
  await page.getByLabel('File', { exact: true }).setInputFiles({ name: 'contacts.csv', mimeType: 'text/csv', buffer: Buffer.from('email_address,first_name,loyalty_tier\ndan@example.com,Dan,gold\nnot-an-email,X,silver\n') });
  await page.getByRole('button', { name: 'Import' }).click();
  const imported = page.getByRole('status').filter({ hasText: 'imported' });
  await imported.waitFor();
  t.match(await imported.textContent(), /1 contact imported, 1 line refused/, 'the counts');
  t.equal(await page.locator('[data-rejected-line]').count(), 1, 'the refused line, with why');
  await page.getByLabel('Identity').fill('dan@example.com');
  await page.getByRole('button', { name: 'Look up' }).click();
  await page.locator('tr.not-content[data-field="loyalty_tier"]').waitFor();
  t.match(await page.locator('[data-field="loyalty_tier"]').textContent(), /"gold"/, 'the imported column, greyed out: not a content field');
  t.match(await page.locator('.freshness').textContent(), /none \(imported only\)/, 'no event in an imported-only profile');
  await shot('profile');

  // Erasing the contact shown: the receipt once done, and the contact is found no more.
  const erase = page.getByRole('button', { name: 'Erase' });
  t.ok(await erase.isDisabled(), 'nothing is erased before the operator says so');
  await page.getByLabel('I want dan@example.com erased').check();
  await erase.click();
  await page.locator('[data-erasure="done"]').waitFor();
  t.match(await page.locator('[data-erasure="done"]').textContent(), /removed .*1 importedContacts/, 'the receipt says what went');
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/contacts?identity=email:dan@example.com')).statusCode, 404, 'the contact is gone');
  await page.getByRole('button', { name: 'Look up' }).click();
  await page.getByRole('alert').filter({ hasText: 'no contact with this identity' }).waitFor();

  // Settings: the Audience API on, a token shown once, a secret rotated.
  page.once('dialog', (dialog) => void dialog.accept());
  await page.getByRole('link', { name: 'Settings' }).click();
  await page.getByLabel('Audience API enabled').check();
  await page.getByRole('checkbox', { name: 'last_seen_at' }).uncheck();
  await page.getByRole('button', { name: 'Add cap' }).click();
  await page.locator('[data-cap="0"]').getByLabel('At most (messages)').fill('10');
  await page.locator('[data-cap="0"]').getByLabel('Channel').selectOption('webhook');
  await page.getByLabel('Quiet hours', { exact: true }).check();
  await page.getByLabel('From').fill('22:30');
  await page.getByLabel('In the time zone').fill('Europe/Lisbon');
  await page.getByRole('button', { name: 'Save settings' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
  const settings = (await h.admin('GET', '/admin/v1/orgs/acme')).json().org;
  t.same(settings.frequencyCaps, [{ maxSends: 10, withinSeconds: 86400, channel: 'webhook' }], 'the org cap set in the console');
  t.same(settings.quietHours, { start: '22:30', end: '08:00', timeZone: 'Europe/Lisbon' }, 'quiet hours set in the console');
  await page.getByLabel('Created by (e-mail)').fill('ops@example.com');
  await page.getByRole('button', { name: 'Create token' }).click();
  const token = (await page.locator('[data-issued-token]').textContent())!;
  const lookup = await fetch(`${url}/audience/v2/contacts?identity=email:ada@example.com`, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
  t.equal(lookup.status, 200, 'the token made in the console works on the Audience API');
  t.notOk('last_seen_at' in ((await lookup.json()) as { contact: object }).contact, 'with the content fields chosen in the console');
  await page.getByRole('button', { name: 'Rotate the production secret' }).click();
  const rotated = (await page.locator('[data-rotated-secret]').textContent())!;
  t.not(rotated, partnerSecret, 'a new secret, shown once');
  t.equal((await h.collect(customEvent({ partnerId, partnerSecret }))).statusCode, 401, 'the old secret stops working');
  t.equal((await h.collect(customEvent({ partnerId, partnerSecret: rotated }))).statusCode, 200, 'the new one works');
  // Write keys: listed by their last 4, rotated (shown once), revoked.
  const track = (key: string) =>
    h.app.inject({ method: 'POST', url: '/v1/track', headers: { authorization: `Basic ${Buffer.from(`${key}:`).toString('base64')}`, 'content-type': 'application/json' }, payload: { anonymousId: 'a', event: 'Clicked' } });
  t.match(await page.locator('[data-write-key="production"]').textContent(), new RegExp(`ends in ${writeKey.slice(-4)}`), 'the write key by its last 4');
  page.once('dialog', (dialog) => void dialog.accept());
  await page.getByRole('button', { name: 'Rotate the production write key' }).click();
  const newKey = (await page.locator('[data-issued-write-key]').textContent())!;
  t.not(newKey, writeKey, 'a new write key, shown once');
  await page.locator('[data-write-key="production"]').filter({ hasText: `ends in ${newKey.slice(-4)}` }).waitFor();
  t.equal((await track(writeKey)).statusCode, 401, 'the old write key stops working');
  t.equal((await track(newKey)).statusCode, 200, 'the new one works');
  await shot('settings');
  page.once('dialog', (dialog) => void dialog.accept());
  await page.locator('[data-write-key="staging"]').getByRole('button', { name: 'Revoke' }).click();
  await page.locator('[data-write-key="staging"]').filter({ hasText: 'none' }).waitFor();
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme')).json().credentials.staging.writeKey, null, 'revoked in the console');

  // Nothing secret outside the tab's session storage; signing out forgets the key.
  t.same(await page.evaluate(() => ({ ...localStorage })), {}, 'nothing in local storage');
  t.notMatch(page.url(), ADMIN_KEY, 'the key is not in the URL');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { name: 'Audience console' }).waitFor();
  t.same(await page.evaluate(() => ({ ...sessionStorage })), {}, 'signed out: the key is gone');

  await narrow(page, url, t);
  t.same(elsewhere, [], 'no request leaves the service');
  t.same(problems, [], 'no script error, no CSP violation, no unlabelled control');
});

t.test('long lists come a page at a time: Load more shows the next page, once', async (t) => {
  const browser = await launchChromium(t);
  const h = await startTestApp(t);
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const cred = (await h.createOrg('acme')).production;
  // 130 event types (the console asks for the default 100 a page) and 55 rejected events (50 a page).
  const custom = (eventName: string) => ({ clientId: 'c', sentAt: Date.now(), type: 'track', event: 'custom', properties: { eventName, requiresIdentity: false } });
  t.equal((await h.batch({ ...cred, batch: Array.from({ length: 130 }, (_, i) => custom(`type_${String(i).padStart(3, '0')}`)) })).statusCode, 200);
  t.equal((await h.batch({ ...cred, batch: Array.from({ length: 55 }, () => ({ ...custom('x'), type: 'bogus' })) })).statusCode, 412);
  await h.compacted();

  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const { problems, elsewhere } = watchPage(page, url);
  await signIn(page, url, ADMIN_KEY);
  await page.goto(`${url}/console/#/orgs/acme/events`);
  await page.locator('[data-event-type="custom_type_099"]').waitFor();
  const types = () => page.locator('[data-event-type]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-event-type')!));
  t.equal((await types()).length, 100, 'the first page of event types');
  await page.getByRole('button', { name: 'Load more event types' }).click();
  await page.locator('[data-event-type="custom_type_129"]').waitFor();
  const all = await types();
  t.same(all, Array.from({ length: 130 }, (_, i) => `custom_type_${String(i).padStart(3, '0')}`), 'then the rest, each once, in order');
  t.equal(await page.getByRole('button', { name: 'Load more event types' }).count(), 0, 'no more to load');

  const rejected = page.locator('section[aria-labelledby="quarantine-title"] tbody tr');
  await rejected.nth(49).waitFor();
  t.equal(await rejected.count(), 50, 'the first page of the quarantine');
  await page.getByRole('button', { name: 'Load more rejected events' }).click();
  await rejected.nth(54).waitFor();
  t.equal(await rejected.count(), 55, 'and the rest');
  t.same(elsewhere, [], 'no request leaves the service');
  t.same(problems, [], 'no script error');
});

/** Sign-in by keyboard, and the orgs page in a phone-sized window: nothing wider than the window. */
async function narrow(page: Page, url: string, t: Test): Promise<void> {
  await page.setViewportSize({ width: 390, height: 800 });
  await page.goto(`${url}/console/`);
  // By keyboard alone: the key field has the focus once the page is up, Enter signs in.
  await page.waitForFunction(() => document.activeElement instanceof HTMLInputElement && document.activeElement.type === 'password');
  await page.keyboard.type(ADMIN_KEY);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Orgs' }).waitFor();
  // Every page: nothing wider than the window (a wide table scrolls inside itself), each photographed.
  const pages: Array<[string, string, string]> = [
    ['orgs', '#/', 'section h2'],
    ['events', '#/orgs/acme/events', '[data-chart="events-per-type"] svg[aria-description]'],
    ['triggers', '#/orgs/acme/triggers', '[data-query="booking_completed"]'],
    ['trigger', '#/orgs/acme/triggers/booking_completed', '[data-version="1"]'],
    ['segments', '#/orgs/acme/segments', '[data-query="already_booked"]'],
    ['traits', '#/orgs/acme/traits', '[data-query="lifetime_bookings"]'],
    ['flows', '#/orgs/acme/flows', 'table'],
    ['flow', '#/orgs/acme/flows/booking-completed-follow-up', '[data-chart="funnel"] svg[aria-description]'],
    ['flow-new', '#/orgs/acme/flows/new', 'button.category'],
    ['profiles', '#/orgs/acme/profiles', 'input'],
    ['settings', '#/orgs/acme/settings', '[data-write-key="production"]'],
  ];
  for (const [name, hash, ready] of pages) {
    await page.goto(`${url}/console/${hash}`);
    await page.locator(ready).first().waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    t.ok(overflow <= 0, `${name}: no sideways scrolling at 390 px (${overflow} px over)`);
    await page.screenshot({ path: join(SHOTS, `${name}-narrow.png`), fullPage: true });
  }
}
