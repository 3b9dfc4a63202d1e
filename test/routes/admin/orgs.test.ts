/** Admin API for orgs and partner credentials (SPEC 3). */
import t from 'tap';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { buildApp } from '../../../src/app.js';
import { readConfig } from '../../../src/core/config.js';
import type { OrgDocument } from '../../../src/control/documents.js';
import { orgKey } from '../../../src/control/types.js';
import { sha256Hex } from '../../../src/core/secrets.js';
import { DEFAULT_PROFILE_FIELDS } from '../../../src/core/profile-fields.js';
import { customEvent, startTestApp } from '../../helpers/app.js';
import { API_ONLY, COLLECT_AND_API, startRoleApp } from '../../helpers/role-app.js';

t.test('create returns the org and both credentials once; secrets are stored hashed', async (t) => {
  const h = await startRoleApp(t, API_ONLY);
  const res = await h.admin('POST', '/admin/v1/orgs', { slug: 'acme', name: 'Acme', audienceApi: true, rateLimit: 70, currencySymbol: '€' });
  t.equal(res.statusCode, 201);
  const body = res.json();
  t.match(body.org, { slug: 'acme', name: 'Acme', audienceApi: true, rateLimit: 70, currencySymbol: '€', notFoundStatus: 404 });
  t.same(body.org.contentFields, [...DEFAULT_PROFILE_FIELDS], 'default content fields');
  for (const env of ['staging', 'production']) {
    t.match(body.credentials[env].partnerId, /^pk_[0-9A-Za-z]{20}$/);
    t.match(body.credentials[env].partnerSecret, /^ps_[0-9A-Za-z]{40}$/);
  }
  t.not(body.credentials.staging.partnerId, body.credentials.production.partnerId);

  const stored = (await h.app.control.get(orgKey('acme')))!.value as OrgDocument;
  const dump = JSON.stringify(stored);
  t.notOk(dump.includes(body.credentials.production.partnerSecret), 'plaintext secret not stored');
  t.notOk(dump.includes(body.credentials.staging.partnerSecret), 'plaintext secret not stored');
  for (const env of ['staging', 'production'] as const) {
    t.equal(stored.credentials[env].secretHash, sha256Hex(body.credentials[env].partnerSecret), 'SHA-256 hex stored');
  }

  const got = await h.admin('GET', '/admin/v1/orgs/acme');
  t.equal(got.statusCode, 200);
  t.equal(got.json().credentials.production.partnerId, body.credentials.production.partnerId);
  t.notOk(JSON.stringify(got.json()).includes('ps_'), 'secrets are shown once only');
  t.equal((await h.admin('GET', '/admin/v1/orgs')).json().orgs.length, 1);
});

t.test('slug rules, duplicates and unknown members', async (t) => {
  const h = await startRoleApp(t, API_ONLY);
  t.equal((await h.admin('POST', '/admin/v1/orgs', { slug: 'acme', name: 'A' })).statusCode, 201);
  const dup = await h.admin('POST', '/admin/v1/orgs', { slug: 'acme', name: 'B' });
  t.equal(dup.statusCode, 409);
  t.equal(dup.json().code, 'org_exists');
  for (const slug of ['A', '1abc', 'a', 'a-b', 'x'.repeat(41)]) {
    const res = await h.admin('POST', '/admin/v1/orgs', { slug, name: 'n' });
    t.equal(res.statusCode, 400, `slug ${slug} refused`);
    t.equal(res.json().code, 'invalid_request');
  }
  const extra = await h.admin('POST', '/admin/v1/orgs', { slug: 'globex', name: 'G', plan: 'gold' });
  t.equal(extra.statusCode, 400);
  const noCoercion = await h.admin('POST', '/admin/v1/orgs', { slug: 'globex', name: 'G', rateLimit: '50' });
  t.equal(noCoercion.statusCode, 400);
  t.equal((await h.admin('GET', '/admin/v1/orgs/nobody')).statusCode, 404);
});

t.test('PATCH changes settings; unknown content fields are refused', async (t) => {
  const h = await startRoleApp(t, API_ONLY);
  await h.createOrg('acme');
  const res = await h.admin('PATCH', '/admin/v1/orgs/acme', { rateLimit: 10, contentFields: ['first_name', 'email_address'], notFoundStatus: 400 });
  t.equal(res.statusCode, 200);
  t.match(res.json().org, { rateLimit: 10, contentFields: ['first_name', 'email_address'], notFoundStatus: 400 });
  const bad = await h.admin('PATCH', '/admin/v1/orgs/acme', { contentFields: ['first_name', 'shoe_size'] });
  t.equal(bad.statusCode, 400);
  t.match(bad.json().detail, /shoe_size/);
  t.equal((await h.admin('PATCH', '/admin/v1/orgs/acme', { slug: 'other' })).statusCode, 400, 'slug is immutable');
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme')).json().org.rateLimit, 10, 'persisted');
});

t.test('rotate issues a new secret; the old one stops working at once', async (t) => {
  const h = await startRoleApp(t, COLLECT_AND_API);
  const cred = await h.createOrg('acme');
  const res = await h.admin('POST', '/admin/v1/orgs/acme/credentials/production/rotate');
  t.equal(res.statusCode, 200);
  const fresh = res.json().credentials;
  t.equal(fresh.partnerId, cred.production.partnerId, 'partnerId kept');
  t.not(fresh.partnerSecret, cred.production.partnerSecret);
  t.equal((await h.collect(customEvent(cred.production))).statusCode, 401, 'old secret refused');
  t.equal((await h.collect(customEvent(fresh))).statusCode, 200, 'new secret accepted');
  t.equal((await h.collect(customEvent(cred.staging))).statusCode, 200, 'other environment untouched');
  t.equal((await h.admin('POST', '/admin/v1/orgs/acme/credentials/dev/rotate')).statusCode, 400);
});

t.test('credentials survive a restart', async (t) => {
  const dataDir = t.testdir();
  const first = await startRoleApp(t, COLLECT_AND_API, { dataDir });
  const cred = await first.createOrg('acme');
  await first.close();
  const second = await startRoleApp(t, COLLECT_AND_API, { dataDir });
  t.equal((await second.collect(customEvent(cred.production))).statusCode, 200);
});

t.test('the admin API needs the admin key', async (t) => {
  const h = await startTestApp(t);
  const none = await h.app.inject({ method: 'GET', url: '/admin/v1/orgs' });
  t.equal(none.statusCode, 401);
  t.equal(none.json().code, 'invalid_admin_key');
  t.match(none.headers['content-type'], /application\/problem\+json/);
  const wrong = await h.app.inject({ method: 'GET', url: '/admin/v1/orgs', headers: { authorization: 'Bearer nope' } });
  t.equal(wrong.statusCode, 401);
});

t.test('without ADMIN_KEY the first start generates one into DATA_DIR/admin.key (0600)', async (t) => {
  const dataDir = t.testdir();
  const config = readConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
  const app = await buildApp(config);
  t.teardown(() => app.close());
  const file = join(dataDir, 'admin.key');
  t.equal(app.adminKey.file, file);
  t.equal(statSync(file).mode & 0o777, 0o600);
  const key = readFileSync(file, 'utf8').trim();
  const res = await app.inject({ method: 'GET', url: '/admin/v1/orgs', headers: { authorization: `Bearer ${key}` } });
  t.equal(res.statusCode, 200);
});
