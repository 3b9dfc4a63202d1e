/**
 * One DuckDB file, one connection, every use serialized.
 * Why serialized: concurrent use of one connection (a shared prepared statement) crashed Node in the
 * pilot, and the compactor's transaction must not interleave with other statements on its connection.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  DuckDBInstance,
  timestampTZValue,
  type DuckDBConnection,
  type DuckDBTimestampTZValue,
  type DuckDBValue,
} from '@duckdb/node-api';

export type Row = Record<string, unknown>;
/** Positional ($1…) or named ($name) parameters. */
export type Params = DuckDBValue[] | Record<string, DuckDBValue>;

export class Database {
  private tail: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly instance: DuckDBInstance,
    private readonly connection: DuckDBConnection,
  ) {}

  static async open(path: string, options: { memoryLimit?: string } = {}): Promise<Database> {
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
      lock_configuration: 'true',
    });
    return new Database(instance, await instance.connect());
  }

  /** Runs `work` with the connection to itself; callers queue in order. */
  exclusive<T>(work: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
    const result = this.tail.then(() => work(this.connection));
    this.tail = result.catch(() => undefined);
    return result;
  }

  /** Rows as plain JS objects (see readRows). */
  all<T = Row>(sql: string, params: Params = []): Promise<T[]> {
    return this.exclusive((c) => readRows<T>(c, sql, params));
  }

  run(sql: string, params: Params = []): Promise<void> {
    return this.exclusive(async (c) => {
      await c.run(sql, params);
    });
  }

  /** BEGIN … COMMIT around `work`, ROLLBACK when it throws. */
  transaction<T>(work: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
    return this.exclusive(async (c) => {
      await c.run('BEGIN TRANSACTION');
      try {
        const result = await work(c);
        await c.run('COMMIT');
        return result;
      } catch (error) {
        await c.run('ROLLBACK').catch(() => undefined);
        throw error;
      }
    });
  }

  async close(): Promise<void> {
    await this.exclusive(async (c) => {
      // CHECKPOINT folds the WAL into the file so the next start opens quickly.
      await c.run('CHECKPOINT').catch(() => undefined);
      c.closeSync();
    });
    this.instance.closeSync();
  }
}

/** Rows as plain JS objects (BIGINT as bigint, JSON as string, TIMESTAMPTZ as Date), on a connection
 *  already held (inside `exclusive` or `transaction`). */
export async function readRows<T = Row>(connection: DuckDBConnection, sql: string, params: Params = []): Promise<T[]> {
  return (await connection.runAndReadAll(sql, params)).getRowObjectsJS() as T[];
}

/** Epoch milliseconds → a TIMESTAMPTZ parameter or appender value. */
export function tsParam(ms: number): DuckDBTimestampTZValue {
  return timestampTZValue(BigInt(Math.round(ms)) * 1000n);
}

/** Epoch microseconds → a TIMESTAMPTZ value (visible_at keeps microsecond steps). */
export function microsParam(micros: bigint): DuckDBTimestampTZValue {
  return timestampTZValue(micros);
}
