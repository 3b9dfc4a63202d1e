/**
 * The service's side of the storage process (storage-process.ts): starts it, supervises it, and offers
 * a Database per org whose statements run there, and its compactor seen as a Compaction. A held
 * connection (exclusive, transaction, untrusted) is a session in that process: other users of the same
 * database, the compactor included, wait until it is released, exactly as with the in-process Database.
 *
 * Supervision. When the process ends for any reason other than close() — a crash, the kernel's OOM
 * killer, or a kill of ours to stop an untrusted query that DuckDB could not interrupt — every call in
 * flight fails with StorageUnavailable (503, retry), its sessions are gone, and a new process is started
 * (at once after a long run, with a growing pause when it keeps dying: 250 ms doubling to 15 s). Calls
 * made meanwhile wait for it (up to CALL_WAIT_MS). Compaction resumes from the databases' own log
 * positions, so nothing in flight is lost or applied twice. Collect, the log and lookups live in this
 * process and never wait for the storage process.
 */
import type { ChildProcess } from 'node:child_process';
import type { Database } from '../db/sql.js';
import { renice, spawnProcess } from '../core/spawn-process.js';
import type { Call, FromStorage, StorageProcessData, ToStorage } from './storage-protocol.js';
import { PendingCalls } from './pending-calls.js';
import { describeState, type State } from './storage-client-state.js';
import { restartPause, type StorageProcessOptions } from './storage-client-options.js';
import { ProcessCompaction } from './process-compaction.js';
import { ProcessDatabase, type StorageCalls } from './process-database.js';
import { StorageUnavailable } from '../core/unavailable.js';
import type { OrgStorage } from '../db/org-storage.js';
import { UntrustedGate } from './untrusted-gate.js';

/** How long a call made while the process restarts waits for the new one before answering 503. */
export const CALL_WAIT_MS = 10_000;
/** How long a new process may take to become ready (a cold start under tsx took ~4 s on a loaded 2-core machine). */
const START_TIMEOUT_MS = 60_000;
/** Kills remembered (by generation) to say whose query a session's failure was for. */
const KILLS_KEPT = 16;

export class StorageProcess implements OrgStorage, StorageCalls {
  readonly compaction: ProcessCompaction | undefined;
  /** Who may run untrusted SQL now (untrusted-gate.ts). */
  readonly gate = new UntrustedGate();
  private state: State;
  private readonly calls = new PendingCalls();
  private readonly upWaiters = new Set<() => void>();
  private readonly handles = new Map<string, Database>();
  /** Why we killed the running process, if we did, and whether to stop an org's query. */
  private killReason: string | undefined;
  private killedForQuery = false;
  /** Processes (by generation) killed to stop an org's query, and whose: the errors they leave name it. */
  private readonly killedFor = new Map<number, string>();
  private restartPause = 0;
  private compacting = false;
  /** Why the last process ended, for the restart's log line and health, and whether we killed it for a query. */
  private lastDownReason: string | undefined;
  private lastKilledForQuery = false;
  /** Settled by the first process: ready, or ended before it was. */
  private firstStart: { resolve: () => void; reject: (error: Error) => void } | undefined;

  private constructor(private readonly options: StorageProcessOptions) {
    this.compaction = options.data.log ? new ProcessCompaction(this) : undefined;
    this.state = { kind: 'down', reason: 'not started', generation: 0 };
  }

  /** Starts the first process; its failure to start is the caller's (server.ts says it in one line). */
  static async start(options: StorageProcessOptions): Promise<StorageProcess> {
    const client = new StorageProcess(options);
    await new Promise<void>((resolve, reject) => {
      client.firstStart = { resolve, reject };
      client.spawn();
    });
    return client;
  }

  org(slug: string): Database {
    let handle = this.handles.get(slug);
    if (!handle) this.handles.set(slug, (handle = new ProcessDatabase(this, slug)));
    return handle;
  }

  slugs(): Promise<string[]> {
    return this.call<string[]>({ op: 'slugs' });
  }

  async drop(slug: string): Promise<void> {
    await this.call({ op: 'drop', slug });
  }

  /** Org databases open now, and the most open at once since start (of the current process). */
  poolStats(): Promise<{ open: number; highWater: number }> {
    return this.call({ op: 'pool' });
  }

  get generation(): number {
    return this.state.kind === 'closed' ? -1 : this.state.generation;
  }

  /** A process is up and answering calls (probes that must not wait for a restart ask this first). */
  get running(): boolean {
    return this.state.kind === 'up';
  }

  /**
   * Sends a call to the process, waiting for it if it is restarting. `generation`: the call belongs to a
   * session of that process, and fails if another process has taken over since.
   */
  async call<T = unknown>(call: Call, generation?: number): Promise<T> {
    return (await this.callOn<T>(call, generation)).value;
  }

  /** Resolves once a process is up (at once when one is): StorageUnavailable past CALL_WAIT_MS. */
  async up(): Promise<void> {
    if (this.state.kind !== 'up') await this.whenUp(undefined);
  }

  /** A call, and which process answered it (a session's calls go to the process that opened it). */
  async callOn<T>(call: Call, generation?: number): Promise<{ value: T; generation: number }> {
    if (this.state.kind !== 'up') await this.whenUp(generation);
    const state = this.state;
    if (state.kind !== 'up') throw new StorageUnavailable(describeState(this.state, this.lastDownReason, this.killReason));
    if (generation !== undefined && generation !== state.generation) throw new StorageUnavailable('the process holding this session ended', this.killedFor.get(generation));
    const value = await this.calls.open<T>((id) => this.post(state.child, { type: 'call', id, call }));
    return { value, generation: state.generation };
  }

  /** A message for the running process; dropped when none runs (a new one starts from a fresh state). */
  send(message: ToStorage, generation?: number): void {
    const state = this.state;
    if ((state.kind === 'up' || state.kind === 'starting') && (generation === undefined || generation === state.generation)) this.post(state.child, message);
  }

  /**
   * Ends the running process at once (SIGKILL), e.g. to stop a query DuckDB cannot interrupt (`forOrg`:
   * whose); a new one is started. Only the process of `generation` is killed, never its successor.
   */
  kill(reason: string, generation: number, forOrg?: string): void {
    const state = this.state;
    if ((state.kind !== 'up' && state.kind !== 'starting') || state.generation !== generation) return;
    this.killReason ??= reason;
    this.killedForQuery = forOrg !== undefined;
    if (forOrg !== undefined) {
      this.killedFor.set(generation, forOrg);
      // Sessions of a process this old are long gone: the map stays small.
      this.killedFor.delete(generation - KILLS_KEPT);
    }
    this.state = { ...state, kind: 'stopping' };
    state.child.kill('SIGKILL');
  }

  /**
   * Health: the process answers a ping from its event loop (DuckDB untouched), or it is restarting.
   * Neither makes this service unready: collect and lookups do not need it.
   */
  async health(): Promise<{ ok: true; note?: string }> {
    if (this.state.kind !== 'up') return { ok: true, note: `restarting: ${describeState(this.state, this.lastDownReason, this.killReason)}` };
    await this.call({ op: 'ping' });
    return { ok: true };
  }

  /** Ends the process without closing DuckDB, as a crash would (tests of the supervision). */
  crash(): void {
    const state = this.state;
    if (state.kind === 'up' || state.kind === 'starting') this.kill('a test ended it', state.generation);
  }

  /** Closes DuckDB (after the compactor, if any) and ends the process. */
  async close(): Promise<void> {
    const state = this.state;
    if (state.kind === 'closed') return;
    if (state.kind === 'up') await this.call({ op: 'close' }).catch(() => undefined);
    this.state = { kind: 'closed' };
    this.calls.failAll(new StorageUnavailable('the service is shutting down'));
    for (const notify of [...this.upWaiters]) notify();
    if (state.kind === 'up' || state.kind === 'starting' || state.kind === 'stopping') {
      const exited = new Promise((resolve) => state.child.once('exit', resolve));
      state.child.kill('SIGKILL');
      if (state.child.exitCode === null && state.child.signalCode === null) await exited;
    }
  }

  /** Compaction was started (and so runs again in every new process) or stopped. */
  setCompacting(on: boolean): void {
    this.compacting = on;
  }

  private spawn(): void {
    const generation = (this.state.kind === 'closed' ? 0 : this.state.generation) + 1;
    const { data, layout } = this.options;
    // It loads Node and DuckDB at full priority (at nice 10 beside two busy cores a restart took 4–8 s,
    // every preview and flow run waiting on it), and takes its niceness once ready.
    const { nice, ...start } = this.options.process;
    const child = spawnProcess(import.meta.url, './storage-process', start);
    this.state = { kind: 'starting', child, generation, startedAt: Date.now() };
    this.killReason = undefined;
    this.killedForQuery = false;
    const log = data.log?.kind === 'embedded' ? { kind: 'embedded' as const, layout: layout!() } : data.log;
    this.post(child, { type: 'init', data: { ...data, ...(log ? { log } : {}) } as StorageProcessData });
    const startTimer = setTimeout(() => this.kill(`it did not start within ${START_TIMEOUT_MS} ms`, generation), START_TIMEOUT_MS);
    child.on('message', (message: FromStorage) => {
      if (message.type === 'ready') {
        clearTimeout(startTimer);
        if (nice !== undefined) renice(child.pid, nice);
        this.ready(generation);
      } else this.receive(message);
    });
    let ended = false;
    const end = (reason: string) => {
      clearTimeout(startTimer);
      if (ended) return;
      ended = true;
      this.ended(generation, reason);
    };
    child.once('error', (error) => end(`it could not be started: ${error.message}`));
    child.once('exit', (code, signal) => end(signal ? `it was ended by ${signal}` : `it exited with code ${code}`));
  }

  private ready(generation: number): void {
    const state = this.state;
    if (state.kind !== 'starting' || state.generation !== generation) return;
    this.state = { ...state, kind: 'up' };
    this.firstStart?.resolve();
    this.firstStart = undefined;
    if (generation > 1) {
      this.options.events.onRestarted(this.lastDownReason ?? 'it ended', this.lastKilledForQuery);
      if (this.compacting) void this.compaction?.start().catch((error: unknown) => this.options.events.onError({ err: error }, 'restarting compaction failed'));
    }
    for (const notify of [...this.upWaiters]) notify();
  }

  private ended(generation: number, how: string): void {
    const state = this.state;
    if (state.kind === 'closed' || state.kind === 'down' || state.generation !== generation) return;
    const reason = this.killReason ? `${this.killReason}; ${how}` : how;
    this.lastDownReason = reason;
    this.lastKilledForQuery = this.killedForQuery;
    this.state = { kind: 'down', reason, generation };
    this.calls.failAll(new StorageUnavailable(reason, this.killedFor.get(generation)));
    if (this.firstStart) {
      // Never started: the service's start fails with the reason; nothing is restarted.
      this.firstStart.reject(new Error(`storage process did not start: ${reason}`));
      this.firstStart = undefined;
      return;
    }
    // A kill to stop an org's query is the documented remedy, not a failure: the new process's takeover
    // is logged at warn with this reason (onRestarted). Any other end is an error.
    if (!this.killedForQuery) this.options.events.onError({ generation, reason }, 'storage process ended; starting a new one');
    // A process that dies soon after starting (a bad file, no memory) is retried with a growing pause.
    this.restartPause = restartPause(Date.now() - state.startedAt, this.restartPause);
    setTimeout(() => {
      if (this.state.kind === 'down' && this.state.generation === generation) this.spawn();
    }, this.restartPause).unref();
    for (const notify of [...this.upWaiters]) notify();
  }

  private whenUp(generation: number | undefined): Promise<void> {
    if (this.state.kind === 'closed') return Promise.reject(new StorageUnavailable('the service is shutting down'));
    if (generation !== undefined) return Promise.reject(new StorageUnavailable('the process holding this session ended', this.killedFor.get(generation)));
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.upWaiters.delete(notify);
        reject(new StorageUnavailable(describeState(this.state, this.lastDownReason, this.killReason)));
      }, CALL_WAIT_MS);
      const notify = () => {
        if (this.state.kind === 'up') resolve();
        else if (this.state.kind === 'closed') reject(new StorageUnavailable('the service is shutting down'));
        else return;
        clearTimeout(timer);
        this.upWaiters.delete(notify);
      };
      this.upWaiters.add(notify);
    });
  }

  private post(child: ChildProcess, message: ToStorage): void {
    // The channel closes as the process ends; its 'exit' fails what is pending.
    if (child.connected) child.send(message, (error) => void error);
  }

  private receive(message: Exclude<FromStorage, { type: 'ready' }>): void {
    const { events } = this.options;
    switch (message.type) {
      case 'reply':
        this.calls.reply(message);
        return;
      case 'compacted':
        this.compaction?.reported(message.report);
        events.onCompacted(message.report);
        return;
      case 'progress':
        this.compaction?.progress(message.seq, message.retainFromSeq);
        return;
      case 'metric':
        events.onMetric(message);
        return;
      case 'log':
        events.onError(message.details, message.message);
        return;
    }
  }
}
