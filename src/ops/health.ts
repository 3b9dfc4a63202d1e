/**
 * The health model behind /readyz and /healthz.
 *
 * Readiness: every check passes, so this instance can serve now. Liveness: no check failed *fatally*,
 * so the process can still do its job without a restart. A NATS outage is not fatal (the client
 * reconnects by itself); a closed log is (nothing brings it back). The storage process is neither: it is
 * restarted when it ends, and collect and lookups never wait for it.
 *
 * Every check runs with a bounded time: a probe never hangs on a frozen NATS server or a stuck thread.
 * Concurrent probes share one run, so polling load balancers and supervisors cost one set of checks
 * at a time however often they ask.
 */

/**
 * What one check found. `fatal`: only a restart of the process can fix it. A passing check may carry a
 * `note` (and `details`) an operator should see, e.g. an org whose database cannot be opened.
 */
export type CheckOutcome = { ok: true; note?: string; details?: Record<string, string> } | { ok: false; reason: string; fatal: boolean };

export interface HealthCheck {
  /** Named in /readyz and /healthz answers, e.g. `log`. */
  readonly name: string;
  /** Why a check that did not answer in time failed, e.g. "JetStream did not answer a ping". */
  readonly silence: string;
  /** Whether not answering in time means the process cannot recover by itself. */
  readonly silenceIsFatal: boolean;
  /**
   * What it checks is not needed to serve (the storage process: collect and lookups do not wait for it):
   * a failure is reported as a note, and the process stays ready and live.
   */
  readonly advisory?: boolean;
  run(): Promise<CheckOutcome>;
}

export interface HealthReport {
  ready: boolean;
  live: boolean;
  checks: Record<string, CheckOutcome>;
}

/**
 * Under Kubernetes' default probe timeout (1 s), so a probe answers 503 with the reason rather than
 * being cut off by the prober without one.
 */
export const CHECK_TIMEOUT_MS = 750;

export class Health {
  private running: Promise<HealthReport> | undefined;

  constructor(
    private readonly checks: readonly HealthCheck[],
    private readonly timeoutMs = CHECK_TIMEOUT_MS,
  ) {}

  /** Runs every check at once (or joins the run in progress). Never rejects, never exceeds the timeout by much. */
  probe(): Promise<HealthReport> {
    this.running ??= this.runAll().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async runAll(): Promise<HealthReport> {
    const outcomes = await Promise.all(this.checks.map((check) => this.runOne(check)));
    const checks: Record<string, CheckOutcome> = {};
    this.checks.forEach((check, i) => (checks[check.name] = outcomes[i]!));
    return {
      ready: outcomes.every((outcome) => outcome.ok),
      live: outcomes.every((outcome) => outcome.ok || !outcome.fatal),
      checks,
    };
  }

  private async runOne(check: HealthCheck): Promise<CheckOutcome> {
    let timer: NodeJS.Timeout | undefined;
    const silence = new Promise<CheckOutcome>((resolve) => {
      timer = setTimeout(
        () => resolve({ ok: false, reason: `${check.silence} within ${this.timeoutMs} ms`, fatal: check.silenceIsFatal }),
        this.timeoutMs,
      );
    });
    const answer = check.run().catch(
      (error: unknown): CheckOutcome => ({ ok: false, reason: error instanceof Error ? error.message : String(error), fatal: false }),
    );
    try {
      const outcome = await Promise.race([answer, silence]);
      return check.advisory && !outcome.ok ? { ok: true, note: outcome.reason } : outcome;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** "log: embedded log is closed; disk: …" for the checks that failed (fatal ones only if asked). */
export function describeFailures(report: HealthReport, fatalOnly = false): string {
  return Object.entries(report.checks)
    .flatMap(([name, outcome]) => (outcome.ok || (fatalOnly && !outcome.fatal) ? [] : [`${name}: ${outcome.reason}`]))
    .join('; ');
}
