/**
 * Checks the machine starved (sql-checker.ts): their callers are told to retry while they go on, and
 * their outcomes are kept for a while under their org, kind and SQL, so a retry waits for that check
 * rather than start one the machine would starve again.
 */
import { withDeadline } from '../../core/deadline.js';
import { SandboxBusy } from '../../db/untrusted.js';
import type { CheckedSql } from './sql-guard.js';

/** How long the outcome of a starved check waits for its SQL to be sent again. */
const STARVED_OUTCOME_KEPT_MS = 60_000;
/** At most this many starved checks' outcomes are kept (the oldest goes first). */
const STARVED_KEPT = 64;

/** What a starved check's request holds: its key, and how its caller is answered (replaced here). */
export interface StarvedRequest {
  key: string;
  resolve: (checked: CheckedSql) => void;
  reject: (error: Error) => void;
}

export class StarvedChecks {
  /** Checks the machine starved, going on after their callers were told to retry, and their outcomes for a while. */
  private readonly outcomes = new Map<string, Promise<CheckedSql>>();

  /** The outcome of a starved check of the same SQL, if one goes on or ended lately. */
  outcome(key: string, timeoutMs: number): Promise<CheckedSql> | undefined {
    const starved = this.outcomes.get(key);
    // If it comes within this request's deadline.
    return starved
      ? withDeadline(starved, timeoutMs, () => new SandboxBusy('The same query is still being checked, and the machine is too busy to finish it yet; nothing was recorded. Try again.'))
      : undefined;
  }

  /**
   * Tells the caller of a starved check to try again, and keeps its outcome (when it comes) under its
   * key: the same SQL sent again gets it, not a new check that the machine would starve again.
   */
  goOn(request: StarvedRequest, cpu: number, elapsed: number): void {
    const tell = request.reject;
    const outcome = new Promise<CheckedSql>((resolve, reject) => ((request.resolve = resolve), (request.reject = reject)));
    if (this.outcomes.size >= STARVED_KEPT) this.outcomes.delete(this.outcomes.keys().next().value!);
    this.outcomes.set(request.key, outcome);
    const forget = () => {
      if (this.outcomes.get(request.key) === outcome) this.outcomes.delete(request.key);
    };
    outcome.then(
      () => setTimeout(forget, STARVED_OUTCOME_KEPT_MS).unref(),
      (error: Error) => (error instanceof SandboxBusy ? forget() : setTimeout(forget, STARVED_OUTCOME_KEPT_MS).unref()),
    );
    tell(new SandboxBusy(`The machine was too busy for this check: it had ${Math.round(cpu)} ms of CPU in ${Math.round(elapsed)} ms. It goes on: send the same query again for its verdict; nothing was recorded.`));
  }
}
