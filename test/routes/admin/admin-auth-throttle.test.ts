/**
 * Failed admin authentication is limited per client address (10 at once, then 1 per second): over it,
 * an address is answered 429 whatever key it sends, while the valid key from any other address keeps
 * working and valid requests never use up the budget. On a manual clock, through inject().
 */
import t from 'tap';
import { ManualClock } from '../../../src/core/context.js';
import { ADMIN_AUTH_POLICY } from '../../../src/ratelimit/policies.js';
import { ADMIN_KEY, type TestApp } from '../../helpers/app.js';
import { API_ONLY, startRoleApp } from '../../helpers/role-app.js';

const BURST = ADMIN_AUTH_POLICY.burst;
const ATTACKER = '203.0.113.7';
const OPERATOR = '198.51.100.20';

function call(h: TestApp, remoteAddress: string, key: string, headers: Record<string, string> = {}) {
  return h.app.inject({ url: '/admin/v1/orgs', remoteAddress, headers: { authorization: `Bearer ${key}`, ...headers } });
}

async function statuses(h: TestApp, remoteAddress: string, key: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await call(h, remoteAddress, key)).statusCode);
  return out;
}

t.test('40 wrong keys from one address: 10 answered 401, then 429 for every key; other addresses unaffected', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const h = await startRoleApp(t, API_ONLY, { clock });

  const first = await call(h, ATTACKER, 'guess-0');
  t.equal(first.statusCode, 401);
  t.equal(first.headers.ratelimit, `"admin-auth";r=${BURST - 1};t=1`, 'a failure says how many are left');
  t.same(await statuses(h, ATTACKER, 'guess', BURST - 1), Array(BURST - 1).fill(401), `the first ${BURST} failures are 401`);

  const refused = await statuses(h, ATTACKER, 'guess', 30);
  t.same(refused, Array(30).fill(429), 'the next 30 are 429');
  const throttled = await call(h, ATTACKER, 'guess-41');
  t.equal(throttled.statusCode, 429);
  t.match(throttled.headers['content-type'], /^application\/problem\+json/);
  t.equal(throttled.headers['retry-after'], '1');
  t.match(throttled.json(), { code: 'rate_limited', detail: /too many failed admin-key attempts.*try again in 1 s/, requestId: throttled.headers['request-id'] });
  t.equal(throttled.headers['www-authenticate'], undefined, 'no challenge: the key was not looked at');

  const rightKey = await call(h, ATTACKER, ADMIN_KEY);
  t.equal(rightKey.statusCode, 429, 'the right key from that address gets the same 429: the answer says nothing about the key');
  t.same(Object.keys(rightKey.json()).sort(), Object.keys(throttled.json()).sort());
  t.equal(rightKey.json().detail, throttled.json().detail);

  t.equal((await call(h, OPERATOR, ADMIN_KEY)).statusCode, 200, 'the valid key from another address works');
  t.equal((await call(h, OPERATOR, 'typo')).statusCode, 401, 'and another address has its own budget');

  t.match(await h.metrics(), /audience_rate_limited_total\{policy="admin-auth"\} 32/, '429s are counted by policy');

  clock.advance(1000);
  t.equal((await call(h, ATTACKER, ADMIN_KEY)).statusCode, 200, 'after Retry-After the right key works');
  t.same(await statuses(h, ATTACKER, 'guess', 2), [401, 429], 'and a guesser gets one more try per second');
});

t.test('valid requests never use the budget; a person retyping the key waits at most 1 s', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const h = await startRoleApp(t, API_ONLY, { clock });
  t.same(await statuses(h, OPERATOR, ADMIN_KEY, 200), Array(200).fill(200), '200 valid requests at one instant');
  t.same(await statuses(h, OPERATOR, 'typo', BURST), Array(BURST).fill(401), `then still ${BURST} failures allowed`);
  t.equal((await call(h, OPERATOR, ADMIN_KEY)).statusCode, 429, 'the budget is used up');
  clock.advance(999);
  t.equal((await call(h, OPERATOR, ADMIN_KEY)).statusCode, 429);
  clock.advance(1);
  t.equal((await call(h, OPERATOR, ADMIN_KEY)).statusCode, 200, '1 s later the right key works');
});

t.test('concurrent guesses cannot share a free slot: 60 at once, exactly 10 looked at', async (t) => {
  const h = await startRoleApp(t, API_ONLY, { clock: new ManualClock(Date.UTC(2026, 0, 1)) });
  // The right key sent last, as the 60th: a guesser who found it after the budget learns nothing.
  const keys = [...Array.from({ length: 59 }, (_, i) => `guess-${i}`), ADMIN_KEY];
  const answers = await Promise.all(keys.map((key) => call(h, ATTACKER, key)));
  const counts = answers.reduce<Record<number, number>>((acc, r) => ({ ...acc, [r.statusCode]: (acc[r.statusCode] ?? 0) + 1 }), {});
  t.same(counts, { 401: BURST, 429: 60 - BURST });
});

t.test('IPv6 is limited per /64, IPv4-mapped IPv6 as its IPv4', async (t) => {
  const h = await startRoleApp(t, API_ONLY, { clock: new ManualClock(Date.UTC(2026, 0, 1)) });
  for (let i = 0; i < BURST; i++) t.equal((await call(h, `2001:db8:1:2::${i.toString(16)}`, 'guess')).statusCode, 401);
  t.equal((await call(h, '2001:db8:1:2:ffff:ffff:ffff:ffff', ADMIN_KEY)).statusCode, 429, 'another address of the same /64 shares its budget');
  t.equal((await call(h, '2001:db8:1:3::1', ADMIN_KEY)).statusCode, 200, 'the next /64 does not');

  for (let i = 0; i < BURST; i++) await call(h, ATTACKER, 'guess');
  t.equal((await call(h, `::ffff:${ATTACKER}`, ADMIN_KEY)).statusCode, 429, 'the IPv4-mapped form is the same client');
});

t.test('TRUST_PROXY: each client behind a trusted balancer has its budget; X-Forwarded-For from others is ignored', async (t) => {
  const h = await startRoleApp(t, API_ONLY, { clock: new ManualClock(Date.UTC(2026, 0, 1)), config: { trustProxy: ['10.0.0.0/8'] } });
  const viaBalancer = (client: string, key: string) => call(h, '10.1.2.3', key, { 'x-forwarded-for': client });
  for (let i = 0; i < BURST; i++) t.equal((await viaBalancer(ATTACKER, 'guess')).statusCode, 401);
  t.equal((await viaBalancer(ATTACKER, ADMIN_KEY)).statusCode, 429, 'the guessing client is limited');
  t.equal((await viaBalancer(OPERATOR, ADMIN_KEY)).statusCode, 200, 'another client behind the same balancer is not');

  for (let i = 0; i < BURST; i++) await call(h, '192.0.2.9', 'guess', { 'x-forwarded-for': `198.51.100.${i}` });
  t.equal((await call(h, '192.0.2.9', ADMIN_KEY, { 'x-forwarded-for': '198.51.100.200' })).statusCode, 429, 'an untrusted peer cannot pick a fresh address');
});

t.test('hostile Authorization headers count as failures and never answer 500', async (t) => {
  const h = await startRoleApp(t, API_ONLY, { clock: new ManualClock(Date.UTC(2026, 0, 1)) });
  const hostile = ['', 'Bearer', 'Bearer ' + 'x'.repeat(15_000), 'Basic __proto__', 'Bearer \u0000', 'Bearer constructor', `Bearer ${ADMIN_KEY}\u0000`];
  const codes = [];
  for (const authorization of hostile) codes.push((await h.app.inject({ url: '/admin/v1/orgs', remoteAddress: ATTACKER, headers: { authorization } })).statusCode);
  t.same(codes, Array(hostile.length).fill(401));
  t.equal((await call(h, ATTACKER, ADMIN_KEY)).statusCode, 200, `${hostile.length} failures, still under ${BURST}`);
});
