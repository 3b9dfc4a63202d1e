/** Event inspection with repeated query parameters: a 400 that names the parameter, never a 500. */
import t from 'tap';
import { customEvent, startTestApp } from '../../helpers/app.js';

t.test('a repeated env, eventType or limit is a 400 invalid_request', async (t) => {
  const h = await startTestApp(t);
  const cred = await h.createOrg('acme');
  await h.collect(customEvent(cred.production, { messageId: 'a1' }));
  await h.compacted();
  const cases: Array<[string, RegExp]> = [
    ['events/samples?eventType=custom_booking_completed&eventType=b', /eventType/],
    ['events/samples?env=production&env=staging', /env/],
    ['events/types?env=production&env=production', /env/],
    ['events/samples?limit=1&limit=2', /limit/],
    ['quarantine?limit=1&limit=1', /limit/],
  ];
  for (const [query, names] of cases) {
    const r = await h.admin('GET', `/admin/v1/orgs/acme/${query}`);
    t.equal(r.statusCode, 400, query);
    t.equal(r.json().code, 'invalid_request', query);
    t.match(r.json().detail, names, query);
  }
  const one = await h.admin('GET', '/admin/v1/orgs/acme/events/samples?eventType=custom_booking_completed&limit=1&env=production');
  t.equal(one.statusCode, 200);
  t.equal(one.json().events.length, 1);
});
