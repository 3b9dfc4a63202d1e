/** GET /admin/v1/orgs/:slug/contacts: one profile with every field and the org's content fields; hostile identities refused. */
import t from 'tap';
import { customEvent, startTestApp } from '../../helpers/app.js';

t.test('a contact by e-mail, e-mail hash or user id; nothing of another org', async (t) => {
  const h = await startTestApp(t);
  const acme = await h.createOrg('acme', { contentFields: ['email_address', 'first_name'] });
  await h.createOrg('beta');
  const identify = { ...acme.production, clientId: 'c1', sentAt: Date.now(), type: 'identify', userId: 'u-1', traits: { email: 'Ada@Example.com', firstName: 'Ada' } };
  t.equal((await h.collect(identify)).statusCode, 200);
  t.equal((await h.collect(customEvent(acme.production, { clientId: 'c1', userId: 'u-1' }))).statusCode, 200);
  await h.compacted();

  const byEmail = await h.admin('GET', '/admin/v1/orgs/acme/contacts?identity=email:ada@example.com');
  t.equal(byEmail.statusCode, 200);
  t.same(byEmail.json().contentFields, ['email_address', 'first_name'], "the org's content fields, in order");
  t.match(byEmail.json().contact, { email_address: 'ada@example.com', first_name: 'Ada', user_id: 'u-1' }, 'every field of the profile');
  const hash = (await import('node:crypto')).createHash('sha256').update('ada@example.com').digest('hex');
  t.equal((await h.admin('GET', `/admin/v1/orgs/acme/contacts?identity=email-hash:${hash}`)).json().contact.email_address, 'ada@example.com');
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/contacts?identity=user_id:u-1')).json().contact.email_address, 'ada@example.com');

  t.equal((await h.admin('GET', '/admin/v1/orgs/beta/contacts?identity=email:ada@example.com')).statusCode, 404, "another org's contact is not found");
  const cases: Array<[string, number, string]> = [
    ['/admin/v1/orgs/acme/contacts', 400, 'invalid_request'],
    ['/admin/v1/orgs/acme/contacts?identity=phone:123', 400, 'invalid_identity'],
    ['/admin/v1/orgs/acme/contacts?identity=email:not-an-address', 400, 'invalid_identity'],
    [`/admin/v1/orgs/acme/contacts?identity=email:${'a'.repeat(600)}@x.io`, 400, 'invalid_request'],
    ['/admin/v1/orgs/acme/contacts?identity=email:a@x.io&identity=email:b@x.io', 400, 'invalid_request'],
    ['/admin/v1/orgs/acme/contacts?identity=__proto__:x', 400, 'invalid_identity'],
    ['/admin/v1/orgs/acme/contacts?identity=email:nobody@example.com', 404, 'contact_not_found'],
    ['/admin/v1/orgs/nosuch/contacts?identity=email:ada@example.com', 404, 'org_not_found'],
  ];
  for (const [url, status, code] of cases) {
    const res = await h.admin('GET', url);
    t.equal(res.statusCode, status, `${url.slice(0, 80)}: ${status}`);
    t.equal(res.json().code, code);
  }
  t.equal((await h.app.inject({ url: '/admin/v1/orgs/acme/contacts?identity=email:ada@example.com' })).statusCode, 401, 'the admin key is needed');
});
