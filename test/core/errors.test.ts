/**
 * Every error code is snake_case with an error status, has its section in docs/errors.md (status, when,
 * fix), and its problem `type` opens that section on the service; nothing else opens anything.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { errorCatalog } from '../../src/core/errors.js';
import { projectRoot } from '../../src/core/paths.js';
import { startTestApp } from '../helpers/app.js';
import { API_ONLY, startRoleApp } from '../helpers/role-app.js';

const docs = readFileSync(join(projectRoot, 'docs', 'errors.md'), 'utf8');

t.test('every code is documented with its status, when it happens and how to fix it', async (t) => {
  for (const [code, entry] of Object.entries(errorCatalog)) {
    t.match(code, /^[a-z]+(_[a-z]+)*$/, `${code} is snake_case`);
    t.ok(entry.status >= 400 && entry.status < 600, `${code} has an error status`);
    const section = docs.split(/^(?=## `)/m).find((s) => s.startsWith(`## \`${code}\``));
    t.ok(section, `${code} has a section`);
    t.match(section, new RegExp(`\\*\\*Status:\\*\\* ${entry.status}\\b`), `${code}: its status`);
    t.match(section, /\*\*When:\*\* \S/, `${code}: when`);
    t.match(section, /\*\*Fix:\*\* \S/, `${code}: how to fix it`);
  }
  t.equal(docs.match(/^## `/gm)?.length, Object.keys(errorCatalog).length, 'no section for a code that does not exist');
});

t.test("a problem's type opens its code's page", async (t) => {
  const h = await startRoleApp(t, API_ONLY);
  const problem = await h.app.inject({ url: '/admin/v1/orgs', headers: { authorization: 'Bearer wrong' } });
  t.equal(problem.json().type, '/problems/invalid_admin_key', 'a relative reference to the service itself');
  const page = await h.app.inject({ url: problem.json().type });
  t.equal(page.statusCode, 200);
  t.match(page.headers['content-type'], /text\/html/);
  t.match(page.headers['content-security-policy'], /default-src 'none'/);
  t.match(page.body, /<h2><code>invalid_admin_key<\/code><\/h2>/);
  t.match(page.body, /Authorization: Bearer/, 'with the fix');
  t.notMatch(page.body, /invalid_token/, 'and only that code');
  for (const code of Object.keys(errorCatalog)) t.equal((await h.app.inject({ url: `/problems/${code}` })).statusCode, 200, `/problems/${code}`);
  const index = await h.app.inject({ url: '/problems' });
  t.equal(index.statusCode, 200);
  for (const code of Object.keys(errorCatalog)) t.match(index.body, `href="/problems/${code}"`);
});

t.test('/problems/:code with anything but a code: 404 problem+json, no file read', async (t) => {
  const h = await startRoleApp(t, API_ONLY);
  for (const hostile of ['..%2F..%2Fpackage.json', '__proto__', 'constructor', 'toString', 'hasOwnProperty', '%00', 'x'.repeat(90), '%E2%80%AE', 'invalid_json.md', 'INVALID_JSON']) {
    const res = await h.app.inject({ url: `/problems/${hostile}` });
    t.equal(res.statusCode, 404, hostile);
    t.match(res.headers['content-type'], /application\/problem\+json/);
    t.notMatch(res.body, /"dependencies"|audience@/, 'nothing of a file');
  }
});
