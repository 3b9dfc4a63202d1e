/**
 * What a flow would do now for one contact (POST …/flows/{id}/simulate): the trigger rows of (start, end]
 * that resolve to `email`, each decided and rendered by the decision pipeline as a run would decide it now,
 * against what is stored (its sends, consent, caps, suppression) — and nothing recorded or sent: the
 * pipeline's commit is not reached.
 */
import type { Row } from '../../../db/sql.js';
import type { FlowDefinition } from '../../../generated/flow.js';
import { QueryFailed } from '../../triggers/sandbox.js';
import type { LiveQuery, TriggerStore } from '../../triggers/trigger-store.js';
import { matches } from '../rules/condition.js';
import type { Decision, RenderedDecision, RunState, ToDefer, ToRender } from '../rules/decision.js';
import { resolveEmail, textOf } from '../rules/decide.js';
import type { DecisionPipeline } from './decision-pipeline.js';
import { decideWindow, liveSegment, readWindow, type WindowDeps } from './trigger-window.js';

/** What a simulation found: the contact's trigger rows and what a run would decide for each, rendered. */
export interface Simulation {
  rows: Row[];
  decisions: RenderedDecision[];
  /** Per decision, the index of the flow's branch it takes, or null. */
  branches: Array<number | null>;
  /** The window's end as read (earlier than asked when the window held more than TRIGGER_MAX_ROWS rows). */
  end: bigint;
}

export interface SimulateDeps extends WindowDeps {
  triggers: Pick<TriggerStore, 'live'>;
  pipeline: Pick<DecisionPipeline, 'folded' | 'decide'>;
}

/** `flow` may be a draft; `trigger` the version to run (default: the live one). */
export async function simulate(deps: SimulateDeps, org: string, flow: FlowDefinition, email: string, window: { start: bigint; end: bigint }, trigger?: LiveQuery): Promise<Simulation> {
  const query = trigger ?? (flow.trigger === undefined ? undefined : deps.triggers.live(org, 'trigger', flow.trigger));
  if (!query) throw new QueryFailed(flow.trigger === undefined ? `a ${flow.category} flow has no trigger` : `trigger ${flow.trigger} has no valid version`);
  const segment = liveSegment(deps.triggers, org, flow);
  // A person asks about now: every event acknowledged before the question is folded first, and its rows
  // are in the window read after (contact-fold.ts); a run reads only compacted rows and needs less.
  const folded = await deps.pipeline.folded('simulate', org);
  const read = await readWindow(deps, org, query, segment, window.start, window.end);
  const profile: RunState['profile'] = (type, value) => deps.profiles.find(org, type, value);
  const rows = read.rows.filter((r) => resolveEmail(textOf(r.identity), textOf(r.identity_type), { profile }) === email);
  let decided: Decision[] = [];
  const decisions = await decideWindow(deps, deps.pipeline, org, flow, { ...read, rows }, window.start, folded, (d) => (decided = d));
  // The branch whose message each send would be (none: a variant's own message, or the flow's).
  const branches = decided.map((d) => (d.outcome === 'sent' || d.outcome === 'deferred_quiet_hours' ? branchOf(flow, d) : null));
  return { rows, decisions, branches, end: read.end };
}

/** The index of the branch a decided message comes from (messageFor's choice), or null. */
function branchOf(flow: FlowDefinition, d: ToRender | ToDefer): number | null {
  const variant = flow.experiment?.variants.find((v) => v.label === d.variant);
  if (variant?.message || !flow.branches) return null;
  const index = flow.branches.findIndex((b) => matches(b.when, d.template.data));
  return index === -1 ? null : index;
}
