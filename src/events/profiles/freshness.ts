/**
 * How fresh the serving index is, per org (issue 41, docs/audience-api.md "How fresh is an answer"):
 * the receipt time of the org's newest acknowledged event (told by this process's collect path) and of
 * its newest event whose profiles are refreshed (told by the storage role once the refresh after its
 * commit is done), and read-your-writes: whether the event with a messageId is reflected yet.
 *
 * Reflected means stored by compaction (the compactor's dedupe window holds its messageId, in either
 * environment) and the profile refresh queued by that commit done. The compactor is asked again after
 * each commit that wrote the org's events, until the caller's wait runs out; an id it never stored
 * (unknown, another org's, a typo) is answered as one not stored yet, after the same wait.
 */
import type { Compaction } from '../compaction/compaction.js';
import type { ProfileIndex } from './profile-index.js';
import type { ProfileRefresher } from './profile-refresher.js';

export interface Reflection {
  compaction: Pick<Compaction, 'holds'>;
  refresher: Pick<ProfileRefresher, 'whenRefreshed'>;
  /** Whether this process keeps the org's database (compacts it and refreshes its profiles). */
  owns(org: string): boolean;
}

export class Freshness {
  /** Per org, the receipt time of its first and newest acknowledged events since the process started. */
  private readonly firstAcked = new Map<string, number>();
  private readonly acked = new Map<string, number>();
  private readonly folded = new Map<string, number>();
  /** Per org, callers waiting for its next commit. */
  private readonly waiting = new Map<string, Set<() => void>>();
  private reflection: Reflection | undefined;
  private wantHead: ((org: string) => void) | undefined;

  constructor(private readonly index: Pick<ProfileIndex, 'newestSeen'>) {}

  /** The storage role: this process can tell whether an event of the orgs it keeps is reflected. */
  reflectWith(reflection: Reflection): void {
    this.reflection = reflection;
  }

  /**
   * A process that does not see every acknowledgement (NATS mode: other collectors write too) asks the
   * log for an org's newest record when its lag is wanted; the answer comes back through `acknowledged`.
   */
  askHeadsWith(want: (org: string) => void): void {
    this.wantHead = want;
  }

  /** Whether `reflects` can answer for the org here (false: this process keeps no compactor for it). */
  canReflect(org: string): boolean {
    return this.reflection?.owns(org) ?? false;
  }

  /** The collect path: events of the org received at `receivedAt` are durable and acknowledged. */
  acknowledged(org: string, receivedAt: number): void {
    const newest = this.acked.get(org);
    if (newest === undefined) this.firstAcked.set(org, receivedAt);
    if (newest === undefined || receivedAt > newest) this.acked.set(org, receivedAt);
  }

  /**
   * A commit stored events of these orgs, each received up to its time: stored is acknowledged (a shard
   * without the collector role learns of its orgs' events here), and their waiters ask again.
   */
  committed(newest: ReadonlyArray<readonly [org: string, receivedAt: number]>): void {
    for (const [org, receivedAt] of newest) {
      this.acknowledged(org, receivedAt);
      const wakers = this.waiting.get(org);
      if (!wakers) continue;
      this.waiting.delete(org);
      for (const wake of wakers) wake();
    }
  }

  /** The profiles of a commit holding the org's events received up to `receivedAt` are refreshed. */
  refreshed(org: string, receivedAt: number): void {
    if (receivedAt > (this.folded.get(org) ?? 0)) this.folded.set(org, receivedAt);
  }

  /**
   * Receipt time of the org's newest acknowledged event less that of its newest event in profiles (0: none
   * behind). The newest in profiles is the later of what refreshes here reported and the newest
   * `last_seen_at` of its profiles (loaded at start, or followed from the feed); with neither, the lag runs
   * from its first event acknowledged since the start. An `api` process beside separate collectors and
   * shards learns both from NATS (askHeadsWith, the feed's folded times); 0 until it has.
   */
  lagMs(org: string): number {
    this.wantHead?.(org);
    const acked = this.acked.get(org);
    if (acked === undefined) return 0;
    const folded = Math.max(this.folded.get(org) ?? Number.NEGATIVE_INFINITY, this.index.newestSeen(org));
    return Math.max(0, acked - (folded === Number.NEGATIVE_INFINITY ? this.firstAcked.get(org)! : folded));
  }

  /** Whether the event is reflected in the serving index, waiting for it up to `waitMs`. */
  async reflects(org: string, messageId: string, waitMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), waitMs)));
    try {
      return await Promise.race([this.untilReflected(org, messageId, timedOut), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async untilReflected(org: string, messageId: string, timedOut: Promise<false>): Promise<boolean> {
    const reflection = this.reflection;
    if (!reflection?.owns(org)) return timedOut;
    let done = false;
    void timedOut.then(() => (done = true));
    while (!done) {
      // Registered before asking: a commit that ends while the answer travels wakes this caller too.
      let wake = () => {};
      const next = new Promise<void>((resolve) => (wake = resolve));
      const wakers = this.waiting.get(org) ?? new Set();
      this.waiting.set(org, wakers.add(wake));
      try {
        if (await reflection.compaction.holds(org, messageId)) {
          await reflection.refresher.whenRefreshed(org, { awaited: true });
          return true;
        }
        await Promise.race([next, timedOut]);
      } finally {
        // Gone with its caller, whether or not a commit came.
        wakers.delete(wake);
        if (wakers.size === 0 && this.waiting.get(org) === wakers) this.waiting.delete(org);
      }
    }
    return false;
  }
}
