/**
 * Deadlines for the suite. No test depends on how fast the machine is: a test waits for a condition, and the
 * deadline it gives up at is a generous budget scaled by ONE factor, TEST_TIME_SCALE (docs/testing.md).
 * A loaded machine or a slow CI runner sets it above 1; nothing else in the suite reads a speed from the
 * environment.
 */

/** Reads and validates TEST_TIME_SCALE: unset or empty is 1; otherwise a finite number ≥ 1. */
export function parseTimeScale(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === '') return 1;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 1) {
    throw new Error(`TEST_TIME_SCALE must be a number ≥ 1 (a multiplier of every test deadline), got ${JSON.stringify(raw)}`);
  }
  return value;
}

/** The factor every deadline of the suite is multiplied by, read once. */
export const TEST_TIME_SCALE = parseTimeScale(process.env.TEST_TIME_SCALE);

/** A deadline of `ms` on a quiet machine, scaled for this run. */
export function scaled(ms: number): number {
  return Math.round(ms * TEST_TIME_SCALE);
}

export interface WaitOptions {
  /** The budget on a quiet machine; scaled by TEST_TIME_SCALE. Default 5 s. */
  timeoutMs?: number;
  /** Pause between checks. Default 20 ms. */
  intervalMs?: number;
  /** What is awaited, for the failure message. */
  what?: string;
}

/**
 * Polls `check` until it returns a value other than undefined/false, or throws once the scaled deadline has
 * passed. The condition is checked once more after the deadline, so a slow check is never cut short.
 */
export async function waitFor<T>(check: () => Promise<T | undefined | false> | T | undefined | false, options: WaitOptions | number = {}): Promise<T> {
  const { timeoutMs = 5_000, intervalMs = 20, what = 'condition' } = typeof options === 'number' ? { timeoutMs: options } : options;
  const budget = scaled(timeoutMs);
  const deadline = Date.now() + budget;
  for (;;) {
    const late = Date.now() > deadline;
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (late) throw new Error(`${what} not met within ${budget} ms (TEST_TIME_SCALE=${TEST_TIME_SCALE})`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** A pause of `ms`, for pacing load (never as a deadline: use waitFor). */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `condition` every `intervalMs` until it holds or the scaled `withinMs` has passed; never throws,
 * so the caller asserts what it found.
 */
export async function until(condition: () => boolean, withinMs: number, intervalMs = 20): Promise<void> {
  const deadline = Date.now() + scaled(withinMs);
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, intervalMs));
}

/**
 * Polls `count` until it reaches `target` (answers true), or until it has not grown for the scaled `stallMs`
 * (answers false). For work whose pace is the machine's (hundreds of sends, each batch written behind the
 * org's other statements): the deadline is on progress, so a loaded machine that is slow but moving passes,
 * and one that stopped fails as early as a fixed deadline would.
 */
export async function whileProgressing(count: () => number | Promise<number>, target: number, stallMs: number, intervalMs = 20): Promise<boolean> {
  let best = -Infinity;
  let movedAt = Date.now();
  for (;;) {
    const n = await count();
    if (n >= target) return true;
    if (n > best) [best, movedAt] = [n, Date.now()];
    else if (Date.now() - movedAt > scaled(stallMs)) return false;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
