/**
 * Per org, when its next piece of held work is due: deferred sends (deferred-sends.ts) and entries in
 * their steps (step-entries.ts). The pipeline notes what a commit deferred or entered, the source that
 * releases it reads it. Built by the role before both, so neither needs the other.
 */
export class DueAt {
  private readonly due = new Map<string, number>();

  /** Work of the org is due at `at` (kept if earlier than what is known). */
  note(org: string, at: number): void {
    const known = this.due.get(org);
    if (known === undefined || at < known) this.due.set(org, at);
  }

  get(org: string): number | undefined {
    return this.due.get(org);
  }

  /** Orgs whose work is due by `now`. */
  dueBy(now: number): string[] {
    return [...this.due].filter(([, at]) => at <= now).map(([org]) => org);
  }

  forget(org: string): void {
    this.due.delete(org);
  }
}
