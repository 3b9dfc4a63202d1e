/**
 * One checker process as sql-checker.ts sees it: started with the org's memory share as its address
 * space (tightened once the runtime is loaded), niced below the service, and told apart from its
 * replacement by identity. It says when it is ready, what it answered, and how it ended.
 */
import type { ChildProcess } from 'node:child_process';
import { cpuTimeMs, renice, spawnProcess, tightenAddressSpace } from '../../core/spawn-process.js';
import type { CheckerReply, CheckerRequest } from './sql-checker-protocol.js';

/** Checks are small: a checker's JS heap holds the SQL and its syntax tree. */
const CHECKER_HEAP_MB = 128;
/** The heap's share of the address space, beyond the org's memory share. */
const CHECKER_HEAP_BYTES = 2 * CHECKER_HEAP_MB * 1024 ** 2;
/**
 * A check starts at the storage process's niceness: below the service (collect, lookups), level with
 * every org's queries, so a light check of one org is not starved by another org's heavy queries (at
 * nice 15 beside them, a 10 ms check took 80-490 ms and once 4 s). A heavy one is moved to HEAVY_NICE.
 */
export const LIGHT_NICE = 10;
/** A check that has used HEAVY_CPU_MS yields to compaction and to every org's light checks and queries. */
export const HEAVY_NICE = 15;

export interface CheckerEvents {
  /** An answer to a check (`ready` is reported through `ready`). */
  onReply(reply: Exclude<CheckerReply, { type: 'ready' }>): void;
  /** The process ended, whoever ended it; `how` says how. */
  onExit(how: string): void;
}

export class CheckerProcess {
  /** Settles once the process can take a check (rejects if it ended first). */
  readonly ready: Promise<void>;
  /** It reached ready: a death from here on is a check's doing, not a start that failed. */
  started = false;
  /** Orgs it has checked for (it keeps their relations attached, up to 32: sql-check-process.ts). */
  readonly served = new Set<string>();
  private readonly child: ChildProcess;
  private exited = false;

  /** `nice`: a replacement for a checker one org's check ended starts at HEAVY_NICE (its start is that org's cost) and is moved to LIGHT_NICE once ready. */
  constructor(memoryLimit: string, memoryLimitBytes: number, events: CheckerEvents, nice = LIGHT_NICE) {
    this.child = spawnProcess(import.meta.url, './sql-check-process', {
      addressSpaceBytes: CHECKER_HEAP_BYTES + memoryLimitBytes,
      nice,
      nodeOptions: [`--max-old-space-size=${CHECKER_HEAP_MB}`],
    });
    let ready!: () => void;
    let failed!: (error: Error) => void;
    this.ready = new Promise<void>((resolve, reject) => ((ready = resolve), (failed = reject)));
    this.ready.catch(() => undefined);
    this.send({ type: 'init', memoryLimit });
    this.child.on('message', (reply: CheckerReply) => {
      if (reply.type !== 'ready') return events.onReply(reply);
      // From here a check gets the org's share (and room for the heap), whatever the runtime took.
      void tightenAddressSpace(this.child.pid!, CHECKER_HEAP_BYTES + memoryLimitBytes).then(() => {
        // Without CAP_SYS_NICE it stays at HEAVY_NICE, where every checker ran before.
        if (nice !== LIGHT_NICE) this.renice(LIGHT_NICE);
        this.started = true;
        ready();
      });
    });
    const exited = (how: string) => {
      if (this.exited) return;
      this.exited = true;
      failed(new Error(how));
      events.onExit(how);
    };
    this.child.once('error', (error) => exited(`it could not be started: ${error.message}`));
    this.child.once('exit', (code, signal) => exited(signal ? `ended by ${signal}` : `exit code ${code}`));
  }

  /** CPU time the process has used so far (all its threads), ms; undefined where /proc cannot say. */
  cpuMs(): number | undefined {
    return cpuTimeMs(this.child.pid);
  }

  /** Sets the niceness of every thread of the process (false when the system refused). */
  renice(nice: number): boolean {
    return renice(this.child.pid, nice);
  }

  send(message: CheckerRequest): void {
    if (this.child.connected) this.child.send(message, (error) => void error);
  }

  /** SIGKILL: the only way to stop DuckDB inside one native call. Resolves once it is gone. */
  async kill(): Promise<void> {
    if (this.exited || (this.child.exitCode !== null || this.child.signalCode !== null)) return;
    const gone = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGKILL');
    await gone;
  }
}
