/**
 * The main thread's side of the storage worker (storage-worker.ts): a Database whose statements run
 * on the worker's connection, and the worker's compactor seen as a Compaction. A held connection
 * (exclusive, transaction) is a session on the worker: other users of DuckDB, the compactor included,
 * wait until it is released, exactly as with the in-thread Database.
 */
import type { Worker } from 'node:worker_threads';
import type { CommitReport, Compaction } from '../compaction/compactor.js';
import { SeqWaiters } from '../compaction/seq-waiters.js';
import { type AppendTarget, type Database, type Params, type Row, type RowAppender, type RowPage, type Sql, inTransaction } from '../db/sql.js';
import { SandboxBusy, withDeadline } from '../db/untrusted.js';
import type { Call, FromWorker, MetricUpdate, StorageWorkerData, ToWorker } from './storage-protocol.js';
import { paramsToWire, recordRows } from '../db/value-codec.js';
import { spawnWorker } from '../spawn-worker.js';
import type { OrgStorage } from './org-storage.js';

export interface StorageEvents {
  /** A compaction commit wrote events (before its progress is reported). */
  onCompacted(report: CommitReport): void;
  onMetric(update: MetricUpdate): void;
  onError(details: object, message: string): void;
}

export class StorageWorker implements OrgStorage {
  readonly compaction: WorkerCompaction | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  private stopped: Error | undefined;
  private readonly handles = new Map<string, Database>();

  private constructor(
    private readonly worker: Worker,
    compacts: boolean,
  ) {
    this.compaction = compacts ? new WorkerCompaction(this) : undefined;
  }

  org(slug: string): Database {
    let handle = this.handles.get(slug);
    if (!handle) this.handles.set(slug, (handle = new WorkerDatabase(this, slug)));
    return handle;
  }

  slugs(): Promise<string[]> {
    return this.call<string[]>({ op: 'slugs' });
  }

  async drop(slug: string): Promise<void> {
    await this.call({ op: 'drop', slug });
  }

  /** Org databases open now, and the most open at once since start. */
  poolStats(): Promise<{ open: number; highWater: number }> {
    return this.call({ op: 'pool' });
  }

  static async start(data: StorageWorkerData, events: StorageEvents): Promise<StorageWorker> {
    const worker = spawnWorker(import.meta.url, './storage-worker', { workerData: data });
    const client = new StorageWorker(worker, data.log !== undefined);
    let started = false;
    await new Promise<void>((ready, failed) => {
      worker.on('message', (message: FromWorker) => {
        if (message.type === 'ready') {
          started = true;
          ready();
        } else client.receive(message, events);
      });
      worker.once('error', (error) => {
        failed(error);
        client.fail(error);
        // A failure to start reaches the caller (and server.ts's one line); logging it too would say it twice.
        if (started) events.onError({ err: error }, 'storage worker failed');
      });
      worker.once('exit', (code) => {
        const error = new Error(`storage worker exited (code ${code})`);
        failed(error);
        // After close() the exit is expected; any other is a dead thread, worth an error in the log.
        if (!client.stopped) events.onError({ code }, 'storage worker exited');
        client.fail(error);
      });
    });
    return client;
  }

  call<T = unknown>(call: Call): Promise<T> {
    if (this.stopped) return Promise.reject(this.stopped);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.send({ type: 'call', id, call });
    });
  }

  send(message: ToWorker): void {
    if (!this.stopped) this.worker.postMessage(message);
  }

  /**
   * Health: fatal once the thread is gone (nothing restarts it: every DuckDB call fails until the
   * process restarts); otherwise a ping its event loop answers without touching DuckDB, so a long
   * statement holding the connection does not make a live thread look dead. The caller bounds the wait.
   */
  async health(): Promise<{ ok: true } | { ok: false; reason: string; fatal: boolean }> {
    if (this.stopped) return { ok: false, reason: this.stopped.message, fatal: true };
    try {
      await this.call({ op: 'ping' });
      return { ok: true };
    } catch (error) {
      return { ok: false, reason: (error as Error).message, fatal: this.stopped !== undefined };
    }
  }

  /** Ends the thread at once without closing DuckDB, as a crash of the thread would (tests of the above). */
  async terminate(): Promise<void> {
    await this.worker.terminate();
  }

  /** Closes DuckDB (after the compactor, if any) and ends the thread. */
  async close(): Promise<void> {
    if (this.stopped) return;
    await this.call({ op: 'close' });
    this.stopped = new Error('storage worker is closed');
    await this.worker.terminate();
  }

  private receive(message: Exclude<FromWorker, { type: 'ready' }>, events: StorageEvents): void {
    switch (message.type) {
      case 'reply': {
        const waiting = this.pending.get(message.id);
        this.pending.delete(message.id);
        if (message.ok) waiting?.resolve(message.value);
        else if (message.error.name === 'SandboxBusy') waiting?.reject(new SandboxBusy(message.error.message));
        else waiting?.reject(Object.assign(new Error(message.error.message), { name: message.error.name }));
        return;
      }
      case 'compacted':
        events.onCompacted(message.report);
        return;
      case 'progress':
        this.compaction?.progress(message.seq);
        return;
      case 'metric':
        events.onMetric(message);
        return;
      case 'log':
        events.onError(message.details, message.message);
        return;
    }
  }

  private fail(error: Error): void {
    this.stopped ??= error;
    for (const waiting of this.pending.values()) waiting.reject(error);
    this.pending.clear();
  }
}

class WorkerDatabase implements Database {
  constructor(
    private readonly worker: StorageWorker,
    private readonly slug: string,
  ) {}

  async exclusive<T>(work: (connection: Sql) => Promise<T>): Promise<T> {
    const session = await this.worker.call<number>({ op: 'open', db: this.slug });
    try {
      return await work(new WorkerSql(this.worker, session));
    } finally {
      await this.worker.call({ op: 'release', session });
    }
  }

  transaction<T>(work: (connection: Sql) => Promise<T>): Promise<T> {
    return this.exclusive((c) => inTransaction(c, work));
  }

  async untrusted<T>(timeoutMs: number, work: (connection: Sql) => Promise<T>): Promise<T> {
    const session = await this.worker.call<number>({ op: 'open', db: this.slug, untrusted: true });
    const ignore = () => undefined;
    const handle = {
      sql: new WorkerSql(this.worker, session),
      interrupt: () => this.worker.send({ type: 'interrupt', session }),
      release: () => void this.worker.call({ op: 'release', session }).catch(ignore),
      abandon: () => void this.worker.call({ op: 'abandon', session }).catch(ignore),
    };
    return withDeadline(handle, timeoutMs, work);
  }

  all<T = Row>(sql: string, params: Params = []): Promise<T[]> {
    return this.worker.call<T[]>({ op: 'all', db: this.slug, sql, params: paramsToWire(params) });
  }

  run(sql: string, params: Params = []): Promise<void> {
    return this.worker.call({ op: 'run', db: this.slug, sql, params: paramsToWire(params) });
  }

  /** The worker's pool closes org databases; one org's handle does not. */
  async close(): Promise<void> {}
}

class WorkerSql implements Sql {
  constructor(
    private readonly worker: StorageWorker,
    private readonly session: number,
  ) {}

  run(sql: string, params: Params = []): Promise<void> {
    return this.worker.call({ op: 'run', sql, params: paramsToWire(params), session: this.session });
  }

  all<T = Row>(sql: string, params: Params = []): Promise<T[]> {
    return this.worker.call<T[]>({ op: 'all', sql, params: paramsToWire(params), session: this.session });
  }

  append<T>(target: AppendTarget, rows: readonly T[], write: (appender: RowAppender, row: T) => void): Promise<void> {
    return this.worker.call({ op: 'append', session: this.session, target, rows: recordRows(rows, write) });
  }

  read<T = Row>(sql: string, params: Params, maxRows: number): Promise<RowPage<T>> {
    return this.worker.call<RowPage<T>>({ op: 'read', session: this.session, sql, params: paramsToWire(params), maxRows });
  }

  columnNames(sql: string): Promise<string[]> {
    return this.worker.call<string[]>({ op: 'columns', session: this.session, sql });
  }

  interrupt(): void {
    this.worker.send({ type: 'interrupt', session: this.session });
  }
}

class WorkerCompaction implements Compaction {
  private cursor = 0;
  private readonly waiters = new SeqWaiters();

  constructor(private readonly worker: StorageWorker) {}

  get compactedSeq(): number {
    return this.cursor;
  }

  async start(): Promise<void> {
    this.progress(await this.worker.call<number>({ op: 'compactor.start' }));
  }

  stop(): Promise<void> {
    return this.worker.call({ op: 'compactor.stop' });
  }

  whenCompacted(seq: number): Promise<void> {
    return this.waiters.wait(seq, this.cursor);
  }

  progress(seq: number): void {
    this.cursor = Math.max(this.cursor, seq);
    this.waiters.reached(this.cursor);
  }
}
