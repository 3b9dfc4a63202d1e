/**
 * POST /admin/v1/orgs/:slug/flows/message-preview and GET …/triggers/:name/versions: a message rendered
 * against a real trigger row, with the flow's own checks (SSRF, unknown trigger) and the template sandbox;
 * a trigger's versions with what each fired.
 */
import t from 'tap';
import { customEvent, startTestApp } from '../../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../../helpers/flows.js';

t.test('a message preview renders a real row; hostile messages are refused or contained', async (t) => {
  const h = await startTestApp(t, { config: { webhookAllowPrivate: false } });
  const acme = await h.createOrg('acme');
  await h.createOrg('beta');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  const preview = (body: unknown, org = 'acme') => h.admin('POST', `/admin/v1/orgs/${org}/flows/message-preview`, body);
  const outbox = (template: Record<string, unknown>) => ({ trigger: 'booking_completed', message: { channel: 'outbox', template } });

  const empty = await preview(outbox({ to: '{{ contact.email_address }}' }));
  t.equal(empty.statusCode, 200);
  t.match(empty.json(), { row: null, rendered: null, error: /returns no row over this window/ }, 'no row yet: said so');

  t.equal((await h.collect(customEvent(acme.production, { messageId: 'b-1', traits: { email: 'ada@example.com', firstName: 'Ada' } }))).statusCode, 200);
  await h.compacted();
  const ok = await preview({ ...outbox({ to: '{{ contact.email_address }}', city: '{{ event.properties.city }}', v: '{{ variant.label }}' }), variant: 'B' });
  t.equal(ok.statusCode, 200);
  t.match(ok.json(), { row: { event_id: 'b-1' }, rendered: { channel: 'outbox', content: { to: 'ada@example.com', city: 'Lisbon', v: 'B' } }, error: null });

  const escape = await preview(outbox({ file: "{% include '/etc/passwd' %}", env: '{{ process.env.ADMIN_KEY }}' }));
  t.equal(escape.statusCode, 200);
  t.notMatch(JSON.stringify(escape.json()), /root:|test-admin-key/, 'no file and no secret reaches the answer');

  const ssrf = await preview({ trigger: 'booking_completed', message: { channel: 'webhook', url: 'http://127.0.0.1:6379/', template: { body: {} } } });
  t.equal(ssrf.statusCode, 422, 'a webhook to a private address is refused as for a flow');
  t.equal(ssrf.json().code, 'invalid_flow');
  t.equal((await preview({ trigger: 'nosuch', message: { channel: 'outbox', template: {} } })).statusCode, 422, 'an unknown trigger');
  t.equal((await preview(outbox({}), 'beta')).statusCode, 422, "another org's trigger is not this org's");
  for (const body of [{}, { trigger: '../x', message: {} }, { trigger: 'booking_completed', message: 'x' }, { ...outbox({}), extra: 1 }, { ...outbox({}), variant: '<script>' }]) {
    t.equal((await preview(body)).statusCode, 400, `${JSON.stringify(body).slice(0, 60)}: 400`);
  }
});

t.test("a trigger's versions: hash, status, reason, and what each fired", async (t) => {
  const h = await startTestApp(t);
  await h.createOrg('acme');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  const refused = await h.admin('PUT', '/admin/v1/orgs/acme/triggers/booking_completed', { sql: 'SELECT * FROM beta.events' });
  t.equal(refused.statusCode, 422);
  const versions = await h.admin('GET', '/admin/v1/orgs/acme/triggers/booking_completed/versions');
  t.equal(versions.statusCode, 200);
  t.match(versions.json().versions, [
    { version: 2, status: 'refused', error: /.+/, hash: /^[0-9a-f]{64}$/ },
    { version: 1, status: 'valid', error: null, fired: { rows: 0, sent: 0 } },
  ]);
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/triggers/nosuch/versions')).statusCode, 404);
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/triggers/..%2Fx/versions')).statusCode, 400);
  t.equal((await h.admin('GET', '/admin/v1/orgs/beta/triggers/booking_completed/versions')).statusCode, 404);
});

t.test('the preview shows the message the run sends for the same row: one evaluation', async (t) => {
  const h = await startTestApp(t);
  const acme = await h.createOrg('acme');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  const message = { channel: 'outbox', template: { text: 'Enjoy {{ event.properties.city }}, {{ contact.first_name }} ({{ flow.name }}, {{ variant.label }})' } };
  const branches = [
    { when: { field: 'event.properties.nights', op: 'gt', value: 5 }, message: { channel: 'outbox', template: { text: '{{ event.properties.nights }} nights, {{ contact.email_address }} ({{ flow.name }}, {{ variant.label }})' } } },
  ];
  const experiment = { variants: [{ label: 'A', weight: 50 }, { label: 'B', weight: 50, message: { channel: 'outbox', template: { text: 'B for {{ contact.first_name }}' } } }] };
  await startFlow(h, { id: 'f1', name: 'Stay', scheduleSeconds: 3600, realTime: false, message, branches, experiment });
  const event = (messageId: string, nights: number) =>
    customEvent(acme.production, { messageId, properties: { eventName: 'booking_completed', properties: { city: 'Porto', nights } }, traits: { email: 'ada@example.com', firstName: 'Ada' } });
  t.equal((await h.collect(event('long-1', 7))).statusCode, 200);
  const summary = await runFlow(h, 'f1');
  const [decision] = summary.decisions;
  if (decision?.outcome !== 'sent') throw new Error(`the run did not send: ${JSON.stringify(decision)}`);

  const preview = await h.admin('POST', '/admin/v1/orgs/acme/flows/message-preview', { trigger: 'booking_completed', message, branches, experiment, flowName: 'Stay', variant: decision.variant });
  t.equal(preview.statusCode, 200);
  t.same(preview.json().rendered, decision.message, `variant ${decision.variant}: the preview is what the run sent`);
  const expected = decision.variant === 'B' ? { channel: 'outbox', content: { text: 'B for Ada' } } : { channel: 'outbox', content: { text: `7 nights, ada@example.com (Stay, ${decision.variant})` } };
  t.same(decision.message, expected, 'a variant of its own wins, else the branch that holds');
});
