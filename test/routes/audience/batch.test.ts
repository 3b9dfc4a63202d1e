/**
 * POST /audience/v2/contacts/batch (issue 41): entries in the order asked, each found / not_found /
 * invalid; the same answer per contact as the one-contact lookup (generated sets of identities); the
 * limits (empty, over 100, a repeat, over 64 KB) as 400s that say the limit; a unit of the org's budget per
 * 10 identities; another org's contacts and tokens; the token and org-access rules of the one lookup.
 */
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { ManualClock } from '../../../src/core/context.js';
import { emailHash } from '../../../src/events/profiles/profile-index.js';
import { ADMIN_KEY, startTestApp, type TestApp } from '../../helpers/app.js';

const PEOPLE = ['ada', 'grace', 'linus', 'edsger', 'barbara', 'alan'];

async function setup(t: Test, org: Record<string, unknown> = {}) {
  const h = await startTestApp(t, { clock: new ManualClock(Date.UTC(2026, 5, 10, 12)) });
  for (const [slug, people] of [['acme', PEOPLE], ['beta', ['mallory']]] as const) {
    await h.createOrg(slug, { audienceApi: true, ...org });
    const rows = people.map((p, i) => `${p}@example.com,${p[0]!.toUpperCase()}${p.slice(1)},${slug}-${i},${slug === 'acme' ? 'London' : 'Paris'}`);
    const res = await h.app.inject({
      method: 'POST',
      url: `/admin/v1/orgs/${slug}/contacts/import`,
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'text/csv' },
      payload: `email_address,first_name,user_id,address_city\n${rows.join('\n')}\n`,
    });
    if (res.statusCode !== 200) throw new Error(res.body);
  }
  return { h, acme: await issue(h, 'acme'), beta: await issue(h, 'beta') };
}

async function issue(h: TestApp, slug: string): Promise<string> {
  const res = await h.admin('POST', `/admin/v1/orgs/${slug}/tokens`, { createdBy: 'ops@example.com' });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json().token;
}

function batch(h: TestApp, token: string | undefined, body: unknown, headers: Record<string, string> = {}) {
  return h.app.inject({
    method: 'POST',
    url: '/audience/v2/contacts/batch',
    headers: { accept: 'application/json', 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

t.test('entries in the order asked: each found with what one lookup answers, not_found, or invalid', async (t) => {
  // The clock stands still: a budget that the comparisons' single lookups do not exhaust.
  const { h, acme } = await setup(t, { rateLimit: 100_000 });
  const one = async (identity: string) => {
    const res = await h.app.inject({ method: 'GET', url: `/audience/v2/contacts?identity=${encodeURIComponent(identity)}`, headers: { authorization: `Bearer ${acme}` } });
    if (res.statusCode === 400 && res.json().code === 'invalid_identity') return { status: 'invalid', detail: 'identity must be email:<address>, email-hash:<sha256 hex> or user_id:<id>' };
    if (res.statusCode === 404) return { status: 'not_found' };
    if (res.statusCode !== 200) throw new Error(`one lookup of ${identity}: ${res.statusCode} ${res.body}`);
    return { status: 'found', contact: res.json().contact, meta: res.json().meta };
  };
  const identity = fc.oneof(
    fc.constantFrom(...PEOPLE).map((p) => `email:${p}@example.com`),
    fc.constantFrom(...PEOPLE).map((p) => `email:${p.toUpperCase()}@Example.COM`),
    fc.constantFrom(...PEOPLE).map((p) => `email-hash:${emailHash(`${p}@example.com`)}`),
    fc.integer({ min: 0, max: 7 }).map((i) => `user_id:acme-${i}`),
    fc.constantFrom('email:mallory@example.com', 'user_id:beta-0', 'email:nobody@example.com'),
    fc.integer({ min: 0, max: 9999 }).map((i) => `email:someone${i}@example.com`),
    fc.integer({ min: 8, max: 9999 }).map((i) => `user_id:acme-${i}`),
    fc.constantFrom('bad', 'email:', 'email:not-an-address', 'fax:123', 'user_id:', '__proto__', 'constructor:x', `user_id:${'x'.repeat(256)}`),
  );
  await fc.assert(
    fc.asyncProperty(fc.uniqueArray(identity, { minLength: 1, maxLength: 100, size: 'large' }), async (identities) => {
      const res = await batch(h, acme, { identities });
      if (res.statusCode !== 200) throw new Error(res.body);
      const { contacts } = res.json() as { contacts: Array<{ identity: string; status: string; contact?: unknown; detail?: string }> };
      if (contacts.length !== identities.length) throw new Error('one entry per identity');
      for (const [i, entry] of contacts.entries()) {
        if (entry.identity !== identities[i]) throw new Error(`entry ${i} is ${entry.identity}, asked ${identities[i]}`);
        const { identity: _i, ...rest } = entry;
        // Invalid where one lookup is 400 invalid_identity, with why; otherwise what one lookup answers.
        t.same(rest, await one(entry.identity), `${entry.identity.slice(0, 40)}: as one lookup answers`);
      }
    }),
    { numRuns: 25 },
  );
  const fixed = await batch(h, acme, { identities: ['user_id:acme-1', 'email:mallory@example.com', 'nope'], fields: ['first_name', 'email_address'] });
  t.same(fixed.json(), {
    status: 'success',
    contacts: [
      { identity: 'user_id:acme-1', status: 'found', contact: { email_address: 'grace@example.com', first_name: 'Grace' }, meta: { eventsThrough: null, computedAt: '2026-06-10T12:00:00.000Z', lagMs: 0 } },
      { identity: 'email:mallory@example.com', status: 'not_found' },
      { identity: 'nope', status: 'invalid', detail: 'identity must be email:<address>, email-hash:<sha256 hex> or user_id:<id>' },
    ],
  }, "fields in the org's order; beta's contact is not acme's");
  t.equal((await batch(h, acme, { identities: ['email:ada@example.com'], fields: ['nope'] })).json().code, 'invalid_fields');
});

t.test('limits: empty, over 100, a repeat, over 64 KB, unknown members — 400s that say the limit', async (t) => {
  const { h, acme } = await setup(t);
  const ids = (n: number) => Array.from({ length: n }, (_, i) => `user_id:u${i}`);
  t.equal((await batch(h, acme, { identities: ids(100) })).statusCode, 200, '100 is allowed');
  for (const [body, said] of [
    [{ identities: [] }, /fewer than 1/],
    [{ identities: ids(101) }, /more than 100/],
    [{ identities: ['email:ada@example.com', 'user_id:x', 'email:ada@example.com'] }, /duplicate/],
    [{ identities: ids(3), extra: 1 }, /additional/],
    [{}, /identities/],
    [{ identities: 'email:ada@example.com' }, /array/],
    [{ identities: [`user_id:${'x'.repeat(600)}`] }, /more than 512/],
  ] as const) {
    const res = await batch(h, acme, body);
    t.equal(res.statusCode, 400, JSON.stringify(body).slice(0, 60));
    t.equal(res.json().code, 'invalid_request');
    t.match(res.json().detail, said);
  }
  const padded = `{"identities": ["email:ada@example.com"]${' '.repeat(70_000)}}`;
  const big = await batch(h, acme, padded);
  t.equal(big.statusCode, 400, 'a body over 64 KB');
  t.match(big.json(), { code: 'invalid_request', detail: /at most 65536 bytes \(64 KB\)/ });
  t.equal((await batch(h, acme, '{"identities": [')).json().code, 'invalid_json');
  const deep = `{"identities": ["a"], "fields": ${'['.repeat(5000)}${']'.repeat(5000)}}`;
  t.equal((await batch(h, acme, deep)).statusCode, 400, 'deep nesting: refused, no crash');
});

t.test('rate: a unit per 10 identities; an org over its budget gets 429 before any lookup', async (t) => {
  const { h, acme, beta } = await setup(t, { rateLimit: 20 });
  const ids = (n: number) => Array.from({ length: n }, (_, i) => `user_id:u${i}`);
  const remaining = (res: { headers: Record<string, unknown> }) => Number(/r=(\d+)/.exec(String(res.headers.ratelimit))![1]);
  t.equal(remaining(await batch(h, acme, { identities: ids(1) })), 19, '1 identity: 1 unit');
  t.equal(remaining(await batch(h, acme, { identities: ids(10) })), 18, '10: 1 unit');
  t.equal(remaining(await batch(h, acme, { identities: ids(11) })), 16, '11: 2 units');
  t.equal(remaining(await batch(h, acme, { identities: ids(100) })), 6, '100: 10 units');
  const over = await batch(h, acme, { identities: ids(100) });
  t.equal(over.statusCode, 429, 'not 10 units left');
  t.equal(over.json().code, 'rate_limited');
  t.ok(Number(over.headers['retry-after']) >= 1);
  t.equal((await batch(h, beta, { identities: ids(100) })).statusCode, 200, "another org's budget is its own");
});

t.test('a batch of 100 is possible at any rate limit: its cost is at most the burst', async (t) => {
  const { h, acme } = await setup(t, { rateLimit: 3 });
  const res = await batch(h, acme, { identities: Array.from({ length: 100 }, (_, i) => `user_id:u${i}`) });
  t.equal(res.statusCode, 200);
  t.equal(res.headers.ratelimit?.toString().startsWith('"org";r=0;'), true, 'the whole burst');
});

t.test('tokens and access: none, wrong, revoked, the Audience API off; Accept', async (t) => {
  const { h, acme } = await setup(t);
  const body = { identities: ['email:ada@example.com'] };
  t.equal((await batch(h, undefined, body)).statusCode, 401);
  t.equal((await batch(h, 'aud_nope', body)).statusCode, 401);
  t.equal((await batch(h, acme, body, { accept: 'text/html' })).json().code, 'not_acceptable');
  await h.admin('PATCH', '/admin/v1/orgs/acme', { audienceApi: false });
  t.equal((await batch(h, acme, body)).json().code, 'audience_api_not_enabled');
  await h.admin('PATCH', '/admin/v1/orgs/acme', { audienceApi: true });
  await h.admin('POST', '/admin/v1/orgs/acme/tokens/revoke', { createdBy: 'ops@example.com' });
  t.equal((await batch(h, acme, body)).statusCode, 401, 'revoked');
});
