/**
 * The source of deferred sends (rules/decide.ts, quiet-hours.ts): an outbox row with status `deferred` and its
 * `due_at`, the end of the contact's quiet hours. When it is due, the decision pipeline checks the row again
 * (decision-pipeline.ts, rules/release-check.ts), as a new entry would be: a contact suppressed meanwhile is
 * `suppressed`, one unsubscribed from the flow's topic `unsubscribed`, one whose caps filled meanwhile
 * `frequency_capped`, one inside quiet hours again in the zone it names now deferred again to their end;
 * otherwise it is `sent` (nothing to render: the message was rendered when deferred). The row becomes
 * pending (or cancelled, or stays deferred) in one transaction with a decision row saying so, while no run of the org
 * decides (runs and releases share the org's turn), and only a row still deferred changes.
 *
 * Exactly once across crashes: a crash before that transaction leaves the row deferred, released at the
 * next start; after it, the row is pending like any other, and the dispatcher's outbox rules apply (sent
 * on the next start if the process died before delivering it). An erased contact's rows are gone.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Context } from '../../../core/context.js';
import { groupBy } from '../../../core/domain.js';
import type { Released } from '../rules/release-check.js';
import type { FlowStore } from '../store/flow-store.js';
import type { PendingSend, SendStore } from '../store/send-store.js';
import { FoldBehind, type Folded } from './contact-fold.js';
import type { DecisionPipeline } from './decision-pipeline.js';
import type { DueAt } from './due-at.js';
import { OrgJobs } from './org-jobs.js';
import type { OrgTurns } from './org-turns.js';

/** How often due orgs are looked at: a deferred send goes out within this of its due time. */
export const RELEASE_TICK_MS = 1000;

export class DeferredSends {
  private timer: NodeJS.Timeout | undefined;
  /** Per org, its release: orgs do not wait for each other's (each takes a turn of its org). */
  private readonly jobs = new OrgJobs(
    (org) => this.releaseOrg(org),
    (err, org) => this.deps.logger.error({ err, org }, 'releasing deferred sends failed'),
  );

  constructor(
    private readonly deps: {
      sends: Pick<SendStore, 'dueDeferred' | 'nextDeferred' | 'releaseDeferred'>;
      flows: Pick<FlowStore, 'get'>;
      /** The orgs' turns: a release takes one, so no run of the org decides meanwhile (org-turns.ts). */
      turns: Pick<OrgTurns, 'run'>;
      /** The decision pipeline every source feeds (decision-pipeline.ts). */
      pipeline: Pick<DecisionPipeline, 'folded' | 'recheck' | 'commit'>;
      /** Per org, when its next deferred send is due (a run that deferred some notes it through the pipeline). */
      due: DueAt;
      ctx: Context;
      logger: FastifyBaseLogger;
    },
  ) {}

  /** Sends of the org wait until `at` (a run deferred them, or a start found them). */
  noteDue(org: string, at: number): void {
    this.deps.due.note(org, at);
  }

  /** What earlier processes left deferred in these orgs (an org whose database does not open is loaded when it does). */
  async load(orgs: readonly string[]): Promise<void> {
    for (const org of orgs) {
      const next = await this.deps.sends.nextDeferred(org).catch((err: unknown) => {
        this.deps.logger.warn({ err, org }, 'reading deferred sends failed');
        return null;
      });
      if (next !== null) this.noteDue(org, next);
    }
  }

  start(): void {
    this.timer = setInterval(() => void this.releaseDue(), RELEASE_TICK_MS);
    this.timer.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.jobs.close();
  }

  forgetOrg(org: string): void {
    this.deps.due.forget(org);
  }

  /** Releases every org whose next deferred send is due, each in a turn of its own; resolves when they are done. */
  async releaseDue(): Promise<void> {
    const now = this.deps.ctx.clock.now();
    await Promise.all(this.deps.due.dueBy(now).map((org) => this.jobs.offer(org)));
  }

  private async releaseOrg(org: string): Promise<void> {
    const now = this.deps.ctx.clock.now();
    const at = this.deps.due.get(org);
    if (at === undefined || at > now) return;
    this.deps.due.forget(org);
    await this.release(org).catch((err: unknown) => {
      this.noteDue(org, now + RELEASE_TICK_MS * 10);
      // The fold behind: counted in audience_flow_fold_behind_total, not an error of this org.
      if (!(err instanceof FoldBehind)) this.deps.logger.error({ err, org }, 'releasing deferred sends failed; tried again shortly');
    });
  }

  /** The org's deferred sends due now, checked again and released; returns how many became pending. */
  release(org: string): Promise<number> {
    return this.deps.turns.run(org, async () => {
      const now = this.deps.ctx.clock.now();
      const due = await this.deps.sends.dueDeferred(org, now);
      // Consent, suppression, caps and zones as of every event acknowledged before the release.
      const folded = due.length > 0 ? await this.deps.pipeline.folded('deferred', org) : { kind: 'folded' as const, at: now };
      const outcomes: Released[] = [];
      for (const [flowId, rows] of groupBy(due, (r) => r.flowId)) outcomes.push(...(await this.check(org, flowId, rows, folded)));
      const write = () => this.deps.sends.releaseDeferred(org, outcomes, now);
      const pending = (await this.deps.pipeline.commit(org, write, (made) => ({ outcomes: outcomes.map((o) => o.outcome), released: due.filter((send) => made.has(send.sendId)) })))!;
      const next = await this.deps.sends.nextDeferred(org);
      if (next !== null) this.noteDue(org, next);
      return pending.size;
    });
  }

  private async check(org: string, flowId: string, rows: PendingSend[], folded: Folded): Promise<Released[]> {
    let flow;
    try {
      flow = this.deps.flows.get(org, flowId).definition;
    } catch {
      return rows.map((r) => ({ sendId: r.sendId, outcome: 'failed', reason: 'the flow was deleted during quiet hours' }));
    }
    return this.deps.pipeline.recheck(org, flow, rows, folded);
  }
}
