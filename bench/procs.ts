/** Child processes for the benchmark (bare server, the service) and CPU accounting from /proc. */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';

let clockTicks = 100;
try {
  clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
} catch {
  // Linux default.
}

/** CPU seconds (user + system, all threads) a process has used so far, from /proc/<pid>/stat. */
export function processCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may contain spaces) start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the full line: 12th and 13th after the name.
  return (Number(fields[11]) + Number(fields[12])) / clockTicks;
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

/** Busy and total CPU seconds of the whole machine (all cores), from /proc/stat. */
export function machineCpuSeconds(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal ...
  const idle = (v[3] ?? 0) + (v[4] ?? 0);
  const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: (total - idle) / clockTicks, total: total / clockTicks };
}

/** The tests' helper: one implementation of "a free port on 127.0.0.1". */
export { freePort } from '../test/helpers/free-port.js';

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class Child {
  readonly exited: Promise<Exit>;
  private exit: Exit | undefined;

  private constructor(
    readonly name: string,
    private readonly proc: ChildProcess,
    readonly logFile: string,
  ) {
    this.exited = new Promise((resolve) => {
      proc.once('exit', (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      });
    });
  }

  /** Starts `node <nodeArgs> <script>` with stdout and stderr appended to `logFile`. */
  static start(name: string, script: string, options: { env: NodeJS.ProcessEnv; cwd: string; logFile: string; nodeArgs?: string[] }): Child {
    const out = createWriteStream(options.logFile, { flags: 'a' });
    const proc = spawn(process.execPath, [...(options.nodeArgs ?? []), script], {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    proc.stdout!.pipe(out, { end: false });
    proc.stderr!.pipe(out, { end: false });
    return new Child(name, proc, options.logFile);
  }

  get pid(): number {
    return this.proc.pid!;
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  cpuSeconds(): number {
    return processCpuSeconds(this.pid);
  }

  rssBytes(): number {
    return rssBytes(this.pid);
  }

  /** SIGTERM, then SIGKILL if it has not exited within `timeoutMs`. */
  async stop(timeoutMs = 60_000): Promise<Exit & { killed: boolean }> {
    if (!this.running) return { ...this.exit!, killed: false };
    this.proc.kill('SIGTERM');
    const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), timeoutMs).unref());
    const outcome = await Promise.race([this.exited, timer]);
    if (outcome !== 'timeout') return { ...outcome, killed: false };
    this.proc.kill('SIGKILL');
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
): Promise<{ waitedMs: number; busyCores: number }> {
  const started = performance.now();
  for (;;) {
    const a = machineCpuSeconds().busy - ownCpu() - selfCpuSeconds();
    const t = performance.now();
    await new Promise((r) => setTimeout(r, 1000));
    const b = machineCpuSeconds().busy - ownCpu() - selfCpuSeconds();
    const busyCores = (b - a) / ((performance.now() - t) / 1000);
    const waitedMs = Math.round(performance.now() - started);
    if (busyCores < maxCores || waitedMs > timeoutMs) return { waitedMs, busyCores: Math.max(0, Math.round(busyCores * 100) / 100) };
  }
}
