/**
 * Deadlines for untrusted SQL (Database.untrusted). DuckDB has no statement timeout: a timer interrupts
 * the connection, which stops a query between vectors. A single long function call cannot be stopped
 * that way: levenshtein of two 100,000-character strings, folded as a constant while the query was only
 * being prepared, held the connection 23 s. So after the interrupt the caller waits a short grace and
 * then gives the connection up: the call fails with QueryTimeout and `abandon` runs. In the storage
 * process (storage-client.ts) abandoning kills that process, the only sure way to stop native code; in a
 * database on the caller's own thread (STORAGE_PROCESS=inline, tests) the connection is never used again
 * and is closed once DuckDB returns.
 */
import { AppError } from '../core/errors.js';
import type { Sql } from './sql.js';

/** How long an interrupted query may take to stop before its connection is given up. */
export const ABANDON_GRACE_MS = 500;
export const MAX_ABANDONED = 4;
/** One org's part of MAX_ABANDONED: its runaways leave the rest to the other orgs. */
export const MAX_ABANDONED_PER_ORG = 2;

export class QueryTimeout extends Error {
  constructor(readonly timeoutMs: number, options?: { cause?: unknown }) {
    super(`ran longer than ${timeoutMs} ms`, options);
    this.name = 'QueryTimeout';
  }
}

/**
 * How many abandoned connections may exist at once, shared by every DuckDB instance of a process (one
 * per org): each holds a thread of libuv's one pool until DuckDB returns. One org may hold at most
 * `perOrg` of them, so its runaway queries refuse its own next ones (SandboxBusy), not another org's.
 */
export class UntrustedBudget {
  private total = 0;
  private readonly byOrg = new Map<string, number>();

  constructor(
    readonly max = MAX_ABANDONED,
    readonly perOrg = MAX_ABANDONED_PER_ORG,
  ) {}

  /** One org's view of the budget (its database's untrusted connections use it). */
  of(org: string): AbandonShare {
    return {
      full: () => this.total >= this.max || (this.byOrg.get(org) ?? 0) >= this.perOrg,
      take: () => {
        this.total++;
        this.byOrg.set(org, (this.byOrg.get(org) ?? 0) + 1);
      },
      give: () => {
        this.total--;
        const left = (this.byOrg.get(org) ?? 1) - 1;
        if (left > 0) this.byOrg.set(org, left);
        else this.byOrg.delete(org);
      },
    };
  }
}

/** An org's abandoned connections, counted against its share and the process's total. */
export interface AbandonShare {
  /** No more may be abandoned now: a new untrusted connection is refused (SandboxBusy). */
  full(): boolean;
  take(): void;
  give(): void;
}

/** No capacity for untrusted SQL now: nothing ran, nothing is recorded; the caller tries again shortly. */
export class SandboxBusy extends AppError {
  constructor(detail = 'Too many trigger and segment queries are running now; nothing ran. Try again in a second.') {
    super('sandbox_busy', detail, { headers: { 'Retry-After': '1' } });
    this.name = 'SandboxBusy';
  }
}

/**
 * The org's untrusted SQL is paused: one of its queries ran past its deadline and could not be
 * interrupted, so the process running it was killed. Each such kill pauses the org longer, so one org
 * cannot keep restarting the storage every other org shares.
 */
export class SandboxPaused extends AppError {
  constructor(
    readonly org: string,
    readonly retryAfterSeconds: number,
  ) {
    super(
      'sandbox_paused',
      `Trigger and segment queries of org "${org}" are paused for ${retryAfterSeconds} s: one of them ran past TRIGGER_TIMEOUT_MS and ` +
        'could not be interrupted (a long native function call), so it was stopped by restarting the storage process. ' +
        'Make that query cheaper (see its trigger or flow error), then try again after the pause.',
      { headers: { 'Retry-After': String(retryAfterSeconds) } },
    );
    this.name = 'SandboxPaused';
  }
}

/** A connection lent for untrusted work, and what to do with it afterwards. */
export interface UntrustedHandle {
  sql: Sql;
  interrupt(): void;
  /** Back to the pool: the work finished in time. */
  release(): void;
  /** Never reused: closed once whatever runs on it returns, or its process is killed (see above). */
  abandon(): void;
}

export function withDeadline<T>(handle: UntrustedHandle, timeoutMs: number, work: (sql: Sql) => Promise<T>): Promise<T> {
  const started = performance.now();
  return new Promise<T>((resolve, reject) => {
    let interrupted = false;
    let settled = false;
    const finish = (settle: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(interruptTimer);
      clearTimeout(abandonTimer);
      settle();
    };
    const interruptTimer = setTimeout(() => {
      interrupted = true;
      handle.interrupt();
    }, timeoutMs);
    const abandonTimer = setTimeout(
      () =>
        finish(() => {
          handle.abandon();
          reject(new QueryTimeout(timeoutMs));
        }),
      timeoutMs + ABANDON_GRACE_MS,
    );
    work(handle.sql).then(
      (value) =>
        finish(() => {
          // An interrupted connection is not reused: the interrupt may still be pending on it. Work that
          // returned late (turning a large result into JS objects counts) is a timeout all the same.
          if (interrupted) {
            handle.abandon();
            reject(new QueryTimeout(timeoutMs));
          } else if (performance.now() - started > timeoutMs) {
            handle.release();
            reject(new QueryTimeout(timeoutMs));
          } else {
            handle.release();
            resolve(value);
          }
        }),
      (error: unknown) =>
        finish(() => {
          if (interrupted) handle.abandon();
          else handle.release();
          reject(interrupted ? new QueryTimeout(timeoutMs, { cause: error }) : error);
        }),
    );
  });
}
