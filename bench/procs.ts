/** Child processes for the benchmark (bare server, the service) and CPU accounting from /proc. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { CLOCK_TICKS, machineCpuSeconds, processTree, statFields, treeCpuSeconds } from '../test/helpers/cpu-time.js';

export { machineCpuSeconds, treeCpuSeconds };

/** CPU seconds (user + system, all threads) a process has used so far, from /proc/<pid>/stat. */
export function processCpuSeconds(pid: number): number {
  const fields = statFields(pid);
  if (!fields) throw new Error(`process ${pid} is gone`);
  // utime and stime are fields 14 and 15 of the full line: 12th and 13th after the name.
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** Resident memory of a process and its descendants (see treeCpuSeconds), in bytes. */
export function treeRssBytes(pid: number): number {
  return processTree(pid).reduce((sum, member) => sum + (rssBytes(member) || 0), 0);
}

/** Resident memory of a process (VmRSS of /proc/<pid>/status), in bytes. */
export function rssBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  // "VmRSS:   123456 kB"
  return line ? Number(line.split(/\s+/)[1]) * 1024 : NaN;
}

/** This process's CPU seconds (the load generator runs in it). */
export function selfCpuSeconds(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
}

/** The tests' helper: one implementation of "a free port on 127.0.0.1". */
export { freePort } from '../test/helpers/free-port.js';

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ExecOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  logFile: string;
  /** taskset's CPU list (e.g. "0", "2-15"): the process and its threads run only there. */
  cpus?: string;
  /** Its own process group, signalled whole: for a shell whose child must not outlive it. */
  group?: boolean;
}

/** Every child still running: killed when the bench exits, however it exits (a failure, Ctrl-C, SIGTERM). */
const live = new Set<Child>();
process.once('exit', () => {
  for (const child of live) child.kill();
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`bench: ${signal}, stopping ${live.size} child process(es)`);
    // process.exit runs the exit hook above.
    process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
  });
}

export class Child {
  readonly exited: Promise<Exit>;
  /** Resolves once the process has exited and everything it printed is in the log file. */
  flushed: Promise<void> = Promise.resolve();
  private exit: Exit | undefined;

  private constructor(
    readonly name: string,
    private readonly proc: ChildProcess,
    readonly logFile: string,
    private readonly group: boolean,
  ) {
    this.exited = new Promise((resolve) => {
      proc.once('exit', (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      });
    });
  }

  /** Starts `node <nodeArgs> <script>` with stdout and stderr appended to `logFile`. */
  static start(name: string, script: string, options: ExecOptions & { nodeArgs?: string[] }): Child {
    return Child.exec(name, process.execPath, [...(options.nodeArgs ?? []), script], options);
  }

  /**
   * Starts any command with stdout and stderr appended to `logFile`; with `cpus` it runs under
   * `taskset -c <cpus>` (taskset execs the command, so the pid and /proc figures are the command's).
   */
  static exec(name: string, command: string, args: string[], options: ExecOptions): Child {
    const out = createWriteStream(options.logFile, { flags: 'a' });
    const [file, argv] = options.cpus ? ['taskset', ['-c', options.cpus, command, ...args]] : [command, args];
    const proc = spawn(file, argv, {
      ...(options.cwd ? { cwd: options.cwd } : {}),
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: options.group === true,
    });
    proc.stdout!.pipe(out, { end: false });
    proc.stderr!.pipe(out, { end: false });
    const child = new Child(name, proc, options.logFile, options.group === true);
    // 'close' comes after both pipes have ended; then the file gets the last bytes.
    child.flushed = new Promise((resolve) => proc.once('close', () => out.end(resolve)));
    live.add(child);
    void child.exited.then(() => live.delete(child));
    return child;
  }

  /** SIGKILL now, without waiting (the exit hook above). */
  kill(): void {
    if (this.running) this.signal('SIGKILL');
  }

  private signal(signal: NodeJS.Signals): void {
    if (!this.group) {
      this.proc.kill(signal);
      return;
    }
    try {
      process.kill(-this.pid, signal);
    } catch {
      // The group is gone already.
    }
  }

  get pid(): number {
    return this.proc.pid!;
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  cpuSeconds(): number {
    return treeCpuSeconds(this.pid);
  }

  rssBytes(): number {
    return treeRssBytes(this.pid);
  }

  /** SIGTERM, then SIGKILL if it has not exited within `timeoutMs`. */
  async stop(timeoutMs = 60_000): Promise<Exit & { killed: boolean }> {
    if (!this.running) return { ...this.exit!, killed: false };
    this.signal('SIGTERM');
    const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), timeoutMs).unref());
    const outcome = await Promise.race([this.exited, timer]);
    if (outcome !== 'timeout') return { ...outcome, killed: false };
    this.signal('SIGKILL');
    return { ...(await this.exited), killed: true };
  }

  /** Fails fast when the process dies while we wait for something else. */
  async guard<T>(work: Promise<T>): Promise<T> {
    const died = this.exited.then((e) => {
      throw new Error(`${this.name} exited early (code ${e.code}, signal ${e.signal}):\n${tail(this.logFile)}`);
    });
    return Promise.race([work, died]);
  }
}

/** The last lines of a log file, for error messages (the temp dir is removed at exit). */
export function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return `(no ${file})`;
  }
}

/** Polls `url` until it answers 2xx. */
export async function waitHttpOk(url: string, child: Child, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!child.running) throw new Error(`${child.name} exited before it was ready:\n${tail(child.logFile)}`);
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${child.name} not ready at ${url} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The machine is shared (other people's tests and builds): waits until the whole machine has used less
 * than `maxCores` over a 1 s window, at most `timeoutMs`. Returns the last window's busy cores.
 */
export async function waitQuiet(
  maxCores: number,
  timeoutMs: number,
  /** CPU seconds of our own processes (not counted: the service may still be compacting). */
  ownCpu: () => number = () => 0,
  /** What is measured instead of the machine less ours (e.g. our own processes, to wait for them to settle). */
  busyCpu: () => number = () => machineCpuSeconds().busy - ownCpu() - selfCpuSeconds(),
): Promise<{ waitedMs: number; busyCores: number }> {
  const started = performance.now();
  for (;;) {
    const a = busyCpu();
    const t = performance.now();
    await new Promise((r) => setTimeout(r, 1000));
    const b = busyCpu();
    const busyCores = (b - a) / ((performance.now() - t) / 1000);
    const waitedMs = Math.round(performance.now() - started);
    if (busyCores < maxCores || waitedMs > timeoutMs) return { waitedMs, busyCores: Math.max(0, Math.round(busyCores * 100) / 100) };
  }
}
