/**
 * Collect's look at an org's tracking plans (issue 42): a custom event whose own properties break the
 * live plan for its name is stored with its reasons (`observe`: compaction counts them) or rejected into
 * quarantine (`enforce`). Reasons point into the event's own properties as the plan sees them
 * (`/properties/price`, as Segment's properties are) with the keyword and message; `inBody` points
 * them into the body as sent, for the answer.
 */
import type { ProblemDetail } from '../../core/errors.js';
import type { Environment } from '../../core/domain.js';
import type { PlanStore } from '../plans/plan-store.js';
import { type Body, isObject } from './to-log-entry.js';

export type Plans = Pick<PlanStore, 'check' | 'hasPlans'>;

/** For paths that never see plans (an org's fixture runs). */
export const NO_PLANS: Plans = { check: () => ({ kind: 'none' }), hasPlans: () => false };

export { PLAN_VIOLATION } from '../plans/plan-store.js';

export type PlanVerdict = { kind: 'pass' } | { kind: 'observed' | 'enforced'; reasons: ProblemDetail[] };

const PASS: PlanVerdict = { kind: 'pass' };
const ROOT = '/properties';

/** `event`: a valid event in this service's shape (a custom one: `properties.eventName`, `properties.properties`). */
export function planVerdict(plans: Plans, who: { org: string; environment: Environment }, event: Body): PlanVerdict {
  if (!plans.hasPlans(who.org) || event.event !== 'custom' || !isObject(event.properties)) return PASS;
  const { eventName, properties } = event.properties;
  if (typeof eventName !== 'string') return PASS;
  const checked = plans.check(who.org, who.environment, `custom_${eventName}`, properties);
  if (checked.kind !== 'violations') return PASS;
  const reasons = checked.violations.map((v) => ({ path: ROOT + v.pointer, message: `${v.keyword} ${v.message}` }));
  return { kind: checked.mode === 'enforce' ? 'enforced' : 'observed', reasons };
}

/** The reasons pointed into the body as sent: `base` is where the event's own properties are in it. */
export function inBody(reasons: ProblemDetail[], base: string): ProblemDetail[] {
  return reasons.map((r) => ({ path: base + r.path.slice(ROOT.length), message: `${r.message} (tracking plan)` }));
}
