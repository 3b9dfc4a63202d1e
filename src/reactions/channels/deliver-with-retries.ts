/**
 * The retry loop around one channel (SPEC 8): retry what is worth retrying, with exponential backoff
 * and full jitter (so receivers that failed together are not hit again together), stop at once on a
 * permanent failure, and dead-letter after the last attempt.
 */
import { assertNever } from '../../core/domain.js';
import type { AttemptOutcome, Channel, Delivery, DeliveryResult } from './types.js';

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  maxAttempts: number;
  /** Upper bound of the delay before the second attempt; doubles with each further attempt. */
  baseDelayMs: number;
  /** Cap on any delay, Retry-After included: a receiver cannot park a send for hours. */
  maxDelayMs: number;
}

export interface RetryDeps {
  sleep(ms: number): Promise<void>;
  /** In [0, 1). */
  random(): number;
  onAttempt?(attempt: number, outcome: AttemptOutcome): void;
}

/** The wait after attempt `attempt` (1-based): random() * min(max, base * 2^(attempt-1)), at least Retry-After. */
export function retryDelayMs(
  attempt: number,
  policy: RetryPolicy,
  random: () => number,
  retryAfterMs?: number,
): number {
  const backoff = random() * Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  if (retryAfterMs === undefined) return backoff;
  return Math.max(backoff, Math.min(retryAfterMs, policy.maxDelayMs));
}

export async function deliverWithRetries(
  channel: Channel,
  delivery: Delivery,
  policy: RetryPolicy,
  deps: RetryDeps,
): Promise<DeliveryResult> {
  let reason = 'no attempt made';
  for (let attempt = 1; attempt <= policy.maxAttempts; attempt++) {
    const outcome = await channel.attempt(delivery);
    deps.onAttempt?.(attempt, outcome);
    switch (outcome.kind) {
      case 'delivered':
        return { kind: 'delivered', attempts: attempt };
      case 'failed':
        return { kind: 'failed', attempts: attempt, reason: outcome.reason };
      case 'retry':
        reason = outcome.reason;
        if (attempt < policy.maxAttempts) {
          await deps.sleep(retryDelayMs(attempt, policy, deps.random, outcome.retryAfterMs));
        }
        break;
      default:
        return assertNever(outcome);
    }
  }
  return { kind: 'dead', attempts: policy.maxAttempts, reason };
}
