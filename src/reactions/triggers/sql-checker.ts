/**
 * Checks untrusted trigger and segment SQL in checker processes (sql-check-process.ts), never in the
 * storage process: preparing a query folds its constant expressions, which can take any time and memory
 * its author likes, before a single row is read. A checker runs one check at a time, so what a check
 * costs is that check's alone:
 * - its memory is bounded by the checker's address space: what Node and DuckDB took when it started,
 *   plus the org's share of DUCKDB_MEMORY_LIMIT (and room for the JS heap);
 * - past its deadline it is interrupted, and ABANDON_GRACE_MS later (DuckDB cannot interrupt a long
 *   native call) its checker is killed and replaced; a checker that dies during a check (out of memory)
 *   is replaced too.
 *
 * Fair shares. An org holds at most ORG_SHARE checkers: those running its checks, and those being
 * started again because one of its checks ended the last one (a start takes 0.3–1 s, seconds on a
 * loaded machine: the org that caused it waits for it, nobody else). So another org's check always
 * finds a checker at once, however many checks one org sends. Waiting checks go to the org holding the
 * fewest checkers, oldest first: one org's queue never stands in front of another's.
 *
 * CPU: a check runs level with every org's queries in the storage process (LIGHT_NICE), and moves below
 * them (HEAVY_NICE) once it has cost more than a light check does (check-watch.ts): one org's heavy
 * checks do not starve another org's light ones, nor compaction.
 *
 * Verdicts and capacity. A check that used its budget is refused, naming it (SqlRefused with `budget`):
 * time, when it ran TRIGGER_TIMEOUT_MS and used at least half of it in CPU; memory, when it ran out of
 * the org's share. A check that found no checker before its deadline fails with SandboxBusy (503, retry),
 * and so does one the machine starved: past its deadline with less than half of it in CPU, it is given
 * up to four times its time to use it, and then its caller is told to retry while the check goes on
 * using its time (check-watch.ts): the same SQL sent again waits for that check's outcome rather than
 * start from nothing, so retries on a busy machine reach the verdict. Nothing is recorded for a
 * SandboxBusy.
 */
import type { ProfileColumn } from '../../events/profiles/profiles-view.js';
import { withDeadline } from '../../core/deadline.js';
import { ABANDON_GRACE_MS, SandboxBusy } from '../../db/untrusted.js';
import { CheckerProcess, HEAVY_NICE, LIGHT_NICE } from './checker-process.js';
import { watchCheck } from './check-watch.js';
import type { CheckerReply } from './sql-checker-protocol.js';
import { type CheckedSql, type QueryKind, SqlRefused } from './sql-guard.js';
import { OUT_OF_MEMORY } from './sandbox.js';
import type { Request, Running, Slot } from './checker-slot.js';
import { StarvedChecks } from './starved-checks.js';


/** Two: one org's checks hold at most one (ORG_SHARE), so the other serves everyone else. */
const CHECKERS = 2;
/** What one org may hold: all but one checker, which is always left for the other orgs. */
const ORG_SHARE = CHECKERS - 1;
/** A checker that ended is started again at the next check; one that cannot start fails that check. */
const START_TIMEOUT_MS = 60_000;
export interface SqlCheckerOptions {
  /** The org's memory share, DuckDB's syntax ("256MiB"), and in bytes for the address-space limit. */
  memoryLimit: string;
  memoryLimitBytes: number;
}

export class SqlChecker {
  private readonly slots: Slot[] = Array.from({ length: CHECKERS }, () => ({ checker: undefined, running: undefined, heldBy: undefined }));
  /** Waiting checks, in the order they were asked. */
  private readonly queue: Request[] = [];
  private readonly starved = new StarvedChecks();
  private nextId = 1;
  private closed = false;

  constructor(private readonly options: SqlCheckerOptions) {}

  /**
   * Checks `source` for `org` within `timeoutMs` (waiting included), `columns` being the org's custom
   * columns of `profiles`. Throws SqlRefused or SandboxBusy.
   */
  check(source: string, org: string, kind: QueryKind, timeoutMs: number, columns: readonly ProfileColumn[] = []): Promise<CheckedSql> {
    if (this.closed) return Promise.reject(new SandboxBusy('The service is shutting down; nothing was checked.'));
    const key = JSON.stringify([org, kind, source, columns]);
    const starved = this.starved.outcome(key, timeoutMs);
    if (starved) return starved;
    // The first check starts every checker: the next org's check finds one started.
    for (const slot of this.slots) slot.checker ??= this.spawn(slot);
    return new Promise<CheckedSql>((resolve, reject) => {
      const request: Request = { org, kind, source, columns: [...columns], key, asked: Date.now(), timeoutMs, resolve, reject };
      request.waitTimer = setTimeout(() => {
        this.queue.splice(this.queue.indexOf(request), 1);
        reject(new SandboxBusy('No SQL checker this org may use was free before its deadline (TRIGGER_TIMEOUT_MS); nothing was checked or recorded. Try again in a second.'));
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
      this.slots.map(async (slot) => {
        const { checker, running } = slot;
        slot.checker = undefined;
        if (running) this.end(slot, running, () => running.request.reject(new SandboxBusy('The service is shutting down; nothing was checked.')));
        await checker?.kill();
      }),
    );
  }

  /** How many checkers `org` holds: running its checks, or starting again after one of them. */
  private held(org: string): number {
    return this.slots.filter((s) => s.running?.request.org === org || s.heldBy === org).length;
  }

  /**
   * A slot held for an org takes that org's oldest check. Any other free slot takes the next check of the
   * org holding fewest (oldest first), preferring a checker that has served the org (its relations are
   * attached there: ~50 ms of CPU saved), then the started one that has served fewest orgs (a newcomer
   * does not take the checker another org's relations are attached to).
   */
  private dispatch(): void {
    if (this.closed) return;
    for (const slot of this.slots.filter((s) => !s.running && s.heldBy !== undefined)) {
      const request = this.queue.find((r) => r.org === slot.heldBy);
      if (request) this.start(slot, request);
    }
    for (;;) {
      const free = this.slots.filter((s) => !s.running && s.heldBy === undefined);
      const request = free.length > 0 ? this.next() : undefined;
      if (!request) return;
      const started = free.filter((s) => s.checker?.started).sort((a, b) => a.checker!.served.size - b.checker!.served.size);
      const slot = free.find((s) => s.checker?.served.has(request.org)) ?? started[0] ?? free[0]!;
      this.start(slot, request);
    }
  }

  private start(slot: Slot, request: Request): void {
    this.queue.splice(this.queue.indexOf(request), 1);
    clearTimeout(request.waitTimer);
    void this.run(slot, request);
  }

  /** The oldest check of the org holding fewest checkers, among orgs under their share. */
  private next(): Request | undefined {
    let best: Request | undefined;
    let bestHeld = ORG_SHARE;
    for (const request of this.queue) {
      const held = this.held(request.org);
      if (held < bestHeld) [best, bestHeld] = [request, held];
    }
    return best;
  }

  private async run(slot: Slot, request: Request): Promise<void> {
    // What is left of the deadline after the wait for a checker (starting one is not waiting: not counted).
    const budget = request.timeoutMs - (Date.now() - request.asked);
    const checker = (slot.checker ??= this.spawn(slot));
    slot.heldBy = undefined;
    checker.served.add(request.org);
    const running: Running = { request, id: this.nextId++, checker, overrun: undefined, unwatch: () => undefined, timer: undefined, heavy: false };
    slot.running = running;
    try {
      await withDeadline(checker.ready, START_TIMEOUT_MS, () => new Error('timed out'));
    } catch {
      if (slot.checker === checker) slot.checker = undefined;
      void checker.kill();
      this.end(slot, running, () => request.reject(new SandboxBusy('A SQL checker could not be started; nothing was checked. Try again.')));
      return;
    }
    if (slot.running !== running) return; // its checker ended while starting, which ended this check
    checker.send({ type: 'check', id: running.id, org: request.org, kind: request.kind, source: request.source, columns: request.columns });
    running.unwatch = watchCheck(checker, budget, request.timeoutMs, {
      heavy: () => {
        running.heavy = true;
        checker.renice(HEAVY_NICE);
      },
      overTime: () => this.stop(slot, running, () => overTime(request.timeoutMs)),
      starved: (cpu, elapsed) => this.starved.goOn(request, cpu, elapsed),
      givenUp: (cpu, elapsed) =>
        this.stop(slot, running, () => new SandboxBusy(`The machine was too busy for this check: it had ${Math.round(cpu)} ms of CPU in ${Math.round(elapsed)} ms and was given up; nothing was recorded. Try again.`)),
    });
  }

  /** Past its budget: told to stop; still running ABANDON_GRACE_MS later, its checker is killed and replaced. */
  private stop(slot: Slot, running: Running, verdict: () => Error): void {
    running.overrun = verdict;
    slot.checker?.send({ type: 'interrupt' });
    running.timer = setTimeout(() => {
      this.replace(slot, running.request.org);
      this.end(slot, running, () => running.request.reject(verdict()));
    }, ABANDON_GRACE_MS);
  }

  private replied(slot: Slot, reply: Exclude<CheckerReply, { type: 'ready' }>): void {
    const running = slot.running;
    if (!running || running.id !== reply.id) return;
    const { request, overrun } = running;
    switch (reply.type) {
      case 'checked':
        // Past its deadline the sample run may have been cut short by the interrupt itself (a run that
        // fails passes, see sql-check-process.ts): not a verdict that the query is cheap.
        return this.end(slot, running, () => (overrun ? request.reject(overrun()) : request.resolve(reply.checked)));
      case 'refused':
        return this.end(slot, running, () => request.reject(overrun ? overrun() : new SqlRefused(reply.reason, reply.budget)));
      case 'failed':
        // DuckDB failed on this SQL otherwise (out of memory in its share while parsing it, say): its verdict too.
        return this.end(slot, running, () =>
          request.reject(overrun ? overrun() : new SqlRefused(`the query could not be checked: ${reply.message}`, OUT_OF_MEMORY.test(reply.message) ? 'memory' : undefined)),
        );
    }
  }

  private exited(slot: Slot, checker: CheckerProcess, how: string): void {
    if (slot.checker !== checker) return; // replaced already
    slot.checker = undefined;
    if (slot.heldBy !== undefined && !slot.running) slot.heldBy = undefined; // its replacement did not start
    const running = slot.running;
    if (!running) return this.dispatch();
    // A checker that was running a check died of it (one check at a time): that check's verdict, and its
    // org waits for the replacement. One that never started says nothing about the SQL.
    const { request } = running;
    if (!checker.started) {
      return this.end(slot, running, () => request.reject(new SandboxBusy(`A SQL checker could not be started (${how}); nothing was checked. Try again.`)));
    }
    this.replace(slot, request.org);
    this.end(slot, running, () =>
      request.reject(new SqlRefused(`checking the query ended its checker (${how}): it needs more memory than its org's share (${this.options.memoryLimit})`, 'memory')),
    );
  }

  private end(slot: Slot, running: Running, outcome: () => void): void {
    if (slot.running !== running) return;
    clearTimeout(running.timer);
    running.unwatch();
    slot.running = undefined;
    // A heavy check's checker serves light checks again only at their niceness; lowering niceness needs
    // CAP_SYS_NICE, so without it the checker is replaced (its org waits for that, nobody else).
    if (running.heavy && slot.checker === running.checker && !running.checker.renice(LIGHT_NICE)) this.replace(slot, running.request.org);
    outcome();
    this.dispatch();
  }

  /** Kills the slot's checker (if still there) and starts a new one at once, held for `org` until it is ready. */
  private replace(slot: Slot, org: string): void {
    const old = slot.checker;
    slot.checker = undefined;
    void old?.kill();
    if (this.closed) return;
    const checker = this.spawn(slot, HEAVY_NICE);
    slot.checker = checker;
    slot.heldBy = org;
    void checker.ready.then(
      () => {
        if (slot.checker === checker && slot.heldBy === org) slot.heldBy = undefined;
        this.dispatch();
      },
      () => undefined,
    );
    this.dispatch();
  }

  private spawn(slot: Slot, nice = LIGHT_NICE): CheckerProcess {
    const events = {
      onReply: (reply: Exclude<CheckerReply, { type: 'ready' }>) => {
        if (slot.checker === checker) this.replied(slot, reply);
      },
      onExit: (how: string) => this.exited(slot, checker, how),
    };
    const checker: CheckerProcess = new CheckerProcess(this.options.memoryLimit, this.options.memoryLimitBytes, events, nice);
    return checker;
  }
}

function overTime(timeoutMs: number): SqlRefused {
  return new SqlRefused(
    `checking the query took longer than ${timeoutMs} ms (TRIGGER_TIMEOUT_MS): it is prepared (DuckDB evaluates constant expressions then) and run once on one sample row`,
    'time',
  );
}
