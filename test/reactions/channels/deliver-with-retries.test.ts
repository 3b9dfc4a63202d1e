/** The backoff schedule (SPEC 8): exponential, full jitter, capped, never sooner than Retry-After. */
import t from 'tap';
import { type RetryPolicy, retryDelayMs } from '../../../src/reactions/channels/deliver-with-retries.js';

const policy: RetryPolicy = { maxAttempts: 8, baseDelayMs: 500, maxDelayMs: 10_000 };

t.test('random() = 1 gives the ceiling: base * 2^(n-1), capped at maxDelayMs', async (t) => {
  const schedule = [1, 2, 3, 4, 5, 6, 7].map((n) => retryDelayMs(n, policy, () => 1));
  t.same(schedule, [500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
});

t.test('random() = 0.5 gives half of it', async (t) => {
  const schedule = [1, 2, 3, 4, 5, 6].map((n) => retryDelayMs(n, policy, () => 0.5));
  t.same(schedule, [250, 500, 1000, 2000, 4000, 5000]);
});

t.test('Retry-After is a floor, itself capped at maxDelayMs', async (t) => {
  t.equal(retryDelayMs(1, policy, () => 0.5, 2000), 2000, 'longer than the backoff: Retry-After wins');
  t.equal(retryDelayMs(5, policy, () => 1, 2000), 8000, 'shorter than the backoff: backoff wins');
  t.equal(retryDelayMs(1, policy, () => 0, 3_600_000), 10_000, 'an hour asked, the cap given');
});
