/**
 * Coalesces profile refreshes: compaction batches only enqueue the contacts they touched, and one
 * refresh at a time recomputes everything queued. Under load many batches share one refresh, so
 * profile recomputation no longer sits inside each compaction transaction's critical path.
 */
import { StorageUnavailable } from '../../core/unavailable.js';
import type { ContactKey, ProfileMaterializer } from './profile-materializer.js';

/**
 * The next refresh starts at least MIN_INTERVAL_MS, and PAUSE_PER_REFRESH times as long as the last
 * refresh took, after the last one ended, but never more than MAX_PAUSE_MS later. Short refreshes
 * then hold DuckDB (one connection) at most a quarter of the time, so compaction keeps up; on an idle
 * service the pause is MIN_INTERVAL_MS. The cap is for freshness: an event waits for the pause and the
 * refresh, so an uncapped pause made it 4× the refresh, and when refreshing the contacts of a second of
 * traffic took more than a quarter of a second (many distinct contacts, a loaded machine) the queue grew
 * until contacts repeated. Issue 37, 2 cores at load average 27-39, collect at ~200-260 req/s over 20,000
 * contacts, alternated: event → profile p50 13.7, 9.4 s uncapped; 6.4, 9.0 s capped (p99 20.6, 14.9 →
 * 9.0, 14.0 s); the refresh's share of it 11.8, 7.3 → 3.0, 3.1 s, the commit's rising 1.9, 2.1 → 3.4, 5.9 s.
 */
const MIN_INTERVAL_MS = 50;
const PAUSE_PER_REFRESH = 3;
const MAX_PAUSE_MS = 250;
/**
 * While compaction works through a backlog, refreshes run at most this often: profiles are stale until
 * the backlog is drained anyway, and DuckDB's time goes to draining it (a 300,000-event drain: 31k
 * events/s without refreshes, 25k with refreshes paced as above, 15k with back-to-back refreshes).
 */
const BACKLOG_INTERVAL_MS = 5_000;
/**
 * A refresh the storage process could not make (it ended under it, or is restarting) is made again, its
 * waiters told only then: told at once, a read-your-writes lookup answered from profiles without its event
 * (a 404 for a new contact), and the contacts stayed stale until their next event. Each try waits for the
 * new process up to the storage client's call wait (10 s), so this many tries outlast any restart.
 */
const TRIES_WHILE_STORAGE_RESTARTS = 6;

export class ProfileRefresher {
  private queued: ContactKey[] = [];
  /** Told once the contacts queued with them are in the serving index. */
  private waiting: Array<() => void> = [];
  private running: Promise<void> | undefined;
  private lastEnded = Number.NEGATIVE_INFINITY;
  private lastTook = 0;
  /** As told by the latest enqueue. */
  private backlog = false;
  /** Ends the current wait early when the due time may have moved closer. */
  private wake: (() => void) | undefined;
  /** Enqueues with contacts so far, and how many of them are in the serving index (whenRefreshed). */
  private enqueued = 0;
  private refreshed = 0;
  private progress: Array<{ upTo: number; resolve: () => void }> = [];
  /** Per org, the latest enqueue with one of its contacts: an org's decisions wait for their own. */
  private readonly lastOf = new Map<string, number>();
  /** Tries in a row that found the storage process away. */
  private storageAway = 0;

  constructor(
    private readonly materializer: ProfileMaterializer,
    private readonly onError: (error: unknown) => void,
    private readonly backlogIntervalMs = BACKLOG_INTERVAL_MS,
  ) {}

  /**
   * `backlog`: the compaction batch that touched these contacts was read from a backlog. `refreshed`:
   * called once they are in the serving index (at once when there are none), whether or not the refresh
   * succeeded (a failed one is logged; the next touch refreshes them again).
   */
  enqueue(keys: ContactKey[], options: { backlog?: boolean; refreshed?: () => void } = {}): void {
    if (keys.length === 0) options.refreshed?.();
    else {
      const upTo = ++this.enqueued;
      for (const key of keys) this.lastOf.set(key.org, upTo);
      this.waiting.push(() => this.reached(upTo));
      if (options.refreshed) this.waiting.push(options.refreshed);
    }
    for (const key of keys) this.queued.push(key);
    const backlogEnded = this.backlog && !options.backlog;
    this.backlog = options.backlog ?? false;
    if (backlogEnded) this.wake?.();
    // Nothing to refresh: a drain started now would end at once and hold `running` for a tick.
    if (this.queued.length === 0) return;
    this.running ??= this.drain();
  }

  /**
   * Resolves once the org's contacts enqueued so far are in the serving index (refreshes are done in
   * order, so those enqueued before them too), later ones not waited for (unlike `settled`, which under
   * steady traffic may not resolve while refreshes keep coming).
   */
  whenRefreshed(org: string): Promise<void> {
    const upTo = this.lastOf.get(org) ?? 0;
    if (this.refreshed >= upTo) return Promise.resolve();
    return new Promise((resolve) => this.progress.push({ upTo, resolve }));
  }

  private reached(upTo: number): void {
    this.refreshed = Math.max(this.refreshed, upTo);
    const done = this.progress.filter((p) => p.upTo <= this.refreshed);
    this.progress = this.progress.filter((p) => p.upTo > this.refreshed);
    for (const p of done) p.resolve();
  }

  /** Resolves when everything enqueued so far is in the serving index. */
  async settled(): Promise<void> {
    while (this.running) await this.running;
  }

  /**
   * Refreshes until the queue is empty. `running` is cleared in the same step as the last look at the
   * queue, with no await between: an enqueue after it starts a new run. (Cleared a microtask later, an
   * enqueue in between saw a run still going, and its contacts waited for the next enqueue.)
   */
  private async drain(): Promise<void> {
    try {
      while (this.queued.length > 0) {
        if (this.dueAt() > performance.now()) await this.untilDue();
        const keys = this.queued;
        const waiting = this.waiting;
        this.queued = [];
        this.waiting = [];
        const started = performance.now();
        const again = await this.refreshEachOrg(keys);
        if (again.length > 0 && ++this.storageAway < TRIES_WHILE_STORAGE_RESTARTS) {
          this.queued = [...again, ...this.queued];
          this.waiting = [...waiting, ...this.waiting];
        } else {
          if (again.length > 0) this.onError(new StorageUnavailable(`profiles of ${again.length} contacts not refreshed after ${this.storageAway} tries`));
          this.storageAway = 0;
          for (const refreshed of waiting) refreshed();
        }
        this.lastEnded = performance.now();
        this.lastTook = this.lastEnded - started;
      }
    } finally {
      this.running = undefined;
    }
  }

  /**
   * Each org's contacts on their own: one org's failure (a damaged database) is logged and leaves the
   * others refreshed. Answers the contacts to refresh again: those of orgs the storage process was away for.
   */
  private async refreshEachOrg(keys: ContactKey[]): Promise<ContactKey[]> {
    const byOrg = new Map<string, ContactKey[]>();
    for (const key of keys) {
      const ofOrg = byOrg.get(key.org);
      if (ofOrg) ofOrg.push(key);
      else byOrg.set(key.org, [key]);
    }
    const again: ContactKey[] = [];
    for (const orgKeys of byOrg.values()) {
      try {
        await this.materializer.refresh(orgKeys);
      } catch (error) {
        if (error instanceof StorageUnavailable) again.push(...orgKeys);
        else this.onError(error);
      }
    }
    return again;
  }

  private dueAt(): number {
    const pause = Math.min(MAX_PAUSE_MS, Math.max(MIN_INTERVAL_MS, PAUSE_PER_REFRESH * this.lastTook));
    return this.lastEnded + (this.backlog ? Math.max(pause, this.backlogIntervalMs) : pause);
  }

  private async untilDue(): Promise<void> {
    for (let wait = this.dueAt() - performance.now(); wait > 0; wait = this.dueAt() - performance.now()) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }
}
