/**
 * A trigger window's rows, and the rules a trigger row is decided by. The rows of (start, end] come from the
 * trigger (untrusted, on a connection of its own) and, for a segment filter, the segment's members; each
 * row is then decided by rules/decide.ts against the contact state and the facts of the window (send keys
 * used, event times), read together by the decision pipeline (decision-pipeline.ts).
 */
import type { Row } from '../../../db/sql.js';
import { microsParam } from '../../../db/database.js';
import type { OrgStorage } from '../../../db/org-storage.js';
import { normalizeEmail } from '../../../core/domain.js';
import type { Metrics } from '../../../ops/metrics.js';
import type { ProfileIndex } from '../../../events/profiles/profile-index.js';
import { eventTimes } from '../../../events/compaction/event-times.js';
import { YIELD_EVERY, yieldNow } from '../../../db/yield-now.js';
import { QueryFailed, runSandboxed, windowOf, withSandbox } from '../../triggers/sandbox.js';
import type { LiveQuery, TriggerStore } from '../../triggers/trigger-store.js';
import type { FlowDefinition } from '../../../generated/flow.js';
import type { Decision, RenderedDecision, RunState } from '../rules/decision.js';
import { decide, resolveEmail, textOf } from '../rules/decide.js';
import type { SendStore } from '../store/send-store.js';
import type { Folded } from './contact-fold.js';
import type { DecisionPipeline } from './decision-pipeline.js';

/** A segment may return this many rows per trigger row a run may take (it lists contacts, not events). */
export const SEGMENT_ROWS_PER_TRIGGER_ROW = 10;

export interface WindowRead {
  rows: Row[];
  /** Where the window read ends (the whole window, or a commit inside it). */
  end: bigint;
  /** Emails of the flow's segment. */
  segment?: Set<string>;
}

export interface WindowDeps {
  orgs: OrgStorage;
  sends: Pick<SendStore, 'usedKeys'>;
  profiles: Pick<ProfileIndex, 'find'>;
  metrics: Pick<Metrics, 'triggerQuerySeconds'>;
  timeoutMs: number;
  /** TRIGGER_MAX_ROWS. */
  maxRows: number;
}

/**
 * The trigger rows of (start, end], at most TRIGGER_MAX_ROWS of them. A window with more is narrowed to
 * a compaction commit inside it (halving the time span each try) and the rest is left to the next
 * runs: every window still ends on a commit, so every event still falls in exactly one window.
 */
export async function readWindow(deps: WindowDeps, org: string, trigger: LiveQuery, segment: LiveQuery | undefined, start: bigint, end: bigint): Promise<WindowRead> {
  const { timeoutMs, maxRows } = deps;
  const db = deps.orgs.org(org);
  const stopQueryTimer = deps.metrics.triggerQuerySeconds.startTimer();
  let upTo = end;
  let page = await withSandbox(db, timeoutMs, (c) => runSandboxed(c, trigger.checked, windowOf(start, upTo), maxRows));
  while (page.truncated) {
    const split = await commitInside(deps.orgs, org, start, upTo);
    if (split === undefined) {
      throw new QueryFailed(
        `one compaction commit alone gives more than ${maxRows} trigger rows (TRIGGER_MAX_ROWS), so the window cannot be ` +
          'narrowed further: make the trigger return fewer rows per event (and read only its window), or raise TRIGGER_MAX_ROWS',
      );
    }
    upTo = split;
    page = await withSandbox(db, timeoutMs, (c) => runSandboxed(c, trigger.checked, windowOf(start, upTo), maxRows));
  }
  stopQueryTimer();
  if (!segment) return { rows: page.rows, end: upTo };
  return { rows: page.rows, end: upTo, segment: await readSegment(deps, org, segment, start, upTo) };
}

/** The live version of the flow's segment filter, if it has one (QueryFailed when that segment has none). */
export function liveSegment(triggers: Pick<TriggerStore, 'live'>, org: string, flow: FlowDefinition): LiveQuery | undefined {
  const name = flow.segmentFilter?.segment;
  if (name === undefined) return undefined;
  const segment = triggers.live(org, 'segment', name);
  if (!segment) throw new QueryFailed(`segment ${name} has no valid version`);
  return segment;
}

/** The e-mails of a segment's members over the window (start, end]. */
export async function readSegment(deps: WindowDeps, org: string, segment: LiveQuery, start: bigint, end: bigint): Promise<Set<string>> {
  const segmentLimit = deps.maxRows * SEGMENT_ROWS_PER_TRIGGER_ROW;
  const members = await withSandbox(deps.orgs.org(org), deps.timeoutMs, (c) => runSandboxed(c, segment.checked, windowOf(start, end), segmentLimit));
  if (members.truncated) throw new QueryFailed(`the segment returns more than ${segmentLimit} rows (${SEGMENT_ROWS_PER_TRIGGER_ROW} × TRIGGER_MAX_ROWS)`);
  return new Set(members.rows.map((r) => normalizeEmail(String(r.email ?? ''))));
}

/** A commit (visible_at) of the org strictly inside (start, end): the latest in the first half, else the first one. */
async function commitInside(orgs: OrgStorage, org: string, start: bigint, end: bigint): Promise<bigint | undefined> {
  const [row] = await orgs.org(org).all<{ below: bigint | null; first: bigint | null }>(
    `SELECT epoch_us(max(visible_at) FILTER (WHERE visible_at <= $4)) AS below, epoch_us(min(visible_at)) AS first
       FROM events WHERE org = $1 AND visible_at > $2 AND visible_at < $3`,
    [org, microsParam(start), microsParam(end), microsParam(start + (end - start) / 2n)],
  );
  return row?.below ?? row?.first ?? undefined;
}

/**
 * The window's rows through the pipeline's decide stage: the contacts' state and the window's facts
 * (send keys used, event times), then `decide` for each row. `seen` gets the decisions before rendering
 * (the simulation reads their template data).
 */
export function decideWindow(
  deps: WindowDeps,
  pipeline: Pick<DecisionPipeline, 'decide'>,
  org: string,
  flow: FlowDefinition,
  read: WindowRead,
  start: bigint,
  folded: Folded,
  seen?: (decided: Decision[]) => void,
): Promise<RenderedDecision[]> {
  const now = folded.at;
  const profile: RunState['profile'] = (type, value) => deps.profiles.find(org, type, value);
  const emails = [...new Set(read.rows.map((r) => resolveEmail(textOf(r.identity), textOf(r.identity_type), { profile })).filter((e): e is string => e !== null))];
  const eventIds = [...new Set(read.rows.map((r) => textOf(r.event_id)).filter((e): e is string => e !== null))];
  const facts = () => Promise.all([deps.sends.usedKeys(org, flow.id, eventIds), eventTimes(deps.orgs.org(org), org, eventIds, { start, end: read.end })]);
  return pipeline.decide(org, flow, emails, folded, facts, async (contacts, [keys, times]) => {
    const state: RunState = { org, flow, now, ...(read.segment ? { segment: read.segment } : {}), keys, eventTimes: times, ...contacts };
    const decided = await decideAll(read.rows, state);
    seen?.(decided);
    return decided;
  });
}

/** `decide` for every row, yielding now and then: a run may hold 100,000 rows, and collect and lookups share this thread. */
async function decideAll(rows: readonly Row[], state: RunState): Promise<Decision[]> {
  const decisions: Decision[] = [];
  for (const row of rows) {
    decisions.push(decide(row, state));
    if (decisions.length % YIELD_EVERY === 0) await yieldNow();
  }
  return decisions;
}
