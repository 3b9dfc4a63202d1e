/**
 * Has due flows run (issue 37, finding 5): each look notes the due flows (run-schedule.ts), and each org
 * with one gets a job (org-jobs.ts) that runs its due flows one per turn of the org (org-turns.ts), the
 * flow due longest first. Orgs take turns round-robin: one org's 60 due flows hold another org's one back
 * by the turns running at that moment at most, not by 60 runs. A look does not wait for the runs, so a
 * commit of another org is looked at while an org's runs go on.
 *
 * Before, one loop ran every due flow of every org one after another: with 60 one-second flows in one org,
 * another org's flow did not run for minutes.
 */
import type { Clock } from '../../../core/context.js';
import type { FlowRecord } from '../store/flow-store.js';
import { OrgJobs } from './org-jobs.js';
import type { OrgTurns } from './org-turns.js';
import { RunSchedule, runsOnCommit } from './run-schedule.js';

export interface DueRunsDeps {
  turns: Pick<OrgTurns, 'run' | 'settled'>;
  clock: Clock;
  flows: { live(): FlowRecord[]; find(org: string, id: string): FlowRecord | undefined };
  /** One run of the live flow, called in a turn of its org; `more` when its window was cut at TRIGGER_MAX_ROWS. */
  run(flow: FlowRecord): Promise<{ more?: boolean }>;
  onError(error: unknown, org: string, flow?: string): void;
}

export class DueRuns {
  private readonly schedule = new RunSchedule();
  private readonly jobs: OrgJobs;
  private closing = false;

  constructor(private readonly deps: DueRunsDeps) {
    this.jobs = new OrgJobs(
      (org) => this.runOrg(org),
      (err, org) => deps.onError(err, org),
    );
  }

  /**
   * Notes the flows due now (`committed`: orgs that stored new events since the last look) and has each
   * org with a due flow run them. Returns the orgs' jobs, which end when their due flows have run (tests).
   */
  look(committed: ReadonlySet<string>): Promise<void> {
    const orgs = this.schedule.note(this.deps.flows.live(), committed, this.deps.clock.now());
    return Promise.all(orgs.map((org) => this.jobs.offer(org))).then(() => undefined);
  }

  /** No run starts from now; resolves when the runs in progress have ended. */
  async close(): Promise<void> {
    this.closing = true;
    await this.jobs.close();
  }

  /** The org was deleted (its flows forgotten already): forgets its schedule, waits for its runs in progress. */
  async forget(org: string): Promise<void> {
    this.schedule.forget(org);
    await this.deps.turns.settled(org);
  }

  /** The org's due flows, each in a turn of its own: between them, other work of the org and other orgs take theirs. */
  private async runOrg(org: string): Promise<void> {
    while (!this.closing && this.schedule.has(org)) await this.deps.turns.run(org, () => this.runNext(org));
  }

  private async runNext(org: string): Promise<void> {
    const id = this.closing ? undefined : this.schedule.take(org, this.deps.clock.now());
    if (id === undefined) return;
    const flow = this.deps.flows.find(org, id);
    // Paused or deleted since it became due.
    if (flow?.status !== 'live') return;
    const summary = await this.deps.run(flow).catch((err: unknown) => {
      this.deps.onError(err, org, id);
      return undefined;
    });
    // The window was cut at TRIGGER_MAX_ROWS: the rest runs next, not an interval later.
    if (summary?.more && runsOnCommit(flow.definition)) this.schedule.again(flow);
  }
}
