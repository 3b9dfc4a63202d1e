/**
 * Experiment assignment (SPEC 8): deterministic per (flow, contact), so a contact stays in one variant
 * across runs and restarts, and weighted: the hash is read as a number in [0, 1) and laid over the
 * cumulative weights.
 */
import { createHash } from 'node:crypto';
import type { Variant } from '../../../generated/flow.js';

export function pickVariant(flowId: string, email: string, variants: readonly Variant[]): Variant {
  const digest = createHash('sha256').update(`${flowId}\u0000${email}`).digest();
  // 48 bits are exact in a double and far finer than any weight.
  const point = digest.readUIntBE(0, 6) / 2 ** 48;
  const total = variants.reduce((sum, v) => sum + v.weight, 0);
  let upTo = 0;
  for (const variant of variants) {
    upTo += variant.weight / total;
    if (point < upTo) return variant;
  }
  return variants[variants.length - 1]!;
}
