/** A flow end to end: trigger → decisions → outbox/webhook → profile, through the admin API. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { customEvent, startTestApp } from '../../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../../helpers/flows.js';
import { startReceiver } from '../../helpers/http-receiver.js';

t.test('outbox flow: only events after go-live, once each, template from the event, profile updated', async (t) => {
  const h = await startTestApp(t);
  const acme = await h.createOrg('acme');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  t.equal((await h.collect(customEvent(acme.production, { messageId: 'before-go-live' }))).statusCode, 200);
  await h.compacted();
  await startFlow(h, {
    id: 'f1',
    scheduleSeconds: 3600, realTime: false,
    message: { channel: 'outbox', template: { subject: 'Hi {{ contact.email_address }}', body: 'Enjoy {{ event.properties.city }}', nights: '{{ event.properties.nights }}' } },
  });
  t.equal((await h.collect(customEvent(acme.production, { messageId: 'after-1' }))).statusCode, 200);
  t.equal((await h.collect(customEvent(acme.production, { messageId: 'after-2', traits: { email: 'grace@example.com' }, properties: { eventName: 'booking_completed', properties: { city: 'Porto', nights: 7 } } }))).statusCode, 200);
  t.equal((await h.collect(customEvent(acme.production, { messageId: 'other-type', properties: { eventName: 'page_liked', properties: {} } }))).statusCode, 200);
  t.equal((await h.collect(customEvent(acme.staging, { messageId: 'staging-1' }))).statusCode, 200);

  const first = await runFlow(h, 'f1');
  t.equal(first.rows, 2, 'the window holds the two production booking events after go-live');
  t.same(first.decisions.map((d) => d.outcome), ['sent', 'sent']);
  const second = await runFlow(h, 'f1');
  t.equal(second.rows, 0, 'the next window is empty');

  const lines = readFileSync(join(h.dataDir, 'outbox', 'acme.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  t.equal(lines.length, 2);
  const porto = lines.find((l) => l.email === 'grace@example.com');
  t.match(porto, { flowId: 'f1', eventId: 'after-2', channel: 'outbox', content: { subject: 'Hi grace@example.com', body: 'Enjoy Porto', nights: '7' } });
  t.match(porto.sendId, /^msg_[0-9a-f]{32}$/);

  const ada = h.app.profiles.find('acme', 'email', 'ada@example.com')!;
  t.same(ada.campaigns_received, ['f1']);
  t.same(ada.flow_variant_membership, ['f1']);

  const sends = (await h.admin('GET', '/admin/v1/orgs/acme/flows/f1/sends')).json().sends;
  t.equal(sends.length, 2);
  t.ok(sends.every((s: { status: string }) => s.status === 'delivered'));
  const decisions = (await h.admin('GET', '/admin/v1/orgs/acme/flows/f1/decisions?identity=email:grace@example.com')).json().decisions;
  t.match(decisions, [{ eventId: 'after-2', outcome: 'sent', deliveryStatus: 'delivered' }]);
});

t.test('webhook flow: signed JSON body rendered from the event, webhook-id is the send id', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const h = await startTestApp(t);
  const acme = await h.createOrg('acme');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  await startFlow(h, {
    id: 'hook',
    message: { channel: 'webhook', url: `${receiver.url}/hook`, template: { body: { city: '{{ event.properties.city }}', to: '{{ contact.email_address }}', raw: '{{ event.raw.messageId }}' } } },
  });
  t.equal((await h.collect(customEvent(acme.production, { messageId: 'evt-1' }))).statusCode, 200);
  await runFlow(h, 'hook');
  t.equal(receiver.received.length, 1);
  const got = receiver.received[0]!;
  const { unsubscribe_url: link, ...body } = JSON.parse(got.body);
  t.same(body, { city: 'Lisbon', to: 'ada@example.com', raw: 'evt-1' });
  t.match(link, /^http:\/\/127\.0\.0\.1:0\/unsubscribe\/[A-Za-z0-9_-]+$/, 'a marketing webhook carries its unsubscribe link (issue 24)');
  const secret = (await h.admin('GET', '/admin/v1/orgs/acme/webhook-secret')).json().secret;
  t.doesNotThrow(() => new Webhook(secret).verify(got.body, got.headers as Record<string, string>), 'signature verifies with the org secret');
  const [send] = (await h.admin('GET', '/admin/v1/orgs/acme/flows/hook/sends')).json().sends;
  t.equal(got.headers['webhook-id'], send.sendId);
});
