/**
 * Long loops on the service's one thread yield every so often, so HTTP handlers (collect, lookups) keep
 * answering while a large compaction batch is planned and appended.
 */
export const YIELD_EVERY = 500;

export function yieldNow(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
