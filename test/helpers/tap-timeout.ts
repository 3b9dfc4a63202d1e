/**
 * Loaded before every test file (preload.mjs): the whole file's timeout, tap's
 * TAP_TIMEOUT (package.json "timeout", seconds), scaled by TEST_TIME_SCALE like every other deadline of
 * the suite. tap's config cannot read the environment; a root t.setTimeout tells the runner instead.
 * With the factor at 1, or outside tap's runner, or in a worker thread, it does nothing: tap is not loaded.
 */
import { isMainThread } from 'node:worker_threads';
import { TEST_TIME_SCALE } from './deadline.js';

const seconds = Number(process.env.TAP_TIMEOUT);
if (isMainThread && TEST_TIME_SCALE > 1 && seconds > 0) {
  const { t } = await import('tap');
  t.setTimeout(Math.round(seconds * 1000 * TEST_TIME_SCALE));
}
