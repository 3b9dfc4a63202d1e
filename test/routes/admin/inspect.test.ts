/** Event types and samples for writing trigger SQL (SPEC 7). */
import t from 'tap';
import { customEvent, startTestApp } from '../../helpers/app.js';

t.test('types list what arrived per environment with property keys and JSON types; samples are newest first', async (t) => {
  const h = await startTestApp(t);
  const cred = await h.createOrg('acme');
  await h.collect(customEvent(cred.production, { messageId: 'a1', properties: { eventName: 'booking_completed', properties: { city: 'Porto', nights: 3, vip: true } } }));
  await h.collect(customEvent(cred.production, { messageId: 'a2', properties: { eventName: 'booking_completed', properties: { city: 'Faro', price: 9.5 } } }));
  await h.collect(customEvent(cred.staging, { messageId: 's1' }));
  await h.collect({ ...cred.production, clientId: 'c', sentAt: Date.now(), type: 'track', event: 'search', properties: { term: 'shoes' }, traits: { email: 'x@example.com' }, messageId: 'q1' });
  await h.compacted();

  const types = (await h.admin('GET', '/admin/v1/orgs/acme/events/types?env=production')).json().types as Array<Record<string, any>>;
  t.equal(types.length, 2);
  const booking = types.find((x) => x.eventType === 'custom_booking_completed')!;
  t.match(booking, { environment: 'production', count: 2 });
  t.same(booking.properties, { city: 'string', nights: 'integer', vip: 'boolean', price: 'number' });
  t.ok(!Number.isNaN(Date.parse(booking.lastSeenAt)));
  t.same(types.find((x) => x.eventType === 'search')!.properties, { term: 'string' });

  const all = (await h.admin('GET', '/admin/v1/orgs/acme/events/types')).json().types as Array<{ environment: string }>;
  t.equal(all.length, 3, 'both environments without env');

  const samples = (await h.admin('GET', '/admin/v1/orgs/acme/events/samples?env=production&eventType=custom_booking_completed&limit=1')).json().events;
  t.equal(samples.length, 1);
  t.match(samples[0], { messageId: 'a2', eventType: 'custom_booking_completed', email: 'ada@example.com', environment: 'production' });
  t.equal(samples[0].raw.properties.properties.city, 'Faro', 'raw event included');
  t.notOk('partnerSecret' in samples[0].raw);

  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/events/samples?env=dev')).statusCode, 400);
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/events/samples?limit=0')).statusCode, 400);
  t.equal((await h.admin('GET', '/admin/v1/orgs/nobody/events/types')).statusCode, 404);
});

t.test('one org never sees another org\'s events', async (t) => {
  const h = await startTestApp(t);
  const acme = await h.createOrg('acme');
  await h.createOrg('globex');
  await h.collect(customEvent(acme.production));
  await h.compacted();
  t.equal((await h.admin('GET', '/admin/v1/orgs/globex/events/types')).json().types.length, 0);
  t.equal((await h.admin('GET', '/admin/v1/orgs/globex/events/samples')).json().events.length, 0);
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/events/samples')).json().events.length, 1);
});
