/**
 * One engine's work per org (the runner's due flows of an org, a steps pass and its follow-ups, a release
 * of deferred sends, an org's scheduled flows): at most one job of an org going at once; asked for again
 * while one goes, it goes once more right after, so what the ask announced is never left to the next tick.
 * Jobs of different orgs go side by side, each taking its org's turns (org-turns.ts) for its pieces: the
 * turns share the capacity among orgs, not the engine's loop, which before waited for each org in a row
 * (one org's 60 flows ran before another's one).
 */
export class OrgJobs {
  private readonly going = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private closed = false;

  constructor(
    private readonly job: (org: string) => Promise<void>,
    private readonly onError: (error: unknown, org: string) => void,
  ) {}

  /** Starts the org's job, or has it go once more after the one going; resolves when the org's job has ended. */
  offer(org: string): Promise<void> {
    if (this.closed) return Promise.resolve();
    const going = this.going.get(org);
    if (going) {
      this.again.add(org);
      return going;
    }
    const run = (async () => {
      do {
        this.again.delete(org);
        await this.job(org).catch((error: unknown) => this.onError(error, org));
      } while (this.again.has(org) && !this.closed);
    })().finally(() => this.going.delete(org));
    this.going.set(org, run);
    return run;
  }

  /** No job starts from now; resolves when those going have ended. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.going.values());
  }
}
