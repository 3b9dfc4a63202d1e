/**
 * The fold barrier: a flow decision is made on contacts as of every event acknowledged before it (issue 38).
 * An event is acknowledged once its log record is durable (its 200), then compacted into the org's database
 * (compactor.ts) and its contact's profile refreshed into the serving index (profile-refresher.ts) — each a
 * few hundred ms behind under load. A decision read between the two saw a profile without the identify
 * sent with the event: its `timezone`, so quiet hours fell back to the org's zone (89 and 132 of 135 sent
 * inside quiet hours in two runs), and a wait's timeout fired before the order acknowledged 4 s earlier was
 * stored. So each source first takes the log's head (every acknowledged event is at or below it), waits for
 * compaction to reach it and for the profiles it touched to be refreshed, and only then reads contact state.
 * The wait is bounded: past it the decision is not made now (the source tries again), never made stale.
 */
import type { Clock } from '../../../core/context.js';
import { AppError } from '../../../core/errors.js';

/** Where "folded up to here" is told: the log's head, compaction's position, the profile refresher's. */
export interface FoldProgress {
  /** The highest log position stored: every event acknowledged so far is at or below it. */
  headSeq(): Promise<number>;
  /** Resolves once compaction committed every record up to `seq` and queued its contacts' profiles. */
  whenCompacted(seq: number): Promise<void>;
  /** Resolves once the org's profiles queued so far are in the serving index. */
  whenRefreshed(org: string): Promise<void>;
}

/** The four sources of decisions, and a person's simulation of one (the metrics' `source` label). */
export type DecisionSource = 'trigger' | 'step' | 'scheduled' | 'deferred' | 'simulate' | 'eligibility';

export interface FoldMetrics {
  flowFoldWaitSeconds: { observe(labels: { source: DecisionSource }, seconds: number): void };
  flowFoldBehind: { inc(labels: { source: DecisionSource }): void };
}

/** Proof that the contacts' events acknowledged before `at` are folded: contact-state.ts asks for one. */
export interface Folded {
  readonly kind: 'folded';
  /** The clock when the head was read: decisions after it see every event acknowledged before it. */
  readonly at: number;
}

/**
 * The fold did not reach the head within the bound: nothing is decided now. Each source leaves its work
 * where it was (a run's cursor, an entry's step, a chunk's members, a deferred send) and tries again.
 */
export class FoldBehind extends AppError {
  constructor(
    readonly source: DecisionSource,
    readonly waitedMs: number,
  ) {
    // An answer only where a person waits for the decision (a simulation): 503 profiles_behind.
    const then = source === 'simulate' || source === 'eligibility' ? 'ask again after Retry-After' : 'it is decided again shortly';
    super('profiles_behind', `events acknowledged before this ${source} decision were not folded into profiles within ${waitedMs} ms; ${then}`, {
      headers: { 'Retry-After': '5' },
    });
    this.name = 'FoldBehind';
  }
}

/**
 * Under steady load the profile delay is ~0.1–1 s (audience_profile_delay_seconds); a backlog being
 * drained refreshes every 5 s (profile-refresher.ts). 10 s covers both, and holds an org's turn no longer
 * than a slow flow run does; past it compaction is far behind and the decision waits for a later try.
 */
export const FOLD_WAIT_MAX_MS = 10_000;

export class ContactFold {
  constructor(
    private readonly progress: FoldProgress | undefined,
    private readonly metrics: FoldMetrics,
    private readonly clock: Clock,
    private readonly maxWaitMs = FOLD_WAIT_MAX_MS,
  ) {}

  /**
   * Resolves once every event of the org acknowledged so far is folded; throws FoldBehind past the bound.
   * Without compaction in this process (ROLES without it) there is nothing to wait for here. A trigger
   * run's rows are compacted events, and compaction keeps an org's log order: every event of the org
   * acknowledged before them is compacted too, so a run waits only for the org's profiles — never for
   * compaction to reach the log's head, which other orgs' load moves on (flow-fairness.test.ts).
   */
  async untilFolded(source: DecisionSource, org: string): Promise<Folded> {
    const at = this.clock.now();
    const progress = this.progress;
    if (!progress) return { kind: 'folded', at };
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), this.maxWaitMs)));
    const folded = (async () => {
      // An eligibility lookup answers as a run would now, on the profiles as they stand (its meta says how fresh).
      if (source !== 'trigger' && source !== 'eligibility') await progress.whenCompacted(await progress.headSeq());
      await progress.whenRefreshed(org);
      return 'folded' as const;
    })();
    const outcome = await Promise.race([folded, late]).finally(() => clearTimeout(timer));
    const waitedMs = performance.now() - started;
    this.metrics.flowFoldWaitSeconds.observe({ source }, waitedMs / 1000);
    if (outcome === 'late') {
      this.metrics.flowFoldBehind.inc({ source });
      throw new FoldBehind(source, Math.round(waitedMs));
    }
    return { kind: 'folded', at };
  }
}
