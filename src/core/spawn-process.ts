/**
 * Starts a child Node process whose entry module sits next to the caller (`entry` without extension),
 * with an IPC channel. Under tsx (tests, `node --import tsx`) the entry is TypeScript and the child loads
 * tsx first; from built JS it is the compiled `.js` file.
 *
 * Why a process and not a thread: native code (DuckDB) that ignores interrupts can only be stopped by
 * killing what runs it, and a thread cannot be killed while the native call holds it. A process can, and
 * the kernel then takes its memory back.
 * - `addressSpaceBytes` caps the child's virtual memory (RLIMIT_AS; Node has no setrlimit, so the shell's
 *   `ulimit -v` sets it before `exec`). Past it, allocations fail: DuckDB answers the query making them
 *   with an out-of-memory error instead of the kernel's OOM killer choosing a process.
 * - `nice` lowers the child's CPU priority, so when CPU is short the parent (collect, lookups) runs first
 *   (set at the spawn; `renice` sets it later, e.g. once a child has loaded at full priority).
 * - the child is the kernel's first choice when memory runs out (oom_score_adj 1000), never the parent.
 * - messages use the structured clone algorithm (`serialization: 'advanced'`): bigint, Date and typed
 *   arrays cross as they do between threads.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';

/**
 * Address space a child takes before doing anything: Node and V8 reserve 1.07 GB at start, loading
 * DuckDB 0.3 GB more (measured on Node 20, x64). Added to the child's own limit.
 */
const RUNTIME_ADDRESS_SPACE = 1.5 * 1024 ** 3;
/** tsx (tests, `node --import tsx`) and its WebAssembly take ~1.3 GB more. */
const TSX_ADDRESS_SPACE = 1.5 * 1024 ** 3;
/** 256 MiB per WebAssembly memory (see below); the service's own use (tsx, undici's HTTP parser) is far below. */
const WASM_MAX_PAGES = 4096;

export interface ChildProcessOptions {
  /** Address space the child's work may take (RLIMIT_AS is this plus what the runtime takes), bytes. */
  addressSpaceBytes?: number;
  /** Niceness (0–19). */
  nice?: number;
  /** Added to the parent's environment (e.g. UV_THREADPOOL_SIZE, read by libuv before any code runs). */
  env?: Record<string, string>;
  /** Node options of the child, e.g. `--max-old-space-size=1024`. */
  nodeOptions?: string[];
}

export function spawnProcess(callerUrl: string, entry: string, options: ChildProcessOptions = {}): ChildProcess {
  const typescript = callerUrl.endsWith('.ts');
  const file = fileURLToPath(new URL(`${entry}.${typescript ? 'ts' : 'js'}`, callerUrl));
  const limited = options.addressSpaceBytes !== undefined;
  const node = [
    ...(options.nodeOptions ?? []),
    // V8 reserves ~10 GB of address space per WebAssembly memory for its out-of-bounds trap handler, and
    // 4 GB without it: an address-space limit refuses both. Explicit bounds checks and a smaller maximum
    // per memory need neither.
    ...(limited ? ['--disable-wasm-trap-handler', `--wasm-max-mem-pages=${WASM_MAX_PAGES}`] : []),
    ...(typescript ? ['--import', import.meta.resolve('tsx')] : []),
    file,
  ];
  const limitBytes = (options.addressSpaceBytes ?? 0) + RUNTIME_ADDRESS_SPACE + (typescript ? TSX_ADDRESS_SPACE : 0);
  const [command, args] = limited
    ? ['/bin/sh', ['-c', 'ulimit -v "$1" && shift && exec "$@"', 'sh', String(Math.floor(limitBytes / 1024)), process.execPath, ...node]]
    : [process.execPath, node];
  const child = spawn(command, args, {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'advanced',
    env: { ...process.env, ...options.env },
  });
  // The shell execs node in place, so the pid stays the child's; both settings survive the exec.
  if (child.pid !== undefined) {
    if (options.nice !== undefined) setPriority(child.pid, options.nice);
    try {
      writeFileSync(`/proc/${child.pid}/oom_score_adj`, '1000');
    } catch {
      // Not Linux, or /proc not writable: the address-space limit still bounds the child.
    }
  }
  return child;
}

/**
 * Sets the niceness of every thread of a process (Linux's nice is per thread; a thread started later
 * takes its starter's). False when the system refused (lowering it back needs CAP_SYS_NICE).
 */
export function renice(pid: number | undefined, nice: number): boolean {
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) setPriority(Number(tid), nice);
    return true;
  } catch {
    return false;
  }
}

/** Linux's clock ticks per second (USER_HZ), the unit of /proc/<pid>/stat's CPU times: 100 on every Linux ABI Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * CPU time a child has used so far (all its threads, DuckDB's included), ms; undefined where /proc
 * cannot say. Tells a query that is slow from one that was starved of CPU by a busy machine.
 */
export function cpuTimeMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    // The command name (field 2) is in parentheses and may hold spaces: count fields after its ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** A process's address space now (VmSize), bytes; undefined where /proc cannot say. */
export function addressSpaceOf(pid: number): number | undefined {
  try {
    const size = /VmSize:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return size === undefined ? undefined : Number(size) * 1024;
  } catch {
    return undefined;
  }
}

/**
 * Lowers a running child's address-space limit to what it has now plus `moreBytes` (util-linux's
 * prlimit: Node cannot set another process's limits). The limit set at spawn has to guess what the
 * runtime takes; once the child is started, this makes `moreBytes` what its work really gets. Resolves
 * false where prlimit or /proc is missing: the spawn-time limit then stays.
 */
export function tightenAddressSpace(pid: number, moreBytes: number): Promise<boolean> {
  const now = addressSpaceOf(pid);
  if (now === undefined) return Promise.resolve(false);
  const limit = String(now + moreBytes);
  return new Promise((resolve) => execFile('prlimit', ['--pid', String(pid), `--as=${limit}:${limit}`], (error) => resolve(error === null)));
}

/**
 * For the child's side: it lives and dies with the service. When the IPC channel closes (the service
 * exited, or was killed -9) nothing is left to answer, and files it holds (DuckDB's locks) must be free
 * for the next service's children, so it exits. Ctrl-C and a supervisor's SIGTERM reach the whole process
 * group: they are the service's to act on, which then closes this process itself (DuckDB checkpointed first).
 */
export function liveWithParent(): void {
  process.once('disconnect', () => process.exit(0));
  process.on('SIGINT', () => undefined);
  process.on('SIGTERM', () => undefined);
}
