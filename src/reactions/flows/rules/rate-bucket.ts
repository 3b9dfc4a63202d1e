/** A scheduled flow's send rate (sendRatePerSecond) as a token bucket, refilled with the clock. */
export interface Bucket {
  tokens: number;
  at: number;
}

/** The bucket of `key`, refilled at `rate` per second of the clock, holding at most one second's worth. */
export function refill(buckets: Map<string, Bucket>, key: string, rate: number, now: number): Bucket {
  let bucket = buckets.get(key);
  if (!bucket) buckets.set(key, (bucket = { tokens: rate, at: now }));
  bucket.tokens = Math.min(rate, bucket.tokens + (Math.max(0, now - bucket.at) * rate) / 1000);
  bucket.at = now;
  return bucket;
}
