/** CPU time from /proc: of a process tree (the service and its storage and checker processes), and of the machine. */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's times (100, Linux's default, when getconf cannot say). */
export const CLOCK_TICKS = ((): number => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/**
 * CPU seconds of a process and all its descendants: the service runs its org databases in a storage
 * process and its SQL checks in checker processes, whose CPU is the service's. Live descendants are read
 * from /proc; ended ones Node has reaped are in the parent's cutime and cstime.
 */
export function treeCpuSeconds(pid: number): number {
  let total = 0;
  for (const member of processTree(pid)) {
    const fields = statFields(member);
    if (!fields) continue;
    // utime, stime, cutime, cstime: fields 14–17 of the full line.
    total += (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / CLOCK_TICKS;
  }
  return total;
}

/** Busy and total CPU seconds of the whole machine (all cores), from /proc/stat. */
export function machineCpuSeconds(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal ...
  const idle = (v[3] ?? 0) + (v[4] ?? 0);
  const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: (total - idle) / CLOCK_TICKS, total: total / CLOCK_TICKS };
}

/** `pid` and every live process below it. */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const parent = Number(statFields(Number(name))?.[1]);
    if (!Number.isFinite(parent)) continue;
    children.set(parent, [...(children.get(parent) ?? []), Number(name)]);
  }
  const tree: number[] = [];
  for (const queue = [pid]; queue.length > 0; ) {
    const next = queue.shift()!;
    tree.push(next);
    queue.push(...(children.get(next) ?? []));
  }
  return tree;
}

/** Fields of /proc/<pid>/stat after the command name; undefined once the process is gone. */
export function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** Where a span of the rest of the machine's CPU starts: see othersCores. */
export interface CpuMark {
  machine: number;
  ours: number;
  at: number;
}

export function cpuMark(): CpuMark {
  return { machine: machineCpuSeconds().busy, ours: treeCpuSeconds(process.pid), at: performance.now() };
}

/**
 * The cores the rest of the machine kept busy since `mark`: all of its busy CPU less this process tree's
 * (a test's service, its storage and checker processes). Another test file's processes beside this one in
 * CI, or a busy loop, show here; the test's own work does not.
 */
export function othersCores(mark: CpuMark): number {
  const seconds = (performance.now() - mark.at) / 1000;
  if (seconds <= 0) return 0;
  const others = machineCpuSeconds().busy - mark.machine - (treeCpuSeconds(process.pid) - mark.ours);
  return Math.max(0, others / seconds);
}
