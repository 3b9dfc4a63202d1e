/** GCRA limiter and rate-limit headers (SPEC 6.2), on a fixed clock. */
import fc from 'fast-check';
import t from 'tap';
import { GcraLimiter } from '../../src/ratelimit/gcra-limiter.js';
import { rateLimitHeaders } from '../../src/ratelimit/headers.js';
import {
  ADMIN_AUTH_POLICY,
  AUTH_FAILURE_POLICY,
  AUTH_FAILURE_POLICY_NAME,
  ORG_POLICY_NAME,
  orgRatePolicy,
  rateLimitedError,
} from '../../src/ratelimit/policies.js';

const T0 = Date.UTC(2026, 0, 1);
const policy = orgRatePolicy({ rateLimit: 50 });

t.test('rate 50, burst 50: exactly 50 at once, the 51st waits 20 ms; 50 more after 1 s', async (t) => {
  const limiter = new GcraLimiter();
  const remaining: number[] = [];
  for (let i = 0; i < 50; i++) {
    const d = limiter.consume('org:acme', policy, T0);
    t.equal(d.allowed, true, `request ${i + 1} allowed`);
    t.equal(d.retryAfterSeconds, 0);
    remaining.push(d.remaining);
  }
  t.same(remaining, Array.from({ length: 50 }, (_, i) => 49 - i), 'remaining counts down 49…0');

  const denied = limiter.consume('org:acme', policy, T0);
  t.equal(denied.allowed, false, '51st denied');
  t.equal(denied.remaining, 0);
  t.ok(Math.abs(denied.retryAfterSeconds - 0.02) < 1e-9, `retry after 20 ms (${denied.retryAfterSeconds})`);
  t.ok(Math.abs(denied.resetSeconds - 1) < 1e-9, 'full reset in 1 s');
  t.equal(limiter.consume('org:acme', policy, T0).allowed, false, 'denials do not consume');

  t.equal(limiter.consume('org:acme', policy, T0 + 19).allowed, false, 'still denied at 19 ms');
  const oneMore = limiter.consume('org:acme', policy, T0 + 20);
  t.match(oneMore, { allowed: true, remaining: 0 }, 'one emission interval later, one more');

  let allowed = 0;
  for (let i = 0; i < 60; i++) if (limiter.consume('org:acme', policy, T0 + 1020).allowed) allowed++;
  t.equal(allowed, 50, '1 s after that, a full burst of 50 again');
});

t.test('peek decides as consume would, counting nothing (admin auth: 10 at once, then 1/s)', async (t) => {
  const limiter = new GcraLimiter();
  for (let i = 0; i < 100; i++) t.match(limiter.peek('k', ADMIN_AUTH_POLICY, T0), { allowed: true, remaining: 10 }, `peek ${i}`);
  t.equal(limiter.size, 0, 'peeks store nothing');
  t.same([...Array(11)].map(() => limiter.consume('k', ADMIN_AUTH_POLICY, T0).allowed), [...Array(10).fill(true), false]);
  const denied = limiter.peek('k', ADMIN_AUTH_POLICY, T0 + 999);
  t.match(denied, { allowed: false, remaining: 0 });
  t.ok(Math.abs(denied.retryAfterSeconds - 0.001) < 1e-9, `the same wait as a consume (${denied.retryAfterSeconds} s)`);
  t.match(limiter.peek('k', ADMIN_AUTH_POLICY, T0 + 1000), { allowed: true, remaining: 1 }, 'one more after 1 s');
  t.match(limiter.consume('k', ADMIN_AUTH_POLICY, T0 + 1000), { allowed: true, remaining: 0 }, 'which a consume then takes');
});

t.test('sustained rate: one request per 20 ms is always allowed', async (t) => {
  const limiter = new GcraLimiter();
  for (let i = 0; i < 500; i++) {
    const d = limiter.consume('k', policy, T0 + i * 20);
    if (!d.allowed || d.remaining !== 49) return t.fail(`request ${i}: ${JSON.stringify(d)}`);
  }
  t.pass('500 paced requests allowed with the burst intact');
});

t.test('a fractional emission interval (rate 3) allows exactly the burst, then one per 333 ms', async (t) => {
  const limiter = new GcraLimiter();
  const p = { ratePerSecond: 3, burst: 3 };
  t.same([0, 0, 0, 0].map(() => limiter.consume('k', p, T0).allowed), [true, true, true, false]);
  t.equal(limiter.consume('k', p, T0 + 333).allowed, false);
  t.equal(limiter.consume('k', p, T0 + 334).allowed, true);
  t.same([1, 1, 1, 1].map(() => limiter.consume('k', p, T0 + 2000).allowed), [true, true, true, false], 'after 1 s idle, the full burst');
});

t.test('keys are independent', async (t) => {
  const limiter = new GcraLimiter();
  for (let i = 0; i < 50; i++) limiter.consume('org:acme', policy, T0);
  t.equal(limiter.consume('org:acme', policy, T0).allowed, false);
  const other = limiter.consume('org:globex', policy, T0);
  t.match(other, { allowed: true, remaining: 49 });
});

t.test('idle keys are evicted; the key count is capped', async (t) => {
  const limiter = new GcraLimiter({ sweepIntervalMs: 1000, maxKeys: 100 });
  for (let i = 0; i < 50; i++) limiter.consume(`ip:${i}`, AUTH_FAILURE_POLICY, T0);
  t.equal(limiter.size, 50);
  limiter.consume('ip:late', AUTH_FAILURE_POLICY, T0 + 999);
  t.equal(limiter.size, 51, 'no sweep before the interval');
  limiter.consume('ip:late', AUTH_FAILURE_POLICY, T0 + 1000);
  t.equal(limiter.size, 1, 'keys idle since T0 dropped (their TAT passed)');

  for (let i = 0; i < 500; i++) limiter.consume(`flood:${i}`, AUTH_FAILURE_POLICY, T0 + 1001);
  t.equal(limiter.size, 100, 'never more than maxKeys');
  t.match(limiter.consume('flood:499', AUTH_FAILURE_POLICY, T0 + 1001), { remaining: 8 }, 'recent keys kept');
});

t.test('headers are exact', async (t) => {
  const limiter = new GcraLimiter();
  const first = limiter.consume('org:acme', policy, T0);
  t.same(rateLimitHeaders(ORG_POLICY_NAME, policy, first), {
    'RateLimit-Policy': '"org";q=50;w=1',
    RateLimit: '"org";r=49;t=1',
  });
  for (let i = 0; i < 49; i++) limiter.consume('org:acme', policy, T0);
  const denied = limiter.consume('org:acme', policy, T0);
  t.same(rateLimitHeaders(ORG_POLICY_NAME, policy, denied), {
    'RateLimit-Policy': '"org";q=50;w=1',
    RateLimit: '"org";r=0;t=1',
    'Retry-After': '1',
  }, '20 ms rounds up to 1 s');

  const slow = { ratePerSecond: 0.5, burst: 1 };
  const slowLimiter = new GcraLimiter();
  slowLimiter.consume('k', slow, T0);
  const waited = slowLimiter.consume('k', slow, T0 + 500);
  t.same(rateLimitHeaders('slow', slow, waited), {
    'RateLimit-Policy': '"slow";q=1;w=2',
    RateLimit: '"slow";r=0;t=2',
    'Retry-After': '2',
  }, '1.5 s rounds up to 2');

  const auth = new GcraLimiter().consume('ip:203.0.113.9', AUTH_FAILURE_POLICY, T0);
  t.same(rateLimitHeaders(AUTH_FAILURE_POLICY_NAME, AUTH_FAILURE_POLICY, auth), {
    'RateLimit-Policy': '"auth";q=10;w=1',
    RateLimit: '"auth";r=9;t=1',
  });
  t.throws(() => rateLimitHeaders('Bad "name"', policy, first));

  const error = rateLimitedError(rateLimitHeaders(ORG_POLICY_NAME, policy, denied));
  t.match(error, { code: 'rate_limited', status: 429 });
  t.equal(error.extra.headers?.['Retry-After'], '1');
});

t.test('a cost of n (a batch lookup) is allowed exactly when n requests would be, and then counts as n', async (t) => {
  let checked = 0;
  fc.assert(
    fc.property(
      fc.constantFrom(orgRatePolicy({ rateLimit: 50 }), orgRatePolicy({ rateLimit: 3 }), { ratePerSecond: 7, burst: 20 }, { ratePerSecond: 100, burst: 10 }),
      fc.array(fc.record({ cost: fc.integer({ min: 1, max: 10 }), afterMs: fc.integer({ min: 0, max: 400 }) }), { minLength: 1, maxLength: 60 }),
      (policy, requests) => {
        const limiter = new GcraLimiter();
        let now = T0;
        for (const { cost, afterMs } of requests) {
          now += afterMs;
          const before = limiter.peek('k', policy, now);
          const decision = limiter.consume('k', policy, now, cost);
          // peek's `remaining` is how many single requests would be allowed now.
          const expected = before.allowed && before.remaining >= cost;
          if (decision.allowed !== expected) throw new Error(`cost ${cost} with ${before.remaining} available: allowed ${decision.allowed}`);
          const after = limiter.peek('k', policy, now);
          if (decision.allowed && before.remaining - cost !== (after.allowed ? after.remaining : 0)) throw new Error(`${before.remaining} available, cost ${cost}: ${after.remaining} left`);
          if (!decision.allowed && JSON.stringify(after) !== JSON.stringify(before)) throw new Error('a refused cost counted');
          if (!decision.allowed && !(decision.retryAfterSeconds > 0)) throw new Error('a refusal says when to retry');
        }
        checked++;
      },
    ),
    { numRuns: 300 },
  );
  t.equal(checked, 300, 'generated request sequences, each decision checked against single requests');
});
