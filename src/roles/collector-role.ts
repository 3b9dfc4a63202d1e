/**
 * The collector role: the collect and batch endpoints, appending to the event log through a group
 * committer. Stateless beyond the partner credentials it keeps from the control plane, so any number of
 * collectors can run against one JetStream stream.
 */
import type { FastifyInstance } from 'fastify';
import { registerCollectRoutes } from '../routes/http/collect.js';
import type { Context } from '../core/context.js';
import { GroupCommitter } from '../events/log/group-commit.js';
import type { LogBackend } from '../events/log/types.js';
import type { Metrics } from '../ops/metrics.js';
import type { PartnerRegistry } from '../control/partner-registry.js';

export function registerCollectorRole(app: FastifyInstance, deps: { ctx: Context; log: LogBackend; registry: PartnerRegistry; metrics: Metrics }): GroupCommitter {
  const committer = new GroupCommitter(deps.log, { onWrite: (seconds) => deps.metrics.logAppendSeconds.observe(seconds) });
  registerCollectRoutes(app, { ctx: deps.ctx, registry: deps.registry, log: committer, metrics: deps.metrics });
  return committer;
}
