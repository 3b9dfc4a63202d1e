/** GET /audience/v2/contacts: repeated query parameters, the bearer scheme's case, and the 403 detail. */
import t, { type Test } from 'tap';
import { ADMIN_KEY, startTestApp, type TestApp } from '../../helpers/app.js';

async function setup(t: Test) {
  const h = await startTestApp(t);
  await h.createOrg('acme', { audienceApi: true });
  await h.app.inject({
    method: 'POST',
    url: '/admin/v1/orgs/acme/contacts/import',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'text/csv' },
    payload: 'email_address,first_name\nada@example.com,Ada\n',
  });
  const issued = await h.admin('POST', '/admin/v1/orgs/acme/tokens', { createdBy: 'ops@example.com' });
  return { h, token: issued.json().token as string };
}

function lookup(h: TestApp, query: string, authorization: string | undefined) {
  return h.app.inject({
    url: `/audience/v2/contacts?${query}`,
    headers: { accept: 'application/json', ...(authorization === undefined ? {} : { authorization }) },
  });
}

t.test('a repeated fields or identity parameter is a 400 that says how to pass it, never a 500', async (t) => {
  const { h, token } = await setup(t);
  const auth = `Bearer ${token}`;
  const identity = 'identity=email:ada@example.com';
  for (const fields of ['fields=first_name&fields=email_address', 'fields=first_name&fields=first_name', 'fields=&fields=', 'fields=a&fields=b&fields=c']) {
    const r = await lookup(h, `${identity}&${fields}`, auth);
    t.equal(r.statusCode, 400, fields);
    t.equal(r.json().code, 'invalid_fields', fields);
    t.match(r.json().detail, /more than once.*one comma-separated list/, fields);
  }
  for (const query of ['identity=email:ada@example.com&identity=email:ada@example.com', 'identity=email:ada@example.com&identity=user_id:u-1&fields=first_name']) {
    const r = await lookup(h, query, auth);
    t.equal(r.statusCode, 400, query);
    t.equal(r.json().code, 'invalid_identity', query);
    t.match(r.json().detail, /more than once.*exactly one identity=/, query);
    t.notMatch(r.body, /ada@/, 'no e-mail in the error body');
  }
  const ok = await lookup(h, `${identity}&fields=first_name,email_address`, auth);
  t.equal(ok.statusCode, 200, 'one comma-separated list works');
  t.same(ok.json().contact, { email_address: 'ada@example.com', first_name: 'Ada' });
});

t.test('the bearer scheme is case-insensitive (RFC 7235); a missing or empty token is still 401', async (t) => {
  const { h, token } = await setup(t);
  const identity = 'identity=email:ada@example.com';
  for (const auth of [`bearer ${token}`, `BEARER ${token}`, `BeArEr ${token}`, `Bearer   ${token}`, `bearer\t${token}`, `Bearer ${token}  `]) {
    const r = await lookup(h, identity, auth);
    t.equal(r.statusCode, 200, JSON.stringify(auth.replace(token, '<token>')));
  }
  for (const auth of [undefined, '', 'Bearer', 'Bearer ', 'bearer    ', `Bearer${token}`, `Basic ${token}`, `Token ${token}`, token]) {
    const r = await lookup(h, identity, auth);
    t.equal(r.statusCode, 401, JSON.stringify(auth?.replace(token, '<token>')));
    t.equal(r.json().code, 'invalid_token');
  }
});

t.test('403 audience_api_not_enabled tells the operator how to enable it', async (t) => {
  const { h, token } = await setup(t);
  await h.admin('PATCH', '/admin/v1/orgs/acme', { audienceApi: false });
  const r = await lookup(h, 'identity=email:ada@example.com', `Bearer ${token}`);
  t.equal(r.statusCode, 403);
  t.equal(r.json().code, 'audience_api_not_enabled');
  t.match(r.json().detail, /npx audiencectl org update acme --audience-api/);
  t.match(r.json().detail, /"audienceApi": true/);
  t.notMatch(r.json().detail, /account manager/);
});
