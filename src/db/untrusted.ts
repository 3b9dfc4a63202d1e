/**
 * Deadlines for untrusted SQL (Database.untrusted). DuckDB has no statement timeout: a timer interrupts
 * the connection, which stops a query between vectors. A single long function call cannot be stopped
 * that way: levenshtein of two 100,000-character strings, folded as a constant while the query was only
 * being prepared, held the connection 23 s. So after the interrupt the caller waits a short grace and
 * then gives the connection up: the call fails with QueryTimeout, the connection is never used again,
 * and it is closed once DuckDB returns. An abandoned connection still holds a thread of libuv's pool
 * until then, so at most MAX_ABANDONED exist (SandboxBusy past that), and server.ts sizes the pool so
 * that they cannot starve file writes and the service's own queries.
 */
import type { Sql } from './sql.js';

/** How long an interrupted query may take to stop before its connection is given up. */
const ABANDON_GRACE_MS = 1_000;
export const MAX_ABANDONED = 4;

export class QueryTimeout extends Error {
  constructor(readonly timeoutMs: number, options?: { cause?: unknown }) {
    super(`ran longer than ${timeoutMs} ms`, options);
    this.name = 'QueryTimeout';
  }
}

/**
 * How many abandoned connections may exist at once, shared by every DuckDB instance of the process (one
 * per org): each holds a thread of libuv's one pool.
 */
export class UntrustedBudget {
  abandoned = 0;
  constructor(readonly max = MAX_ABANDONED) {}
}

export class SandboxBusy extends Error {
  constructor(message = `${MAX_ABANDONED} untrusted queries are still running past their time limit`) {
    super(message);
    this.name = 'SandboxBusy';
  }
}

/** A connection lent for untrusted work, and what to do with it afterwards. */
export interface UntrustedHandle {
  sql: Sql;
  interrupt(): void;
  /** Back to the pool: the work finished in time. */
  release(): void;
  /** Never reused; closed once whatever runs on it returns. */
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
