/**
 * Who may run untrusted SQL in the storage process, and when. Each statement holds a thread of the
 * process's libuv pool (and DuckDB threads) for as long as it runs, and the service's own statements
 * (compaction, profile refreshes, flow writes) need threads too. So:
 * - at most `total` untrusted sessions run at once, at most `perOrg` of them for one org: one org's
 *   queries never take every slot, and the service keeps the rest of the pool;
 * - a caller waits for a slot only until the deadline it gives (process-database.ts: half its time): past it the
 *   answer is SandboxBusy, a capacity answer (503, retry), never a verdict on the SQL;
 * - an org whose query had to be killed (`strike`) is paused, 30 s after the first kill and twice as
 *   long after each further one within an hour (at most 10 min): SandboxPaused until then.
 * A freed slot goes to a waiter of the org running the fewest untrusted sessions, the oldest of them
 * first, skipping orgs at their own limit: one org's queue of waiters never stands in front of another
 * org's first query.
 */
import { SandboxBusy, SandboxPaused } from '../db/untrusted.js';

export interface GateLimits {
  total: number;
  perOrg: number;
}

/** Why these numbers: the storage process's pool has STORAGE_THREAD_POOL_SIZE (16) threads; half stay the service's. */
export const UNTRUSTED_LIMITS: GateLimits = { total: 8, perOrg: 2 };
const FIRST_PAUSE_MS = 30_000;
const MAX_PAUSE_MS = 10 * 60_000;
/** Strikes older than this are forgotten: an org that misbehaved once long ago starts again at 30 s. */
const STRIKE_MEMORY_MS = 60 * 60_000;

interface Waiter {
  org: string;
  admit: () => void;
}

export class UntrustedGate {
  private running = 0;
  private readonly perOrg = new Map<string, number>();
  private readonly waiters: Waiter[] = [];
  private readonly strikes = new Map<string, { count: number; last: number; until: number }>();

  constructor(
    private readonly limits: GateLimits = UNTRUSTED_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  /** A slot for `org`, waited for until `deadline` (epoch ms). Returns its release. */
  async enter(org: string, deadline: number): Promise<() => void> {
    const paused = this.pausedFor(org);
    if (paused > 0) throw new SandboxPaused(org, Math.ceil(paused / 1000));
    // A waiter's slot is taken when it is admitted, before it resumes, so no later caller takes it first.
    if (this.fits(org)) this.take(org);
    else await this.wait(org, deadline);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running--;
      const left = (this.perOrg.get(org) ?? 1) - 1;
      if (left > 0) this.perOrg.set(org, left);
      else this.perOrg.delete(org);
      this.admitNext();
    };
  }

  /** `org`'s query was killed: pause its untrusted SQL. */
  strike(org: string): void {
    const now = this.now();
    const previous = this.strikes.get(org);
    const count = previous && now - previous.last < STRIKE_MEMORY_MS ? previous.count + 1 : 1;
    this.strikes.set(org, { count, last: now, until: now + Math.min(MAX_PAUSE_MS, FIRST_PAUSE_MS * 2 ** (count - 1)) });
  }

  /** Milliseconds until `org` may run untrusted SQL again (0: now). */
  pausedFor(org: string): number {
    return Math.max(0, (this.strikes.get(org)?.until ?? 0) - this.now());
  }

  private take(org: string): void {
    this.running++;
    this.perOrg.set(org, (this.perOrg.get(org) ?? 0) + 1);
  }

  private fits(org: string): boolean {
    return this.running < this.limits.total && (this.perOrg.get(org) ?? 0) < this.limits.perOrg;
  }

  private wait(org: string, deadline: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        org,
        admit: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(
        () => {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          reject(new SandboxBusy());
        },
        Math.max(0, deadline - this.now()),
      );
      this.waiters.push(waiter);
    });
  }

  private admitNext(): void {
    let next = -1;
    let fewest = Number.POSITIVE_INFINITY;
    this.waiters.forEach((w, i) => {
      const running = this.perOrg.get(w.org) ?? 0;
      if (running < fewest && this.fits(w.org)) [next, fewest] = [i, running];
    });
    if (next === -1) return;
    const [waiter] = this.waiters.splice(next, 1);
    this.take(waiter!.org);
    waiter!.admit();
  }
}
