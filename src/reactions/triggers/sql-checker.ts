/**
 * Checks untrusted trigger and segment SQL in checker processes (sql-check-process.ts), never in the
 * storage process: preparing a query folds its constant expressions, which can take any time and memory
 * its author likes, before a single row is read. A checker runs one check at a time, so what a check
 * costs is that check's alone:
 * - its memory is bounded by the checker's address space: what Node and DuckDB took when it started,
 *   plus the org's share of DUCKDB_MEMORY_LIMIT (and room for the JS heap);
 * - past its deadline it is interrupted, and 1 s later (DuckDB cannot interrupt a long native call) its
 *   checker is killed and replaced; a checker that dies during a check (out of memory) is replaced too.
 *   Both refuse that version, with the reason;
 * - one org has at most one check running, and there are CHECKERS checkers: another org's check always
 *   finds one within the time of one check.
 * Capacity is never a verdict: a check that did not get a checker before its deadline, or overran
 * without having used half its time in CPU (it waited for a checker, or the cores were busy with other
 * work), fails with SandboxBusy (503, retry), and nothing is recorded.
 */
import type { ChildProcess } from 'node:child_process';
import { ABANDON_GRACE_MS, SandboxBusy } from '../../db/untrusted.js';
import { cpuTimeMs, spawnProcess, tightenAddressSpace } from '../../core/spawn-process.js';
import type { CheckerReply, CheckerRequest } from './sql-checker-protocol.js';
import { type CheckedSql, type QueryKind, SqlRefused } from './sql-guard.js';

/** Two: one org's slow checks hold at most one, so the other serves everyone else. */
const CHECKERS = 2;
/** Checks are small: a checker's JS heap holds the SQL and its syntax tree. */
const CHECKER_HEAP_MB = 128;
/** The heap's share of the address space, beyond the org's memory share. */
const CHECKER_HEAP_BYTES = 2 * CHECKER_HEAP_MB * 1024 ** 2;
/** Checks yield to collect and lookups, and to compaction, when the cores are busy. */
const CHECKER_NICE = 15;
/** A checker that ended is started again at the next check; one that cannot start fails that check. */
const START_TIMEOUT_MS = 60_000;

export interface SqlCheckerOptions {
  /** The org's memory share, DuckDB's syntax ("256MiB"), and in bytes for the address-space limit. */
  memoryLimit: string;
  memoryLimitBytes: number;
}

interface Request {
  org: string;
  kind: QueryKind;
  source: string;
  started: number;
  timeoutMs: number;
  resolve: (checked: CheckedSql) => void;
  reject: (error: Error) => void;
  waitTimer?: NodeJS.Timeout;
}

interface Checker {
  child: ChildProcess;
  ready: Promise<void>;
  started: boolean;
  /** The check running, if any. */
  busy: Running | undefined;
}

interface Running extends Request {
  id: number;
  end: (outcome: () => void) => void;
  /** Its deadline passed and it was told to stop: whatever it answers now, it overran. */
  interrupted: boolean;
  overran: () => Error;
}

export class SqlChecker {
  private readonly checkers: Array<Checker | undefined> = Array.from({ length: CHECKERS }, () => undefined);
  private readonly queue: Request[] = [];
  private nextId = 1;
  private closed = false;

  constructor(private readonly options: SqlCheckerOptions) {}

  /** Checks `source` for `org` within `timeoutMs` (waiting included). Throws SqlRefused or SandboxBusy. */
  check(source: string, org: string, kind: QueryKind, timeoutMs: number): Promise<CheckedSql> {
    if (this.closed) return Promise.reject(new SandboxBusy('The service is shutting down; nothing was checked.'));
    return new Promise<CheckedSql>((resolve, reject) => {
      const request: Request = { org, kind, source, started: Date.now(), timeoutMs, resolve, reject };
      request.waitTimer = setTimeout(() => {
        this.queue.splice(this.queue.indexOf(request), 1);
        reject(new SandboxBusy('Every SQL checker is busy with other checks; nothing was checked or recorded. Try again in a second.'));
      }, timeoutMs);
      this.queue.push(request);
      this.dispatch();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const request of this.queue.splice(0)) {
      clearTimeout(request.waitTimer);
      request.reject(new SandboxBusy('The service is shutting down; nothing was checked.'));
    }
    await Promise.all(
      this.checkers.map(async (checker, i) => {
        this.checkers[i] = undefined;
        if (!checker) return;
        const exited = new Promise((resolve) => checker.child.once('exit', resolve));
        checker.child.kill('SIGKILL');
        if (checker.child.exitCode === null && checker.child.signalCode === null) await exited;
      }),
    );
  }

  /** Gives each idle checker the first waiting check whose org has none running. */
  private dispatch(): void {
    for (let i = 0; i < this.checkers.length; i++) {
      if (this.checkers[i]?.busy) continue;
      const running = new Set(this.checkers.flatMap((c) => (c?.busy ? [c.busy.org] : [])));
      const at = this.queue.findIndex((r) => !running.has(r.org));
      if (at === -1) return;
      const [request] = this.queue.splice(at, 1);
      clearTimeout(request!.waitTimer);
      void this.run(i, request!);
    }
  }

  private async run(slot: number, request: Request): Promise<void> {
    // What is left of the deadline after the wait for a checker (starting one is not waiting: not counted).
    const budget = request.timeoutMs - (Date.now() - request.started);
    const checker = (this.checkers[slot] ??= this.spawn(slot));
    const id = this.nextId++;
    let ended = false;
    let interruptTimer: NodeJS.Timeout | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    const end = (outcome: () => void): void => {
      if (ended) return;
      ended = true;
      clearTimeout(interruptTimer);
      clearTimeout(killTimer);
      if (checker.busy?.id === id) checker.busy = undefined;
      outcome();
      this.dispatch();
    };
    // Read when the check is sent: CPU the checker used on it, measured when it overruns.
    let cpuAtStart: number | undefined;
    const overran = () => {
      const cpuStart = cpuAtStart;
      const cpuNow = cpuTimeMs(checker.child.pid);
      const used = cpuStart === undefined || cpuNow === undefined ? budget : cpuNow - cpuStart;
      return used >= request.timeoutMs / 2
        ? new SqlRefused(
            `checking the query took longer than ${request.timeoutMs} ms (TRIGGER_TIMEOUT_MS): it is prepared (DuckDB evaluates constant expressions then) and run once on one sample row`,
          )
        : new SandboxBusy('The SQL checkers were busy, or the machine was, and this check could not finish in its time; nothing was recorded. Try again.');
    };
    const running: Running = { ...request, id, end, interrupted: false, overran };
    checker.busy = running;
    try {
      await withTimeout(checker.ready, START_TIMEOUT_MS);
    } catch {
      this.retire(slot, checker);
      end(() => request.reject(new SandboxBusy('A SQL checker could not be started; nothing was checked. Try again.')));
      return;
    }
    if (ended) return; // its checker ended while starting, which ended this check
    interruptTimer = setTimeout(() => {
      running.interrupted = true;
      send(checker.child, { type: 'interrupt' });
    }, budget);
    killTimer = setTimeout(() => {
      // Still running after the interrupt: only killing the checker stops DuckDB. The next check starts a new one.
      end(() => request.reject(overran()));
      this.retire(slot, checker);
    }, budget + ABANDON_GRACE_MS);
    cpuAtStart = cpuTimeMs(checker.child.pid);
    send(checker.child, { type: 'check', id, org: request.org, kind: request.kind, source: request.source });
  }

  private spawn(slot: number): Checker {
    const child = spawnProcess(import.meta.url, './sql-check-process', {
      addressSpaceBytes: CHECKER_HEAP_BYTES + this.options.memoryLimitBytes,
      nice: CHECKER_NICE,
      nodeOptions: [`--max-old-space-size=${CHECKER_HEAP_MB}`],
    });
    let ready!: () => void;
    let failed!: (error: Error) => void;
    const checker: Checker = { child, ready: new Promise<void>((resolve, reject) => ((ready = resolve), (failed = reject))), started: false, busy: undefined };
    checker.ready.catch(() => undefined);
    send(child, { type: 'init', memoryLimit: this.options.memoryLimit });
    child.on('message', (reply: CheckerReply) => {
      if (reply.type === 'ready') {
        // From here a check gets the org's share (and room for the heap), whatever the runtime took.
        void tightenAddressSpace(child.pid!, CHECKER_HEAP_BYTES + this.options.memoryLimitBytes).then(() => {
          checker.started = true;
          ready();
        });
        return;
      }
      const busy = checker.busy;
      if (!busy || busy.id !== reply.id) return;
      switch (reply.type) {
        case 'checked':
          // Past its deadline the sample run may have been cut short by the interrupt itself (a run that
          // fails passes, see sql-check-process.ts): not a verdict that the query is cheap.
          return busy.end(() => (busy.interrupted ? busy.reject(busy.overran()) : busy.resolve(reply.checked)));
        case 'refused':
          return busy.end(() => busy.reject(busy.interrupted ? busy.overran() : new SqlRefused(reply.reason)));
        case 'failed':
          // DuckDB failed on this SQL otherwise (out of memory in its share while parsing it, say): its verdict too.
          return busy.end(() => busy.reject(busy.interrupted ? busy.overran() : new SqlRefused(`the query could not be checked: ${reply.message}`)));
      }
    });
    const exited = (how: string) => {
      failed(new Error(how));
      if (this.checkers[slot] === checker) this.checkers[slot] = undefined;
      const busy = checker.busy;
      if (!busy) return;
      // A checker that was running a check died of it (one check at a time): that check's verdict. One
      // that never started says nothing about the SQL.
      const error = checker.started
        ? new SqlRefused(`checking the query ended its checker (${how}): it needs more memory than its org's share (${this.options.memoryLimit})`)
        : new SandboxBusy(`A SQL checker could not be started (${how}); nothing was checked. Try again.`);
      busy.end(() => busy.reject(error));
    };
    child.once('error', (error) => exited(`it could not be started: ${error.message}`));
    child.once('exit', (code, signal) => exited(signal ? `ended by ${signal}` : `exit code ${code}`));
    return checker;
  }

  /** Kills a checker whose check overran; the next check in that slot starts a new one. */
  private retire(slot: number, checker: Checker): void {
    if (this.checkers[slot] === checker) this.checkers[slot] = undefined;
    checker.busy = undefined;
    checker.child.kill('SIGKILL');
  }
}

function send(child: ChildProcess, message: CheckerRequest): void {
  if (child.connected) child.send(message, (error) => void error);
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([promise, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), ms)))]).finally(() => clearTimeout(timer));
}
