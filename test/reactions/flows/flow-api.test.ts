/** Flows through the admin API (SPEC 8): validation, lifecycle, segments, experiments, decisions, channels. */
import t from 'tap';
import { book, customEvent, startTestApp, STORAGE_PROCESS } from '../../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../../helpers/flows.js';
import { startReceiver, status } from '../../helpers/http-receiver.js';
import { smtpServer } from '../../helpers/smtp-server.js';

const OUTBOX = { channel: 'outbox', template: { text: 'hi' } };
const flowBody = (extra: Record<string, unknown>) => ({
  id: 'f1',
  name: 'Booking follow-up',
  category: 'triggered',
  entry: 'when_contact_triggers_event',
  trigger: 'booking_completed',
  message: OUTBOX,
  ...extra,
});

async function acmeWithTrigger(t: Parameters<typeof startTestApp>[0], config = {}) {
  const h = await startTestApp(t, { config: { ...STORAGE_PROCESS, ...config } });
  const cred = await h.createOrg('acme');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  return { h, cred };
}

t.test('a flow is refused for a missing trigger or segment, staging, private webhook targets, e-mail without SMTP', async (t) => {
  const { h } = await acmeWithTrigger(t, { webhookAllowPrivate: false });
  const create = (extra: Record<string, unknown>) => h.admin('POST', '/admin/v1/orgs/acme/flows', flowBody(extra));
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['missing trigger', { trigger: 'nope' }, /trigger nope does not exist/],
    ['missing segment', { segmentFilter: { segment: 'vip' } }, /segment vip does not exist/],
    ['staging', { environment: 'staging' }, /production events only/],
    ['loopback webhook', { message: { channel: 'webhook', url: 'http://127.0.0.1:9/x', template: { body: {} } } }, /url/],
    ['metadata webhook', { message: { channel: 'webhook', url: 'http://169.254.169.254/latest', template: { body: {} } } }, /url/],
    ['email without SMTP', { message: { channel: 'email', template: { subject: 's', text: 't' } } }, /SMTP_URL/],
    ['exists with a value', { branches: [{ when: { field: 'event.x', op: 'exists', value: 1 }, message: OUTBOX }] }, /exists takes no value/],
  ];
  for (const [label, extra, detail] of cases) {
    const res = await create(extra);
    t.equal(res.statusCode, 422, label);
    t.equal(res.json().code, 'invalid_flow', label);
    t.match(res.json().detail, detail, label);
  }
  const shape = await create({ category: 'scheduled', reentry: 'sometimes' });
  t.equal(shape.statusCode, 422);
  t.ok(shape.json().errors.length >= 2, 'schema errors listed');
  t.equal((await create({})).statusCode, 201);
  t.equal((await create({})).statusCode, 409, 'same id again');
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/flows/nope')).statusCode, 404);
  t.match((await h.admin('GET', '/admin/v1/orgs/acme/flows/f1')).json(), { status: 'draft', cursorAt: null, definition: { id: 'f1' } });
});

t.test('draft sends nothing, pause keeps the cursor, resume catches up', async (t) => {
  const { h, cred } = await acmeWithTrigger(t);
  t.equal((await h.admin('POST', '/admin/v1/orgs/acme/flows', flowBody({ scheduleSeconds: 3600, realTime: false }))).statusCode, 201);
  await book(h, cred.production, 'ada@example.com', 'before');
  await h.compacted();
  t.match(await h.app.flowsRole!.runner!.run('acme', 'f1'), { skipped: 'flow is draft' });
  await h.admin('POST', '/admin/v1/orgs/acme/flows/f1/start');
  await book(h, cred.production, 'ada@example.com', 'live-1');
  t.same((await runFlow(h, 'f1')).decisions.map((d) => d.eventId), ['live-1'], 'the event before go-live never triggers');
  t.equal((await h.admin('POST', '/admin/v1/orgs/acme/flows/f1/pause')).json().status, 'paused');
  await book(h, cred.production, 'ada@example.com', 'while-paused');
  t.match(await runFlow(h, 'f1'), { skipped: 'flow is paused' });
  await h.admin('POST', '/admin/v1/orgs/acme/flows/f1/start');
  const run = await h.admin('POST', '/admin/v1/orgs/acme/flows/f1/run');
  t.match(run.json(), { rows: 1, outcomes: { sent: 1 } }, 'the paused window is caught up');
});

t.test('segment include and exclude, experiment with holdout, decisions explain every contact', async (t) => {
  const { h, cred } = await acmeWithTrigger(t);
  await putQuery(h, 'segments', 'vip', "SELECT email_address AS email FROM profiles WHERE first_name = 'Vip'");
  await h.collect({ ...customEvent(cred.production, { clientId: 'c-vip', traits: { email: 'vip@example.com', firstName: 'Vip' } }), type: 'identify', event: undefined, properties: undefined });
  await h.compacted();
  const variants = [
    { label: 'A', weight: 50 },
    { label: 'Holdout', weight: 50, holdout: true },
  ];
  await startFlow(h, { id: 'ex', scheduleSeconds: 3600, realTime: false, segmentFilter: { segment: 'vip' }, experiment: { variants }, message: OUTBOX });
  await startFlow(h, { id: 'in', scheduleSeconds: 3600, realTime: false, segmentFilter: { segment: 'vip', mode: 'include' }, message: OUTBOX });
  const emails = Array.from({ length: 20 }, (_, i) => `user${i}@example.com`);
  for (const [i, email] of [...emails, 'vip@example.com'].entries()) t.equal((await book(h, cred.production, email, `e${i}`)).statusCode, 200);
  const anon = customEvent(cred.production, { messageId: 'anon', clientId: 'anon', properties: { eventName: 'booking_completed', requiresIdentity: false, properties: {} } });
  delete anon.traits;
  t.equal((await h.collect(anon)).statusCode, 200);

  const ex = await runFlow(h, 'ex');
  const outcomes = (run: typeof ex) => run.decisions.reduce<Record<string, number>>((acc, d) => ({ ...acc, [d.outcome]: (acc[d.outcome] ?? 0) + 1 }), {});
  const exOutcomes = outcomes(ex);
  t.equal(exOutcomes.excluded_by_segment, 1);
  t.equal(exOutcomes.no_identity, 1, 'the requiresIdentity false event has no identity for this trigger');
  t.equal((exOutcomes.sent ?? 0) + (exOutcomes.holdout ?? 0), 20);
  t.ok(exOutcomes.sent! > 0 && exOutcomes.holdout! > 0, 'both variants used');
  t.same(outcomes(await runFlow(h, 'in')), { sent: 1, excluded_by_segment: 20, no_identity: 1 });

  const holdout = ex.decisions.find((d) => d.outcome === 'holdout')!;
  const sent = ex.decisions.find((d) => d.outcome === 'sent')!;
  const index = h.app.profiles;
  t.same(index.find('acme', 'email', holdout.email!)!.flow_variant_membership, ['ex-Holdout']);
  t.same(index.find('acme', 'email', holdout.email!)!.campaigns_received, [], 'a holdout received nothing');
  t.same(index.find('acme', 'email', sent.email!)!.flow_variant_membership, ['ex-A']);
  t.same(index.find('acme', 'email', sent.email!)!.campaigns_received, ['ex']);
  t.same(index.find('acme', 'email', 'vip@example.com')!.flow_variant_membership, ['in']);

  for (const email of [...emails, 'vip@example.com']) {
    const res = await h.admin('GET', `/admin/v1/orgs/acme/flows/ex/decisions?identity=email:${email}`);
    t.equal(res.json().decisions.length, 1, `one decision for ${email}`);
  }
  t.match((await h.admin('GET', '/admin/v1/orgs/acme/flows/ex/decisions?identity=email:vip@example.com')).json().decisions, [
    { outcome: 'excluded_by_segment', reason: 'exclude segment vip' },
  ]);
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/flows/ex/decisions?identity=bogus')).statusCode, 400);
});

t.test('webhook retries on 5xx then delivers; 4xx fails without retry and the decision says failed', async (t) => {
  const flaky = await startReceiver([status(500), status(503), status(200)]);
  const refusing = await startReceiver([status(400)]);
  t.teardown(() => Promise.all([flaky.close(), refusing.close()]));
  const { h, cred } = await acmeWithTrigger(t, { webhookBackoffMs: 10 });
  await startFlow(h, { id: 'flaky', scheduleSeconds: 3600, realTime: false, message: { channel: 'webhook', url: flaky.url, template: { body: { id: '{{ event.event_id }}' } } } });
  await startFlow(h, { id: 'refused', scheduleSeconds: 3600, realTime: false, message: { channel: 'webhook', url: refusing.url, template: { body: {} } } });
  await book(h, cred.production, 'ada@example.com', 'e1');
  await runFlow(h, 'flaky');
  await runFlow(h, 'refused');
  t.equal(flaky.received.length, 3);
  t.equal(new Set(flaky.received.map((r) => r.headers['webhook-id'])).size, 1, 'every attempt carries the same webhook-id');
  t.match((await h.admin('GET', '/admin/v1/orgs/acme/flows/flaky/sends')).json().sends, [{ status: 'delivered', attempts: 3 }]);
  t.equal(refusing.received.length, 1);
  t.match((await h.admin('GET', '/admin/v1/orgs/acme/flows/refused/decisions?identity=email:ada@example.com')).json().decisions, [
    { outcome: 'failed', deliveryStatus: 'failed', attempts: 1, reason: /400/ },
  ]);
  t.same(h.app.profiles.find('acme', 'email', 'ada@example.com')!.campaigns_received, ['flaky'], 'a failed send is no campaign received');
});

t.test('webhook dead-letters after the last attempt', async (t) => {
  const down = await startReceiver([status(503)]);
  t.teardown(() => down.close());
  const { h, cred } = await acmeWithTrigger(t, { webhookBackoffMs: 5, webhookMaxAttempts: 3 });
  await startFlow(h, { id: 'down', scheduleSeconds: 3600, realTime: false, message: { channel: 'webhook', url: down.url, template: { body: {} } } });
  await book(h, cred.production, 'ada@example.com', 'e1');
  await runFlow(h, 'down');
  t.equal(down.received.length, 3);
  t.match((await h.admin('GET', '/admin/v1/orgs/acme/flows/down/sends?status=dead')).json().sends, [{ status: 'dead', attempts: 3 }]);
});

t.test('email flow through a real SMTP server, Message-ID from the send id', async (t) => {
  const smtp = await smtpServer(t);
  const { h, cred } = await acmeWithTrigger(t, { smtpUrl: smtp.url });
  await startFlow(h, {
    id: 'mail',
    scheduleSeconds: 3600, realTime: false,
    message: { channel: 'email', template: { subject: 'Your stay in {{ event.properties.city }}', text: '{{ event.properties.nights }} nights' } },
  });
  await book(h, cred.production, 'ada@example.com', 'e1');
  await runFlow(h, 'mail');
  t.equal(smtp.mails.length, 1);
  t.same(smtp.mails[0]!.to, ['ada@example.com']);
  t.match(smtp.mails[0]!.data, /Subject: Your stay in Lisbon/);
  t.match(smtp.mails[0]!.data, /3 nights/);
  const [send] = (await h.admin('GET', '/admin/v1/orgs/acme/flows/mail/sends')).json().sends;
  t.match(smtp.mails[0]!.data, new RegExp(`Message-ID: <${send.sendId}@`, 'i'));
});
