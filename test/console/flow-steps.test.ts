/**
 * A flow with steps in the console (issues 26, 40), in Debian's Chromium: New flow → Triggered → a trigger →
 * Steps → a wait-unless-bought journey built in the step editor (a branch, a wait moved, a step removed,
 * the exit; the JSON view and back) → saved, started; a contact's cart enters them and the flow's page
 * lists the steps and the entry waiting, found by the contact; Test with a contact says where an entry
 * would wait and previews its journey, branch by branch; a mistake is refused with the path that is wrong.
 * Generated step lists, opened in the editor and saved untouched, come back exactly as they were.
 * Screenshots: docs/console/flow-steps.png, docs/console/flow-journey.png.
 */
import { join } from 'node:path';
import fc from 'fast-check';
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

t.test('a flow with steps, built with forms, started and watched in the console', async (t) => {
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
  const step = (n: number) => page.getByRole('listitem', { name: new RegExp(`^Step ${n}: `) });
  t.equal(await step(1).getAttribute('aria-label'), 'Step 1: Wait until an event', 'a journey to start from: wait until…');
  t.equal(await step(2).getAttribute('aria-label'), 'Step 2: Message', '…then a message');

  // A wrong event name: the service's reason, with where.
  await step(1).getByLabel('Event').fill('no_such_trigger');
  await page.getByRole('button', { name: 'Create draft' }).click();
  await page.getByText(/\/steps\/0\/waitUntil\/event: no_such_trigger is neither/).waitFor();
  t.pass('refused with the path');
  await step(1).getByLabel('Event').fill('custom_order_completed');

  // The message step: its template, and a branch for big carts.
  await step(2).getByLabel(/^Template/).fill('{"text": "You left something", "to": "{{ contact.email_address }}"}');
  await step(2).getByRole('button', { name: 'Add branch' }).click();
  await step(2).getByLabel('Field').fill('event.properties.total');
  await step(2).getByLabel('Value').fill('100');
  await step(2).getByLabel('Message of branch 1').fill('{"text": "Your big cart"}');
  // A wait added last, moved up and back down; then a second message, and the exit.
  await page.getByRole('button', { name: 'Add: wait', exact: true }).click();
  await step(3).getByLabel('Wait for', { exact: true }).fill('2');
  await step(3).getByLabel('Wait for: unit').selectOption('hours');
  await page.getByRole('button', { name: 'Move step 3 up' }).click();
  t.equal(await step(2).getAttribute('aria-label'), 'Step 2: Wait', 'moved up');
  await page.getByRole('button', { name: 'Move step 2 down' }).click();
  t.equal(await step(3).getAttribute('aria-label'), 'Step 3: Wait', 'and down again');
  await page.getByRole('button', { name: 'Add: message' }).click();
  await page.getByRole('button', { name: 'Add: wait until an event' }).click();
  await page.getByRole('button', { name: 'Remove step 5' }).click();
  await page.getByLabel(/^Exit: any entry ends/).fill('custom_order_completed');
  const expected = {
    steps: [
      { waitUntil: { event: 'custom_order_completed', timeoutSeconds: 3600 }, then: 'exit' },
      {
        message: { channel: 'outbox', template: { text: 'You left something', to: '{{ contact.email_address }}' } },
        branches: [{ when: { field: 'event.properties.total', op: 'gte', value: 100 }, message: { channel: 'outbox', template: { text: 'Your big cart' } } }],
      },
      { wait: { seconds: 7200 } },
      { message: { channel: 'outbox', template: { text: 'Hello {{ contact.email_address }}' } } },
    ],
    exit: { event: 'custom_order_completed' },
  };

  // The JSON view shows what the forms built; read back into the forms, an edit there holds.
  await page.getByRole('button', { name: 'Edit as JSON' }).click();
  const json = page.getByLabel(/Steps and exit/);
  t.same(JSON.parse(await json.inputValue()), expected, 'the JSON view is the steps the forms built');
  await json.fill('{"steps": [');
  await page.getByRole('button', { name: 'Edit with forms' }).click();
  await page.getByText(/The steps are not JSON/).waitFor();
  t.pass('JSON that does not parse stays in the JSON view, with why');
  expected.steps[2] = { wait: { seconds: 3 * 86_400 } };
  await json.fill(JSON.stringify(expected));
  await page.getByRole('button', { name: 'Edit with forms' }).click();
  t.equal(await step(3).getByLabel('Wait for', { exact: true }).inputValue(), '3');
  t.equal(await step(3).getByLabel('Wait for: unit').inputValue(), '86400', 'an edit in the JSON reaches the forms');

  await page.screenshot({ path: join(SHOTS, 'flow-step-editor.png'), fullPage: true });
  // Runs when asked below (Run now), so the test first sees where an entry would wait.
  await page.getByLabel('Real time (run as soon as new events are stored)').uncheck();
  await page.getByRole('button', { name: 'Create draft' }).click();
  await page.getByRole('heading', { name: 'cart updated journey' }).waitFor();
  const saved = (await h.admin('GET', '/admin/v1/orgs/acme/flows/cart-updated-journey')).json().definition;
  t.match(saved, { realTime: false, trigger: 'cart_updated' });
  t.same({ steps: saved.steps, exit: saved.exit }, expected, 'saved as built');
  t.notOk('message' in saved, 'no message beside the steps');
  const listed = page.getByRole('list', { name: 'Steps of the flow' });
  t.match(await listed.textContent(), /wait until custom_order_completed \(at most 1 h\); if it comes: exit.*send an outbox message \(1 branch\).*wait 3 d/);
  await page.getByRole('button', { name: 'Start' }).click();
  await page.getByRole('button', { name: 'Pause' }).waitFor();

  const cart = (messageId: string, email: string, total: number) => customEvent(cred, { messageId, traits: { email }, properties: { eventName: 'cart_updated', properties: { total } } });
  t.equal((await h.collect(cart('cart-ada', 'ada@example.com', 150))).statusCode, 200);
  t.equal((await h.collect(cart('cart-bob', 'bob@example.com', 20))).statusCode, 200);
  await h.compacted();
  // Test with a contact: where ada's entry would wait, and the journey it would take.
  const simulate = async (email: string) => {
    await page.getByLabel('Contact (e-mail, or user_id:…)').fill(email);
    await page.getByRole('button', { name: 'Test', exact: true }).click();
    const journey = page.getByRole('list', { name: /^Journey of event / });
    await page.getByRole('status', { name: `What the flow would do for ${email}` }).waitFor();
    return journey;
  };
  const ada = await simulate('ada@example.com');
  await page.getByText(/enters the steps: waits in step 1 until .* or custom_order_completed/).waitFor();
  t.pass('the simulation names the step and the event');
  const adaSteps = await ada.getByRole('listitem').allTextContents();
  t.match(adaSteps[0], /^now — wait until custom_order_completed .* until /);
  t.match(adaSteps[1], /send an outbox message \(1 branch\): branch 1 \(event\.properties\.total gte 100\)$/, "ada's cart takes the branch");
  t.match(adaSteps[2], /^by .* — wait 3 d until /);
  t.match(adaSteps[3], /send an outbox message: its own message$/);
  t.match(adaSteps[4], /at any step: custom_order_completed ends the entry/);
  const bob = await simulate('bob@example.com');
  t.match((await bob.getByRole('listitem').allTextContents())[1], /: its own message$/, "bob's small cart does not");
  await page.screenshot({ path: join(SHOTS, 'flow-journey.png'), fullPage: true });

  await runFlow(h, 'cart-updated-journey');
  await h.app.flowsRole!.steps.pass('acme');
  await page.getByLabel(/Entries of a contact/).fill('ada@example.com');
  await page.getByRole('button', { name: 'Show entries' }).click();
  const entries = page.getByRole('table', { name: 'Entries in the steps' });
  await entries.waitFor();
  t.match(await entries.textContent(), /1 entry in the steps.*ada@example\.com.*1\. wait until custom_order_completed.*or custom_order_completed/s);
  await page.screenshot({ path: join(SHOTS, 'flow-steps.png'), fullPage: true });
  await page.getByLabel(/Entries of a contact/).fill('carol@example.com');
  await page.getByRole('button', { name: 'Show entries' }).click();
  await page.getByText('email:carol@example.com has no entry in the steps now.').waitFor();
  t.pass('another contact has none');

  // Editing opens the forms on the saved steps (the single-message form would drop them); saved untouched, nothing changes.
  await page.goto(`${url}/console/#/orgs/acme/flows/cart-updated-journey/edit`);
  t.equal(await step(1).getByLabel('Event').inputValue(), 'custom_order_completed');
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await page.getByRole('heading', { name: 'cart updated journey' }).waitFor();
  const again = (await h.admin('GET', '/admin/v1/orgs/acme/flows/cart-updated-journey')).json().definition;
  t.same({ steps: again.steps, exit: again.exit }, expected, 'saved again unchanged');
  t.same(elsewhere, [], 'no request leaves the service');
  t.same(problems, [], 'no script error');
});

t.test('any saved steps, opened in the forms and saved, stay exactly as they were', async (t) => {
  const browser = await launchChromium(t);
  const h = await startTestApp(t);
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  await h.createOrg('acme');
  await putQuery(h, 'triggers', 'cart_updated', CART_TRIGGER);
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const { problems, elsewhere } = watchPage(page, url);
  await signIn(page, url, ADMIN_KEY);

  // Text a Liquid template takes as text (no tag or output markers), at lengths up to a long paragraph.
  const text = fc.string({ unit: fc.constantFrom(...'abcXYZ 0123456789.,!?-_\'"éß€日本😀\n\\'), minLength: 1, maxLength: 300 }).filter((s) => s.trim() !== '');
  const seconds = fc.oneof(fc.integer({ min: 1, max: 31_536_000 }), fc.constantFrom(60, 3600, 86_400, 7 * 86_400, 31_536_000));
  const event = fc.constantFrom('custom_order_completed', 'complete_transaction', 'identify', 'cart_updated');
  const value = fc.oneof(fc.integer(), fc.boolean(), text, fc.constantFrom('3', 'true', '"x"', '[1]'));
  const op = fc.constantFrom('eq', 'ne', 'gt', 'gte', 'lt', 'lte');
  const outboxTemplate = fc.dictionary(fc.constantFrom('text', 'to', 'title', 'body'), text, { minKeys: 1 });
  const outbox = outboxTemplate.map((template) => ({ channel: 'outbox', template }));
  const hookUrl = fc.constantFrom('https://hooks.example.com/a', 'https://example.org/x?y=1');
  const condition = fc.oneof(
    fc.record({ field: fc.constantFrom('event.properties.total', 'contact.first_name', 'wait.outcome'), op, value }),
    fc.record({ field: fc.constantFrom('event.properties.city', 'contact.tier'), op: fc.constant('in'), value: fc.array(fc.oneof(fc.integer(), text), { minLength: 1, maxLength: 3 }) }),
    fc.record({ field: fc.constant('contact.email_address'), op: fc.constant('exists') }),
  );
  // A message step and its branches: mostly on the step's channel (and URL), as the forms build them;
  // sometimes not, which the forms cannot show: such steps open as JSON, and are saved as they were too.
  const messageStep = fc.oneof(
    fc.record({ message: outbox, branches: fc.array(fc.record({ when: condition, message: outbox }), { maxLength: 3 }) }),
    hookUrl.chain((u) => {
      const webhook = fc.record({ channel: fc.constant('webhook'), url: fc.constant(u), template: fc.record({ body: text }) });
      const other = fc.oneof(outbox, fc.record({ channel: fc.constant('webhook'), url: fc.constant(`${u}&other`), template: fc.record({ body: text }) }));
      return fc.record({ message: webhook, branches: fc.array(fc.record({ when: condition, message: fc.oneof({ weight: 4, arbitrary: webhook }, { weight: 1, arbitrary: other }) }), { maxLength: 3 }) });
    }),
  ).map(({ message, branches }) => (branches.length > 0 ? { message, branches } : { message }));
  const stepArb = fc.oneof(
    fc.record({ wait: fc.record({ seconds }) }),
    fc.record({ waitUntil: fc.record({ event, timeoutSeconds: seconds }), then: fc.constantFrom('continue', 'exit') }),
    messageStep,
  );
  // At least one message step, anywhere (a flow that sends nothing is refused).
  const stepList = fc.tuple(fc.array(stepArb, { maxLength: 5 }), messageStep, fc.nat()).map(([rest, message, i]) => [...rest.slice(0, i % (rest.length + 1)), message, ...rest.slice(i % (rest.length + 1))]);
  const stepsArb = fc.record({ steps: stepList, exit: fc.option(fc.record({ event }), { nil: undefined }) }, { requiredKeys: ['steps'] });

  const opened = { forms: 0, json: 0 };
  let n = 0;
  await fc.assert(
    fc.asyncProperty(stepsArb, async (generated) => {
      const members = JSON.parse(JSON.stringify(generated)) as { steps: unknown[]; exit?: unknown };
      const id = `journey-${n++}`;
      const definition = { id, name: id, category: 'triggered', entry: 'when_contact_triggers_event', trigger: 'cart_updated', realTime: false, ...members };
      const created = await h.admin('POST', '/admin/v1/orgs/acme/flows', definition);
      t.equal(created.statusCode, 201, created.statusCode === 201 ? `${id} created` : created.body);
      await page.goto(`${url}/console/#/orgs/acme/flows/${id}/edit`);
      const view = page.getByRole('button', { name: /^Edit (as JSON|with forms)$/ });
      await view.waitFor();
      opened[(await view.textContent()) === 'Edit as JSON' ? 'forms' : 'json']++;
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByRole('heading', { name: id, exact: true }).waitFor();
      const saved = (await h.admin('GET', `/admin/v1/orgs/acme/flows/${id}`)).json().definition;
      t.same({ steps: saved.steps, exit: saved.exit }, { steps: members.steps, exit: members.exit }, `${id}: unchanged`);
    }),
    {
      numRuns: 15,
      // A webhook step whose branch sends to the outbox: the forms cannot show it, so it opens as JSON.
      examples: [[{ steps: [{ message: { channel: 'webhook', url: 'https://hooks.example.com/a', template: { body: 'x' } }, branches: [{ when: { field: 'contact.email_address', op: 'exists' }, message: { channel: 'outbox', template: { text: 'y' } } }] }] }]],
    },
  );
  t.ok(opened.forms >= 5, `most open in the forms (${opened.forms} forms, ${opened.json} JSON)`);
  t.ok(opened.json >= 1, 'steps the forms cannot show open as JSON');
  t.same(problems, [], 'no script error');
  t.same(elsewhere, []);
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
