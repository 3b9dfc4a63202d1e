/** The admin API's bearer scheme is matched case-insensitively (RFC 7235); a missing or wrong key is 401. */
import t from 'tap';
import { ADMIN_KEY } from '../../helpers/app.js';
import { API_ONLY, startRoleApp } from '../../helpers/role-app.js';

t.test('admin key with any case of the Bearer scheme; missing, empty or wrong keys are 401', async (t) => {
  const h = await startRoleApp(t, API_ONLY);
  const get = (authorization: string | undefined) =>
    h.app.inject({ url: '/admin/v1/orgs', headers: authorization === undefined ? {} : { authorization } });
  for (const auth of [`Bearer ${ADMIN_KEY}`, `bearer ${ADMIN_KEY}`, `BEARER ${ADMIN_KEY}`, `bEaReR   ${ADMIN_KEY}`, `Bearer\t${ADMIN_KEY} `]) {
    t.equal((await get(auth)).statusCode, 200, JSON.stringify(auth.replace(ADMIN_KEY, '<key>')));
  }
  for (const auth of [undefined, '', 'Bearer', 'Bearer ', `Bearer${ADMIN_KEY}`, `Basic ${ADMIN_KEY}`, ADMIN_KEY, `Bearer ${ADMIN_KEY}x`, `Bearer ${ADMIN_KEY} ${ADMIN_KEY}`]) {
    const r = await get(auth);
    t.equal(r.statusCode, 401, JSON.stringify(auth?.replaceAll(ADMIN_KEY, '<key>')));
    t.equal(r.json().code, 'invalid_admin_key');
    t.match(r.headers['www-authenticate'], /^Bearer realm="audience-admin"/);
  }
});
