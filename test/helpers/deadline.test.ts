/** The suite's one speed factor: TEST_TIME_SCALE parsed strictly, and waitFor's scaled deadline. */
import t from 'tap';
import { parseTimeScale, scaled, TEST_TIME_SCALE, waitFor } from './deadline.js';

t.test('TEST_TIME_SCALE: unset is 1, a number ≥ 1 is taken, anything else refused', async (t) => {
  t.equal(parseTimeScale(undefined), 1);
  t.equal(parseTimeScale(''), 1);
  t.equal(parseTimeScale('3'), 3);
  t.equal(parseTimeScale('1.5'), 1.5);
  for (const bad of ['0', '0.5', '-2', 'fast', 'Infinity', 'NaN', '2x']) t.throws(() => parseTimeScale(bad), /TEST_TIME_SCALE/, bad);
  t.equal(scaled(1_000), Math.round(1_000 * TEST_TIME_SCALE));
});

t.test('waitFor returns the first truthy value and names what it waited for when it gives up', async (t) => {
  let calls = 0;
  t.equal(await waitFor(() => (++calls >= 3 ? 'ready' : undefined), { intervalMs: 1 }), 'ready');
  t.equal(calls, 3);
  await t.rejects(waitFor(() => false, { timeoutMs: 10, intervalMs: 1, what: 'the moon' }), /the moon not met within \d+ ms/);
});
