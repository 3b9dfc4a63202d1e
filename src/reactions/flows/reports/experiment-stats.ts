/**
 * The statistics of a flow's results (flow-results.ts), pure: a conversion rate with its 95 % Wilson score
 * interval, the lift of a variant over the control with a 95 % interval from the log of the rate ratio
 * (Katz's delta method), and the two-sided p-value of the pooled two-proportion z-test. Undefined values
 * (no entries, a control rate of 0, no variance) are null, never NaN or Infinity, so they survive JSON.
 * The formulas are in docs/data-engineers.md, "Goals and experiment results".
 */

/** The 0.975 quantile of the standard normal: a two-sided 95 % interval is the estimate ± Z95 standard errors. */
export const Z95 = 1.959963984540054;

export interface Interval {
  low: number;
  high: number;
}

/** converted / entered; null when nobody entered. */
export function rate(converted: number, entered: number): number | null {
  return entered === 0 ? null : converted / entered;
}

/**
 * Wilson's score interval: unlike p ± z·√(p(1−p)/n) it stays inside [0, 1] and is not empty at 0 or n
 * conversions, which small variants and rare goals give all the time.
 */
export function wilson(converted: number, entered: number, z = Z95): Interval | null {
  if (entered === 0) return null;
  const n = entered;
  const p = converted / n;
  const z2 = z * z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z / (1 + z2 / n)) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  // At 0 or n conversions the bound is exactly 0 or 1; computed, it would be off by a rounding error.
  return { low: converted === 0 ? 0 : Math.max(0, centre - half), high: converted === n ? 1 : Math.min(1, centre + half) };
}

/** (p_variant − p_control) / p_control; null when the control's rate is 0 or undefined. */
export function lift(variant: Counts, control: Counts): number | null {
  const pv = rate(variant.converted, variant.entered);
  const pc = rate(control.converted, control.entered);
  if (pv === null || pc === null || pc === 0) return null;
  return (pv - pc) / pc;
}

export interface Counts {
  entered: number;
  converted: number;
}

/**
 * exp(log(pv/pc) ± z·se) − 1 with se² = 1/xv − 1/nv + 1/xc − 1/nc (the delta method on the log of the
 * ratio). Null when either side has no conversion: the log of 0 has no interval.
 */
export function liftInterval(variant: Counts, control: Counts, z = Z95): Interval | null {
  const { converted: xv, entered: nv } = variant;
  const { converted: xc, entered: nc } = control;
  if (xv === 0 || xc === 0 || nv === 0 || nc === 0) return null;
  const logRatio = Math.log(xv / nv / (xc / nc));
  const se = Math.sqrt(1 / xv - 1 / nv + 1 / xc - 1 / nc);
  return { low: Math.exp(logRatio - z * se) - 1, high: Math.exp(logRatio + z * se) - 1 };
}

/** The z statistic of the pooled two-proportion test; null when a side is empty or the pooled rate is 0 or 1. */
export function zStatistic(variant: Counts, control: Counts): number | null {
  const { converted: x1, entered: n1 } = variant;
  const { converted: x2, entered: n2 } = control;
  if (n1 === 0 || n2 === 0) return null;
  const pooled = (x1 + x2) / (n1 + n2);
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2));
  if (se === 0) return null;
  return (x1 / n1 - x2 / n2) / se;
}

/** Two-sided p-value of the pooled two-proportion z-test: P(|Z| ≥ |z|) = erfc(|z| / √2). */
export function pValue(variant: Counts, control: Counts): number | null {
  const z = zStatistic(variant, control);
  return z === null ? null : Math.min(1, erfc(Math.abs(z) / Math.SQRT2));
}

/**
 * The complementary error function to ~1e-15 relative: for x < 2 the series of erf, whose terms are all
 * positive (erf(x) = 2/√π · e^(−x²) · Σ (2x²)ⁿ x / (1·3·…·(2n+1))), so nothing cancels; for x ≥ 2 the
 * continued fraction of erfc (Lentz), which converges fast there. p-values of 1e-300 stay exact in ratio.
 */
export function erfc(x: number): number {
  if (x < 0) return 2 - erfc(-x);
  if (x < 2) {
    let term = x;
    let sum = x;
    for (let n = 1; n < 200 && term > sum * 1e-17; n++) {
      term *= (2 * x * x) / (2 * n + 1);
      sum += term;
    }
    return 1 - (2 / Math.sqrt(Math.PI)) * Math.exp(-x * x) * sum;
  }
  // erfc(x) = e^(−x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …)))): the fraction b0 + a1/(b1 + a2/(b2 + …)).
  const tiny = 1e-300;
  let f = x;
  let c = x;
  let d = 0;
  for (let k = 1; k < 500; k++) {
    const a = k / 2;
    d = x + a * d;
    d = Math.abs(d) < tiny ? tiny : d;
    c = x + a / c;
    c = Math.abs(c) < tiny ? tiny : c;
    d = 1 / d;
    const delta = c * d;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  return Math.exp(-x * x) / Math.sqrt(Math.PI) / f;
}
