/**
 * DuckDB in this thread: one file, one connection, every use serialized.
 * Why serialized: concurrent use of one connection (a shared prepared statement) crashed Node in the
 * pilot, and the compactor's transaction must not interleave with other statements on its connection.
 * The service normally runs this inside the storage worker (storage-worker.ts); STORAGE_THREAD=main
 * and tests with an injected clock run it on the main thread.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  DuckDBInstance,
  timestampTZValue,
  timestampValue,
  type DuckDBAppender,
  type DuckDBConnection,
  type DuckDBResultReader,
  type DuckDBTimestampTZValue,
} from '@duckdb/node-api';
import { type AppendTarget, type ColumnPage, type Database, type Params, type Row, type RowAppender, type Sql, inTransaction, rowsOf } from './sql.js';
import { PACK_ROWS, packableKinds, packedSql, unpack } from './packed-read.js';
import { type AbandonShare, SandboxBusy, UntrustedBudget, type UntrustedHandle, withDeadline } from './untrusted.js';
import { YIELD_EVERY, yieldNow } from './yield-now.js';

export type { Database, Params, Row, Sql } from './sql.js';

/**
 * A large read (more than PACK_ROWS rows) is run again packed (packed-read.ts) only when its first rows
 * came within this: a filter over an indexed window (a trigger's) gives them in ~10 ms on a slow 2-core
 * machine, and packing 10,000 trigger rows saves ~40 ms there; a query that must sort or aggregate all
 * of its input before its first row is not run twice.
 */
const PACK_RERUN_MS = 25;

/** Shutdown waits this long for abandoned untrusted queries to return before closing DuckDB. */
const CLOSE_WAIT_FOR_ABANDONED_MS = 30_000;

export interface DatabaseOptions {
  memoryLimit?: string;
  /** DuckDB's worker threads for this instance. Default: DuckDB's (the cores). */
  threads?: number;
  /** This database's share of the budget the instances of a process share (see untrusted.ts). Default: one of its own. */
  untrustedBudget?: AbandonShare;
  /** A large read is run again packed only when its first rows came within this many ms. Default PACK_RERUN_MS. */
  packRerunMs?: number;
}

export class LocalDatabase implements Database {
  private tail: Promise<unknown> = Promise.resolve();
  private readonly sql: LocalSql;
  private readonly untrustedConnections: UntrustedConnections;

  private constructor(
    private readonly instance: DuckDBInstance,
    private readonly connection: DuckDBConnection,
    budget: AbandonShare,
    packRerunMs: number,
  ) {
    this.sql = new LocalSql(connection, packRerunMs);
    this.untrustedConnections = new UntrustedConnections(instance, budget, packRerunMs);
  }

  static async open(path: string, options: DatabaseOptions = {}): Promise<LocalDatabase> {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const instance = await DuckDBInstance.create(path, {
      // DuckDB checkpoints (rewrites changed row groups) whenever the WAL passes 16 MB by default: under
      // steady ingest that is every few compaction batches. A larger WAL checkpoints less often; a clean
      // shutdown checkpoints anyway, and a crash replays at most this much WAL at start.
      checkpoint_threshold: '256MB',
      // The sandbox for untrusted trigger and segment SQL (SPEC 7), set for the whole instance because
      // DuckDB settings are global: no file or network access, no extension loading, a memory ceiling,
      // and the configuration locked so no statement can undo any of it. The service itself needs none
      // of these (imports are parsed in JS; the database file and WAL are not "external access").
      enable_external_access: 'false',
      autoinstall_known_extensions: 'false',
      autoload_known_extensions: 'false',
      memory_limit: options.memoryLimit ?? '4GB',
      ...(options.threads === undefined ? {} : { threads: String(options.threads) }),
      lock_configuration: 'true',
    });
    return new LocalDatabase(instance, await instance.connect(), options.untrustedBudget ?? new UntrustedBudget().of(path), options.packRerunMs ?? PACK_RERUN_MS);
  }

  exclusive<T>(work: (connection: Sql) => Promise<T>): Promise<T> {
    const result = this.tail.then(() => work(this.sql));
    this.tail = result.catch(() => undefined);
    return result;
  }

  all<T = Row>(sql: string, params: Params = []): Promise<T[]> {
    return this.exclusive((c) => c.all<T>(sql, params));
  }

  run(sql: string, params: Params = []): Promise<void> {
    return this.exclusive((c) => c.run(sql, params));
  }

  transaction<T>(work: (connection: Sql) => Promise<T>): Promise<T> {
    return this.exclusive((c) => inTransaction(c, work));
  }

  async untrusted<T>(timeoutMs: number, work: (connection: Sql) => Promise<T>): Promise<T> {
    return withDeadline(await this.untrustedConnections.acquire(), timeoutMs, work);
  }

  /** A connection for untrusted SQL held across calls (the storage worker's sessions). */
  acquireUntrusted(): Promise<UntrustedHandle> {
    return this.untrustedConnections.acquire();
  }

  /** `checkpoint: false` for a file found damaged: nothing more is written into it than DuckDB must. */
  async close(options: { checkpoint?: boolean } = {}): Promise<void> {
    // An abandoned query still running keeps native work on the instance; closing under it is not safe.
    await this.untrustedConnections.close(CLOSE_WAIT_FOR_ABANDONED_MS);
    await this.exclusive(async () => {
      // CHECKPOINT folds the WAL into the file so the next start opens quickly.
      if (options.checkpoint !== false) await this.connection.run('CHECKPOINT').catch(() => undefined);
      this.connection.closeSync();
    });
    this.instance.closeSync();
  }
}

/** Connections for untrusted SQL: reused while they finish in time; see untrusted.ts. */
class UntrustedConnections {
  private idle: DuckDBConnection[] = [];
  /** Abandoned connections still running, each settling once DuckDB returns and it is closed. */
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly instance: DuckDBInstance,
    private readonly budget: AbandonShare,
    private readonly packRerunMs: number,
  ) {}

  async acquire(): Promise<UntrustedHandle> {
    if (this.budget.full()) throw new SandboxBusy('Too many trigger and segment queries of this org (or of several orgs) were stopped and are still ending; nothing ran. Try again in a second.');
    const connection = this.idle.pop() ?? (await this.instance.connect());
    const sql = new LocalSql(connection, this.packRerunMs);
    return {
      sql,
      interrupt: () => connection.interrupt(),
      release: () => this.idle.push(connection),
      abandon: () => {
        this.budget.take();
        connection.interrupt();
        const closed = sql.settled().then(() => {
          this.budget.give();
          connection.closeSync();
        });
        this.running.add(closed);
        void closed.then(() => this.running.delete(closed));
      },
    };
  }

  /** Closes idle connections and waits (up to `waitMs`) for abandoned ones to return. */
  async close(waitMs: number): Promise<void> {
    for (const connection of this.idle) connection.closeSync();
    this.idle = [];
    await Promise.race([Promise.all(this.running), new Promise((resolve) => setTimeout(resolve, waitMs).unref())]);
  }
}

/**
 * `getRowObjectsJS()`'s columns and names, at most `limit` rows: converting column by column took 5–25 ms
 * for 10,000 trigger rows against 43–109 ms row by row (each value's visit reads its vector and type again).
 */
function columnPage(reader: DuckDBResultReader, limit = Number.POSITIVE_INFINITY): ColumnPage {
  return cutPage(reader.deduplicatedColumnNames(), reader.getColumnsJS() as unknown[][], limit);
}

/** Columns of at most `limit` rows, `truncated` when they held more. */
function cutPage(names: string[], columns: unknown[][], limit: number): ColumnPage {
  const truncated = (columns[0]?.length ?? 0) > limit;
  return { names, columns: truncated ? columns.map((c) => c.slice(0, limit)) : columns, truncated };
}

/**
 * The service's cells, into DuckDB's appender. A TIMESTAMPTZ goes in as a plain TIMESTAMP of the same
 * microseconds, which the appender stores as that instant with no time-zone cast (the storage tests hold
 * it to that): `appendTimestampTZ` builds a DuckDB value per call, ~0.7 µs more per cell, and an event
 * row has three (a quarter of compaction's appending).
 */
class Cells implements RowAppender {
  constructor(private readonly appender: DuckDBAppender) {}
  appendVarchar(value: string): void {
    this.appender.appendVarchar(value);
  }
  appendInteger(value: number): void {
    this.appender.appendInteger(value);
  }
  appendBoolean(value: boolean): void {
    this.appender.appendBoolean(value);
  }
  appendBigInt(value: bigint): void {
    this.appender.appendBigInt(value);
  }
  appendTimestampTZ(value: DuckDBTimestampTZValue): void {
    this.appender.appendTimestamp(timestampValue(value.micros));
  }
  appendNull(): void {
    this.appender.appendNull();
  }
}

class LocalSql implements Sql {
  /** The statement in flight, so an abandoned connection is closed only once DuckDB returns. */
  private inFlight: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly connection: DuckDBConnection,
    private readonly packRerunMs: number,
  ) {}

  settled(): Promise<void> {
    return this.inFlight.then(
      () => undefined,
      () => undefined,
    );
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.inFlight = promise;
    return promise;
  }

  async run(sql: string, params: Params = []): Promise<void> {
    await this.track(this.connection.run(sql, params));
  }

  async all<T = Row>(sql: string, params: Params = []): Promise<T[]> {
    return rowsOf<T>(columnPage(await this.track(this.connection.runAndReadAll(sql, params))));
  }

  async read(sql: string, params: Params, maxRows: number): Promise<ColumnPage> {
    // Reads whole chunks: at most maxRows + 1 rows and the rest of their last 2,048-row chunk.
    const started = performance.now();
    const first = await this.track(this.connection.streamAndReadUntil(sql, Math.min(maxRows, PACK_ROWS) + 1, params));
    if (first.done || maxRows <= PACK_ROWS) return columnPage(first, maxRows);
    // More rows than one packed string holds: when the query gave its first ones quickly (running it
    // again costs less than converting its rows one by one saves), read them packed (packed-read.ts).
    const kinds = performance.now() - started <= this.packRerunMs ? packableKinds(first.columnTypes()) : undefined;
    if (kinds) {
      const packed = await this.track(this.connection.runAndReadAll(packedSql(sql, kinds, maxRows + 1), params));
      const columns = unpack(packed.getColumnsJS(), kinds);
      if (columns) return cutPage(first.deduplicatedColumnNames(), columns, maxRows);
      return columnPage(await this.track(this.connection.streamAndReadUntil(sql, maxRows + 1, params)), maxRows);
    }
    await this.track(first.readUntil(maxRows + 1));
    return columnPage(first, maxRows);
  }

  async appendRows<T>(target: AppendTarget, rows: readonly T[], write: (appender: RowAppender, row: T) => void): Promise<void> {
    if (rows.length === 0) return;
    const appender = target.catalog
      ? await this.connection.createAppender(target.table, 'main', target.catalog)
      : await this.connection.createAppender(target.table);
    const cells = new Cells(appender);
    try {
      let appended = 0;
      for (const row of rows) {
        write(cells, row);
        appender.endRow();
        if (++appended % YIELD_EVERY === 0) await yieldNow();
      }
      appender.flushSync();
    } finally {
      appender.closeSync();
    }
  }

  async columnNames(sql: string): Promise<string[]> {
    const prepared = await this.track(this.connection.prepare(sql));
    try {
      return Array.from({ length: prepared.columnCount }, (_, i) => prepared.columnName(i));
    } finally {
      prepared.destroySync();
    }
  }

  interrupt(): void {
    this.connection.interrupt();
  }
}

/** Epoch milliseconds → a TIMESTAMPTZ parameter or appender value. */
export function tsParam(ms: number): DuckDBTimestampTZValue {
  return timestampTZValue(BigInt(Math.round(ms)) * 1000n);
}

/** Epoch microseconds → a TIMESTAMPTZ value (visible_at keeps microsecond steps). */
export function microsParam(micros: bigint): DuckDBTimestampTZValue {
  return timestampTZValue(micros);
}
