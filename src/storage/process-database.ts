/**
 * One org's database in the storage process (storage-client.ts supervises it), as a Database: plain
 * statements go there one call each; a held connection (exclusive, transaction, untrusted) is a session
 * there, whose calls go only to the process that opened it and fail once another has taken over.
 */
import { type AppendTarget, type ColumnPage, type Database, type Params, type Row, type RowAppender, type Sql } from '../db/sql.js';
import { SandboxPaused, type UntrustedHandle, withDeadline } from '../db/untrusted.js';
import { StorageUnavailable } from '../core/unavailable.js';
import { paramsToWire, recordRows } from '../db/value-codec.js';
import { type Call, READ_PAGE_ROWS, type ReadPage, type ToStorage } from './storage-protocol.js';
import type { UntrustedGate } from './untrusted-gate.js';

/** What a database and its sessions need of the supervisor. */
export interface StorageCalls {
  /** The running process's generation: one more each time a new process takes over. */
  readonly generation: number;
  readonly gate: UntrustedGate;
  /** `generation`: the call belongs to a session of that process. */
  call<T = unknown>(call: Call, generation?: number): Promise<T>;
  /** A call, and which process answered it. */
  callOn<T>(call: Call): Promise<{ value: T; generation: number }>;
  /** Resolves once a process is up (StorageUnavailable if none comes within CALL_WAIT_MS). */
  up(): Promise<void>;
  send(message: ToStorage, generation?: number): void;
  /** Ends the process of `generation` at once; `forOrg`: to stop that org's query. */
  kill(reason: string, generation: number, forOrg?: string): void;
}

async function openSession(storage: StorageCalls, db: string, kind: 'untrusted' | 'exclusive' | 'transaction'): Promise<ProcessSql> {
  const { value, generation } = await storage.callOn<number>({ op: 'open', db, ...(kind === 'untrusted' ? { untrusted: true } : kind === 'transaction' ? { begin: true } : {}) });
  return new ProcessSql(storage, value, generation);
}

export class ProcessDatabase implements Database {
  constructor(
    private readonly storage: StorageCalls,
    private readonly slug: string,
  ) {}

  async exclusive<T>(work: (connection: Sql) => Promise<T>): Promise<T> {
    const sql = await openSession(this.storage, this.slug, 'exclusive');
    try {
      return await work(sql);
    } finally {
      await sql.release();
    }
  }

  /**
   * inTransaction's frame in two calls, not four: BEGIN goes with the session's open and COMMIT (or
   * ROLLBACK) with its release. Each call waits for the storage process in turn (a flow run's commit made ten).
   */
  async transaction<T>(work: (connection: Sql) => Promise<T>): Promise<T> {
    const sql = await openSession(this.storage, this.slug, 'transaction');
    let result: T;
    try {
      result = await work(sql);
    } catch (error) {
      await sql.release('rollback');
      throw error;
    }
    await sql.commit();
    return result;
  }

  /**
   * Untrusted SQL: a slot of the gate, a session, and the deadline (untrusted.ts). The slot is waited for
   * at most half the deadline (SandboxBusy past it: nothing ran), so every query that runs has at least
   * half its time. A restarting process (another org's query had it killed, or a crash) is waited for
   * first, without a slot, so the org's other queries are not kept from theirs meanwhile; it is not this
   * query's doing, so not its time, nor is opening its session there. A query still running ABANDON_GRACE_MS
   * past its deadline cannot be interrupted: the process is killed, which stops it, and the org is paused
   * (gate.strike).
   */
  async untrusted<T>(timeoutMs: number, work: (connection: Sql) => Promise<T>): Promise<T> {
    await this.storage.up();
    const asked = Date.now();
    const release = await this.storage.gate.enter(this.slug, asked + timeoutMs / 2);
    const budget = timeoutMs - (Date.now() - asked);
    try {
      const sql = await openSession(this.storage, this.slug, 'untrusted');
      const handle: UntrustedHandle = {
        sql,
        interrupt: () => sql.interrupt(),
        release: () => void sql.release(),
        abandon: () => {
          if (!sql.settled) {
            // Still running past the grace: only killing the process stops DuckDB now.
            this.storage.gate.strike(this.slug);
            this.storage.kill(`org "${this.slug}"'s query ran past its ${timeoutMs} ms deadline and could not be interrupted`, sql.generation, this.slug);
          } else void sql.release('discard');
        },
      };
      return await withDeadline(handle, budget, work).catch((error: unknown) => {
        // The process was killed to stop another query of this org: this one is paused with it.
        if (error instanceof StorageUnavailable && error.killedFor === this.slug) throw new SandboxPaused(this.slug, Math.max(1, Math.ceil(this.storage.gate.pausedFor(this.slug) / 1000)));
        throw error;
      });
    } finally {
      release();
    }
  }

  all<T = Row>(sql: string, params: Params = []): Promise<T[]> {
    return this.storage.call<T[]>({ op: 'all', db: this.slug, sql, params: paramsToWire(params) });
  }

  run(sql: string, params: Params = []): Promise<void> {
    return this.storage.call({ op: 'run', db: this.slug, sql, params: paramsToWire(params) });
  }

  /** The process's pool closes org databases; one org's handle does not. */
  async close(): Promise<void> {}
}

/** A session: a connection held in the process that opened it. */
class ProcessSql implements Sql {
  /** Statements sent and not answered yet. */
  private inFlight = 0;

  constructor(
    private readonly storage: StorageCalls,
    private readonly session: number,
    readonly generation: number,
  ) {}

  /** No statement of this session is running in the storage process now. */
  get settled(): boolean {
    return this.inFlight === 0 || this.storage.generation !== this.generation;
  }

  /** Gives the connection back: to be reused, after a ROLLBACK of its transaction, or closed (`discard`: an untrusted one). */
  release(how: 'reuse' | 'rollback' | 'discard' = 'reuse'): Promise<void> {
    const call: Call = how === 'discard' ? { op: 'abandon', session: this.session } : { op: 'release', session: this.session, ...(how === 'rollback' ? { end: how } : {}) };
    return this.storage.call<void>(call, this.generation).catch(() => undefined);
  }

  /** COMMIT, and the connection given back; throws what COMMIT threw (the transaction was rolled back). */
  commit(): Promise<void> {
    return this.storage.call<void>({ op: 'release', session: this.session, end: 'commit' }, this.generation);
  }

  run(sql: string, params: Params = []): Promise<void> {
    return this.send({ op: 'run', sql, params: paramsToWire(params), session: this.session });
  }

  all<T = Row>(sql: string, params: Params = []): Promise<T[]> {
    return this.send<T[]>({ op: 'all', sql, params: paramsToWire(params), session: this.session });
  }

  /** A page of rows per message, as for reads (storage-protocol.ts, READ_PAGE_ROWS): the event loop runs between them; none for no rows. */
  async appendRows<T>(target: AppendTarget, rows: readonly T[], write: (appender: RowAppender, row: T) => void): Promise<void> {
    for (let from = 0; from < rows.length; from += READ_PAGE_ROWS) {
      await this.send({ op: 'append-rows', session: this.session, target, rows: recordRows(rows.slice(from, from + READ_PAGE_ROWS), write) });
    }
  }

  async read(sql: string, params: Params, maxRows: number): Promise<ColumnPage> {
    let page = await this.send<ReadPage>({ op: 'read', session: this.session, sql, params: paramsToWire(params), maxRows });
    const { names, columns } = page;
    while (page.more) {
      page = await this.send<ReadPage>({ op: 'read-more', session: this.session });
      page.columns.forEach((column, j) => {
        for (const value of column) columns[j]!.push(value);
      });
    }
    return { names, columns, truncated: page.truncated };
  }

  columnNames(sql: string): Promise<string[]> {
    return this.send<string[]>({ op: 'columns', session: this.session, sql });
  }

  private async send<T>(call: Call): Promise<T> {
    this.inFlight++;
    try {
      return await this.storage.call<T>(call, this.generation);
    } finally {
      this.inFlight--;
    }
  }

  interrupt(): void {
    this.storage.send({ type: 'interrupt', session: this.session }, this.generation);
  }
}
