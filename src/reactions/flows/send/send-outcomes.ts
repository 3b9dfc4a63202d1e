/**
 * Records how each send ended (flow_sends status, attempts, last_error, sent_at, through SendStore): the one
 * writer of those columns. `record` resolves once the outcome is committed, and the dispatcher holds the send's delivery
 * slot until then (see send-dispatcher.ts for why).
 *
 * An outcome is written at once: while one UPDATE of an org runs, the outcomes that come meanwhile wait
 * for it and then go together in the next one, so none waits behind more than one statement, and under
 * load one statement records up to a channel's concurrency of them.
 *
 * A write that fails (the org database briefly unavailable, e.g. its storage process restarting) keeps
 * its outcomes and is tried again, 100 ms later and doubling up to 5 s between tries: a delivered send
 * is recorded late rather than re-sent. Only at shutdown is a failed write given up: those sends stay
 * pending and are sent once more (same send id) after the restart.
 */
import type { FastifyBaseLogger } from 'fastify';
import { OrgUnavailable } from '../../../core/unavailable.js';
import type { SendOutcome, SendStore } from '../store/send-store.js';

/** An outcome with the flow and variant of its send (what a delivered one adds to the contact's profile). */
export interface FlowSendOutcome extends SendOutcome {
  flowId: string;
  variant: string | null;
}

interface Entry {
  outcome: FlowSendOutcome;
  done(): void;
}

const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 5_000;

export class SendOutcomes {
  /** Per org: outcomes waiting for the UPDATE in progress (present while one is). */
  private readonly waiting = new Map<string, Entry[]>();
  private readonly dropped = new Set<string>();
  private closing = false;
  private readonly sleeps = new Set<() => void>();

  constructor(
    private readonly deps: {
      sends: SendStore;
      logger: FastifyBaseLogger;
      /** Sends delivered: their contacts' profiles changed (campaigns_received, flow_variant_membership). */
      onDelivered(org: string, delivered: FlowSendOutcome[]): void;
    },
  ) {}

  /** Resolves when the outcome is committed (or will never be: its org was deleted, or a write failed at shutdown). */
  record(org: string, outcome: FlowSendOutcome): Promise<void> {
    if (this.dropped.has(org)) return Promise.resolve();
    return new Promise((done) => {
      const queue = this.waiting.get(org);
      if (queue) queue.push({ outcome, done });
      else void this.writeFrom(org, [{ outcome, done }]);
    });
  }

  /** The org was deleted: what waits is not written (an UPDATE under way ends as it ends). */
  drop(org: string): void {
    this.dropped.add(org);
    this.wake();
  }

  /** Shutdown: a write that fails from now on is not tried again. */
  close(): void {
    this.closing = true;
    this.wake();
  }

  private async writeFrom(org: string, first: Entry[]): Promise<void> {
    this.waiting.set(org, []);
    for (let batch = first; batch.length > 0; batch = this.waiting.get(org)!.splice(0)) {
      const release = () => {
        for (const entry of batch) entry.done();
      };
      try {
        await this.writeUntilDone(org, batch.map((e) => e.outcome), release);
      } finally {
        release();
      }
    }
    this.waiting.delete(org);
  }

  /**
   * `release`: gives the sends' slots back before the write succeeds. Done when the org's database is
   * damaged (OrgUnavailable): that may last days, and its slots held would stall every other org's sends;
   * its outcomes are still written once it opens again.
   */
  private async writeUntilDone(org: string, batch: FlowSendOutcome[], release: () => void): Promise<void> {
    for (let delay = FIRST_RETRY_MS; ; delay = Math.min(delay * 2, MAX_RETRY_MS)) {
      if (this.dropped.has(org)) return;
      try {
        await this.deps.sends.recordOutcomes(org, batch);
        this.delivered(org, batch);
        return;
      } catch (err) {
        if (this.closing) {
          this.deps.logger.error({ err, org, sends: batch.length }, 'recording send outcomes failed at shutdown; they stay pending and are sent again (same send id) after the restart');
          return;
        }
        if (err instanceof OrgUnavailable) release();
        this.deps.logger.warn({ err, org, sends: batch.length, retryInMs: delay }, 'recording send outcomes failed; kept and tried again');
        await this.sleep(delay);
      }
    }
  }

  private delivered(org: string, batch: FlowSendOutcome[]): void {
    const delivered = batch.filter((o) => o.result.kind === 'delivered');
    if (delivered.length === 0) return;
    try {
      this.deps.onDelivered(org, delivered);
    } catch (err) {
      this.deps.logger.error({ err, org }, 'refreshing profiles after delivery failed');
    }
  }

  /** A wait between tries that close and drop cut short. */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.sleeps.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.sleeps.add(wake);
    });
  }

  private wake(): void {
    for (const wake of [...this.sleeps]) wake();
  }
}
