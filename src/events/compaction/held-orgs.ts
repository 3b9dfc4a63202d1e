/**
 * The orgs whose commit failed, held while the others go on: each keeps the position it may lack
 * records after (the checkpoint stays at or below it), and when it is tried again.
 */

/**
 * A held org is tried again after this long, doubling each time it fails again, up to the maximum; an
 * unavailable one (OrgUnavailable) every HELD_RETRY_MS: asking costs a stat of its files
 * (org-damage.ts), and a restored file is back within a second.
 */
const HELD_RETRY_MS = 1000;
const HELD_RETRY_MAX_MS = 30_000;

/** An org whose commit failed: the checkpoint stays at or below `from` until it commits again. */
export interface HeldOrg {
  /** Every record after this may be missing from its database (the checkpoint when it first failed). */
  from: number;
  /** Its database cannot be opened (OrgUnavailable), rather than a failure that may pass by itself. */
  damaged: boolean;
  retryAt: number;
  pauseMs: number;
}

export class HeldOrgs {
  private readonly orgs = new Map<string, HeldOrg>();

  get(org: string): HeldOrg | undefined {
    return this.orgs.get(org);
  }

  delete(org: string): void {
    this.orgs.delete(org);
  }

  [Symbol.iterator](): IterableIterator<[string, HeldOrg]> {
    return this.orgs.entries();
  }

  /** The lowest `from` of the held orgs (of those not damaged only, unless `damaged`); Infinity when none. */
  lowestFrom(damaged: boolean): number {
    return Math.min(...[...this.orgs.values()].filter((h) => damaged || !h.damaged).map((h) => h.from));
  }

  /** Holds `org` (again), from `checkpoint` the first time; true when it was not held before. */
  hold(org: string, damaged: boolean, checkpoint: number, now: number): boolean {
    const held = this.orgs.get(org);
    const pauseMs = held && !damaged ? Math.min(HELD_RETRY_MAX_MS, held.pauseMs * 2) : HELD_RETRY_MS;
    this.orgs.set(org, { from: held?.from ?? checkpoint, damaged, retryAt: now + pauseMs, pauseMs });
    return held === undefined;
  }
}
