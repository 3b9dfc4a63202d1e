/**
 * The statistics of flow results (issue 26) against numbers computed by hand, each written out below, and
 * fast-check properties: an interval holds its estimate, a test of a group against itself gives p = 1.
 */
import fc from 'fast-check';
import t from 'tap';
import { erfc, lift, liftInterval, pValue, rate, wilson, zStatistic } from '../../../src/reactions/flows/reports/experiment-stats.js';

const close = (t: { ok(value: boolean, message: string): unknown }, got: number | null | undefined, want: number, digits: number, what: string) =>
  t.ok(got !== null && got !== undefined && Math.abs(got - want) < 0.5 * 10 ** -digits, `${what}: ${got} ≈ ${want}`);

t.test('200/1000 against a control of 150/1000', async (t) => {
  const variant = { converted: 200, entered: 1000 };
  const control = { converted: 150, entered: 1000 };
  // Pooled p = 350/2000 = 0.175; se = √(0.175 · 0.825 · (1/1000 + 1/1000)) = √0.00028875 = 0.0169926;
  // z = (0.200 − 0.150) / 0.0169926 = 2.94245; p = 2 · (1 − Φ(2.94245)) = 0.0032563.
  close(t, zStatistic(variant, control), 2.94245, 5, 'z');
  close(t, pValue(variant, control), 0.0032563, 7, 'p-value');
  // Wilson, z = 1.959964, z² = 3.841459: centre = (0.2 + 3.841459/2000) / (1 + 3.841459/1000) = 0.2011480;
  // half = 1.959964 / 1.003841 · √(0.2 · 0.8 / 1000 + 3.841459 / 4,000,000) = 1.952463 · 0.0126870 = 0.0247709.
  const interval = wilson(200, 1000)!;
  close(t, interval.low, 0.176377, 6, 'Wilson low');
  close(t, interval.high, 0.225919, 6, 'Wilson high');
  // Lift = 0.2 / 0.15 − 1 = 1/3. log ratio = ln(4/3) = 0.2876821; se = √(1/200 − 1/1000 + 1/150 − 1/1000)
  // = √0.0096667 = 0.0983192; 0.2876821 ± 1.959964 · 0.0983192 = [0.0949801, 0.4803841];
  // exp − 1 = [0.099637, 0.616695].
  close(t, lift(variant, control), 1 / 3, 12, 'lift');
  const liftCi = liftInterval(variant, control)!;
  close(t, liftCi.low, 0.099637, 6, 'lift low');
  close(t, liftCi.high, 0.616695, 6, 'lift high');
  t.equal(pValue(control, variant), pValue(variant, control), 'two-sided: the order does not matter');
});

t.test('zero counts: rates 0, intervals still bounded, lift and p-value null when undefined', async (t) => {
  t.equal(rate(0, 0), null, 'nobody entered: no rate');
  t.equal(wilson(0, 0), null);
  t.equal(rate(0, 10), 0);
  // Wilson 0/10: centre = (0 + 3.841459/20) / (1 + 3.841459/10) = 0.1920729 / 1.3841459 = 0.1387667;
  // half = 1.959964 / 1.3841459 · √(3.841459 / 400) = 1.416011 · 0.0979982 = 0.1387667: [0, 0.277533].
  const none = wilson(0, 10)!;
  t.equal(none.low, 0);
  close(t, none.high, 0.277533, 6, 'Wilson high of 0/10');
  const all = wilson(10, 10)!;
  t.equal(all.high, 1, '10/10: the upper bound is exactly 1');
  close(t, all.low, 1 - 0.277533, 6, 'Wilson low of 10/10 mirrors 0/10');
  t.equal(lift({ converted: 3, entered: 10 }, { converted: 0, entered: 10 }), null, 'a control rate of 0: no lift');
  t.equal(lift({ converted: 0, entered: 10 }, { converted: 2, entered: 10 }), -1, 'no conversion at all: −100 %');
  t.equal(liftInterval({ converted: 0, entered: 10 }, { converted: 2, entered: 10 }), null, 'the log of 0 has no interval');
  t.equal(pValue({ converted: 0, entered: 10 }, { converted: 0, entered: 10 }), null, 'nobody converted: no variance, no test');
  t.equal(pValue({ converted: 5, entered: 5 }, { converted: 7, entered: 7 }), null, 'everybody converted: no test either');
  t.equal(pValue({ converted: 1, entered: 10 }, { converted: 0, entered: 0 }), null, 'an empty control');
  // 0/10 against 2/10: pooled 0.1, se = √(0.1 · 0.9 · 0.2) = 0.1341641, z = −0.2 / 0.1341641 = −1.490712,
  // p = 0.1360371.
  close(t, pValue({ converted: 0, entered: 10 }, { converted: 2, entered: 10 }), 0.1360371, 7, 'p-value with a zero');
});

t.test('erfc against published values', async (t) => {
  // Abramowitz and Stegun, table 7.1, and erfc(x) = 1 − erf(x).
  const table: Array<[number, number]> = [[0, 1], [0.5, 0.4795001221869535], [1, 0.1572992070502851], [2, 0.004677734981047266], [3, 2.209049699858544e-5], [5, 1.537459794428035e-12]];
  for (const [x, want] of table) t.ok(Math.abs(erfc(x) - want) / want < 1e-13, `erfc(${x}) = ${erfc(x)}`);
  t.ok(Math.abs(erfc(-1) - (2 - 0.1572992070502851)) < 1e-15, 'odd symmetry');
});

const counts = fc.integer({ min: 1, max: 100_000 }).chain((entered) => fc.record({ entered: fc.constant(entered), converted: fc.integer({ min: 0, max: entered }) }));

t.test('property: the Wilson interval holds the rate, inside [0, 1]', async (t) => {
  fc.assert(
    fc.property(counts, ({ converted, entered }) => {
      const p = converted / entered;
      const { low, high } = wilson(converted, entered)!;
      return low >= 0 && high <= 1 && low <= p + 1e-12 && p <= high + 1e-12;
    }),
  );
  t.pass('Wilson holds the rate');
});

t.test('property: a group against an equal one gives p = 1 and lift 0 with an interval around it', async (t) => {
  fc.assert(
    fc.property(counts, fc.integer({ min: 1, max: 5 }), ({ converted, entered }, k) => {
      const a = { converted, entered };
      const b = { converted: converted * k, entered: entered * k };
      const p = pValue(a, b);
      if (converted === 0 || converted === entered) return p === null;
      const ci = liftInterval(a, b)!;
      return Math.abs(p! - 1) < 1e-12 && Math.abs(lift(a, b)!) < 1e-12 && ci.low <= 1e-12 && ci.high >= -1e-12;
    }),
  );
  t.pass('equal rates: no difference found');
});

t.test('property: the p-value is symmetric, in [0, 1], and the lift interval holds the lift', async (t) => {
  fc.assert(
    fc.property(counts, counts, (a, b) => {
      const p = pValue(a, b);
      if (p !== pValue(b, a) || (p !== null && (p < 0 || p > 1))) return false;
      const ci = liftInterval(a, b);
      const l = lift(a, b);
      return ci === null || (l !== null && ci.low <= l + 1e-9 && l <= ci.high + 1e-9);
    }),
  );
  t.pass('symmetric and bounded');
});
