/**
 * A Compactor as the compactor tests build it: one shard, the real clock, fresh metrics and the
 * checkpoint in the orgs' directory, unless a test gives its own.
 */
import { join } from 'node:path';
import { SINGLE_SHARD } from '../../src/core/shard.js';
import { createContext } from '../../src/core/context.js';
import type { CompactorDeps } from '../../src/events/compaction/compaction.js';
import { Compactor } from '../../src/events/compaction/compactor.js';
import { CHECKPOINT_FILE, LogCheckpoint } from '../../src/storage/checkpoint.js';
import { createMetrics } from '../../src/ops/metrics.js';

export function testCompactor(orgsDir: string, deps: Pick<CompactorDeps, 'orgs' | 'log' | 'logger'> & Partial<CompactorDeps>): Compactor {
  return new Compactor({ checkpoint: new LogCheckpoint(join(orgsDir, CHECKPOINT_FILE)), shard: SINGLE_SHARD, ctx: createContext(), metrics: createMetrics(), ...deps });
}
