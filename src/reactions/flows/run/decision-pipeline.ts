/**
 * The one decision pipeline (issue 38). Every source says what is due and which rows — a trigger window
 * (trigger-runs.ts), the message steps a pass reached (step-entries.ts), a chunk of an occurrence's members
 * (scheduled-sends.ts), the sends deferred by quiet hours whose end came (deferred-sends.ts) — and hands
 * them here, in a turn of the org (org-turns.ts), where they go through one order:
 *
 *   the fold (contact-fold.ts: every event acknowledged before the decision is folded into profiles)
 *     → contacts → contact state (contact-state.ts) → the rules (rules/) → rendered messages (render/)
 *     → recorded with the source's own rows in ONE transaction (store/) → after the commit: sends queued,
 *       holdouts' profiles refreshed, deferred sends and step entries noted due, outcomes counted.
 *
 * So a new rule is written once in rules/ and holds for every source, and what follows a commit is done
 * in one place. The pipeline holds no state of its own; the role builds it once (roles/flows.ts).
 */
import type { Context } from '../../../core/context.js';
import { assertNever } from '../../../core/domain.js';
import type { ContactKey } from '../../../events/profiles/profile-materializer.js';
import type { FlowDefinition } from '../../../generated/flow.js';
import type { Metrics } from '../../../ops/metrics.js';
import type { Decision, RenderedDecision } from '../rules/decision.js';
import { releaseCheck, type Released } from '../rules/release-check.js';
import { renderDecisions, type TemplateRenderer } from '../render/template-renderer.js';
import type { PendingSend, SendDispatcher } from '../send/send-dispatcher.js';
import type { ContactFold, DecisionSource, Folded } from './contact-fold.js';
import { type ContactState, contactState, type ContactStateDeps, releaseState } from './contact-state.js';
import type { DueAt } from './due-at.js';

export interface PipelineDeps extends ContactStateDeps {
  /** Where a decision waits for the events acknowledged before it to be folded. */
  fold: Pick<ContactFold, 'untilFolded'>;
  renderer: Pick<TemplateRenderer, 'render'>;
  dispatcher: Pick<SendDispatcher, 'enqueue'>;
  metrics: Pick<Metrics, 'flowDecisions'>;
  ctx: Context;
  /** Holdouts' profiles are folded again (their entry is a fact of the profile). */
  refreshProfiles(keys: ContactKey[]): void;
  /** Per org, when its deferred sends are due (deferred-sends.ts releases them then). */
  deferredDue: DueAt;
  /** Per org, when its step entries are due (step-entries.ts moves them then). */
  stepsDue: DueAt;
}

/** What a source committed, for what follows the commit. */
export interface Committed {
  /** New decisions, each with its flow (a run's, a chunk's, a pass's message steps). */
  decisions?: ReadonlyArray<{ flowId: string; decision: RenderedDecision }>;
  /** Outcomes recorded beside them (a step's exit or skip, a deferred send's release), counted. */
  outcomes?: readonly string[];
  /** Sends those made pending (deferred sends released). */
  released?: readonly PendingSend[];
}

export class DecisionPipeline {
  constructor(private readonly deps: PipelineDeps) {}

  /**
   * The first stage, before a source reads which contacts and rows are due: resolves once every event
   * acknowledged so far is folded, its `at` the decision's now; throws FoldBehind past the bound (the
   * source leaves its work where it was and tries again).
   */
  folded(source: DecisionSource, org: string): Promise<Folded> {
    return this.deps.fold.untilFolded(source, org);
  }

  /**
   * Contact state → the source's rules → rendered messages, for rows of one flow, at `folded.at`. `facts`: what the source
   * reads beside the contacts (send keys, event times), asked together with them — the org's database
   * answers one statement at a time, and a compaction commit queued between two would be waited for twice.
   */
  async decide<F>(org: string, flow: FlowDefinition, emails: string[], folded: Folded, facts: () => Promise<F>, rules: (state: ContactState, facts: F) => Promise<Decision[]>): Promise<RenderedDecision[]> {
    const [known, state] = await Promise.all([facts(), contactState(this.deps, org, flow, emails, folded)]);
    // Templates render on the renderer's thread, within its limits; a template over them fails its row.
    return renderDecisions(this.deps.renderer, await rules(state, known));
  }

  /** Deferred sends of one flow checked again at the end of quiet hours (rules/release-check.ts): nothing to render, the message is kept. */
  async recheck(org: string, flow: FlowDefinition, sends: ReadonlyArray<PendingSend>, folded: Folded): Promise<Released[]> {
    const state = await releaseState(this.deps, org, flow, [...new Set(sends.map((s) => s.email))], folded);
    return sends.map((s) => releaseCheck({ sendId: s.sendId, email: s.email, channel: s.message.channel }, folded.at, state));
  }

  /**
   * The source's transaction (its own rows with the decisions, SendStore.record), then what follows it.
   * `write` returns undefined when it wrote nothing (the source moved on meanwhile): nothing follows then.
   */
  async commit<R>(org: string, write: () => Promise<R | undefined>, committed: (result: R) => Committed): Promise<R | undefined> {
    const result = await write();
    if (result !== undefined) this.afterCommit(org, committed(result));
    return result;
  }

  /** What follows a commit: sends queued, holdouts' profiles, deferred and step entries due, outcomes counted. */
  afterCommit(org: string, committed: Committed): void {
    const sends: PendingSend[] = [...(committed.released ?? [])];
    const holdouts: ContactKey[] = [];
    let deferredUntil = Infinity;
    let stepsDue = false;
    for (const outcome of committed.outcomes ?? []) this.deps.metrics.flowDecisions.inc({ outcome });
    for (const { flowId, decision: d } of committed.decisions ?? []) {
      this.deps.metrics.flowDecisions.inc({ outcome: d.outcome });
      switch (d.outcome) {
        case 'sent':
          sends.push({ sendId: d.sendId, org, flowId, email: d.email, eventId: d.eventId, variant: d.variant, message: d.message });
          break;
        case 'holdout':
          holdouts.push({ org, email: d.email, sent: { flowId, variant: d.variant, delivered: false } });
          break;
        case 'deferred_quiet_hours':
          deferredUntil = Math.min(deferredUntil, d.dueAt);
          break;
        case 'entered':
          stepsDue = true;
          break;
        case 'no_identity':
        case 'failed':
        case 'duplicate':
        case 'suppressed':
        case 'backfill':
        case 'too_old':
        case 'unsubscribed':
        case 'excluded_by_segment':
        case 'reentry_blocked':
        case 'frequency_capped':
          break;
        default:
          assertNever(d);
      }
    }
    this.deps.dispatcher.enqueue(sends);
    if (holdouts.length > 0) this.deps.refreshProfiles(holdouts);
    if (deferredUntil < Infinity) this.deps.deferredDue.note(org, deferredUntil);
    if (stepsDue) this.deps.stepsDue.note(org, this.deps.ctx.clock.now());
  }
}

/** The decisions of one flow, as `Committed` names them. */
export function ofFlow(flowId: string, decisions: readonly RenderedDecision[]): Committed['decisions'] {
  return decisions.map((decision) => ({ flowId, decision }));
}
