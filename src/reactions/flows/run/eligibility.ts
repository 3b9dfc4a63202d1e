/**
 * What a run would decide for one contact now if the flow's trigger fired for it (issue 41, the Audience
 * API's eligibility lookup): one trigger row for the contact — a new event, happening now — through the
 * same stages and rules as a run's rows (the fold, the contact's state, rules/decide.ts), with the flow's
 * segment read over the window its next run would read. Nothing is rendered, recorded or counted: the
 * pipeline's render and commit are not reached. The variant is the one a real send records: variant.ts
 * picks it from the flow and the contact alone.
 */
import { randomUUID } from 'node:crypto';
import type { FlowDefinition } from '../../../generated/flow.js';
import type { Decision } from '../rules/decision.js';
import { decide } from '../rules/decide.js';
import type { SimulateDeps } from './simulate.js';
import { liveSegment, readSegment } from './trigger-window.js';

/** The outcomes after which the contact is messaged: now, at the end of quiet hours, or by the flow's steps. */
const MESSAGED: ReadonlySet<Decision['outcome']> = new Set(['sent', 'deferred_quiet_hours', 'entered']);

export interface Eligibility {
  eligible: boolean;
  outcome: Decision['outcome'];
  reason: string | null;
  variant: string | null;
}

/** `window`: the segment's window (read only for a flow with a segment filter), as its next run would read it. */
export async function eligibility(deps: SimulateDeps, org: string, flow: FlowDefinition, email: string, window: () => Promise<{ start: bigint; end: bigint }>): Promise<Eligibility> {
  const segment = liveSegment(deps.triggers, org, flow);
  const folded = await deps.pipeline.folded('eligibility', org);
  let members: Set<string> | undefined;
  if (segment) {
    const { start, end } = await window();
    members = await readSegment(deps, org, segment, start, end);
  }
  const now = new Date(folded.at);
  // A new event id: no send key holds it, no stored event times it.
  const row = { identity: email, identity_type: 'email', event_id: `eligibility-${randomUUID()}`, ts: now, event_time: now, received_at: now };
  let decided: Decision | undefined;
  await deps.pipeline.decide(org, flow, [email], folded, async () => undefined, async (contacts) => {
    decided = decide(row, { org, flow, now: folded.at, ...(members ? { segment: members } : {}), keys: new Set(), eventTimes: new Map(), ...contacts });
    return [];
  });
  if (!decided) throw new Error('the decision pipeline did not decide');
  return { eligible: MESSAGED.has(decided.outcome), outcome: decided.outcome, reason: decided.reason, variant: decided.variant };
}
