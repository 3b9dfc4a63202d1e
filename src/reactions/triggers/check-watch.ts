/**
 * What a check running in a checker process (sql-checker.ts) has cost so far, read from the process's
 * CPU time (one check at a time, so it is the check's): whether it is heavy, and past its deadline
 * whether it used its time (a verdict) or was starved of CPU by other work (not one, yet).
 */
import type { CheckerProcess } from './checker-process.js';

/**
 * A check past its deadline with less than half of it in CPU was starved by other work, not slow: at
 * this many times its deadline its caller is told so (503, try again), and the check goes on using its
 * time: a heavy check's checker runs at nice 15, and beside a busy process at nice 0 on its core gets
 * 36/(1024+36) of it, 3.4 % (the kernel's weights; measured: 210 ms of CPU in 4,008 ms beside two busy
 * loops on 2 cores), so half of its time takes ~15 times its time.
 */
const STARVED_WALL_FACTOR = 4;
/** A starved check that has not used half its time in CPU by this many times its deadline is given up (3.4 % of a core: ~15). */
const GIVE_UP_WALL_FACTOR = 20;
/** How often a starved check's CPU is read again. */
const STARVED_POLL_MS = 100;
/**
 * A check that has used this much CPU is heavy: a check takes ~10 ms of CPU, attaching a new org's
 * relations first ~50 ms (measured on this 2-core machine).
 */
const HEAVY_CPU_MS = 100;
const HEAVY_POLL_MS = 50;

export interface CheckCost {
  /** It has used HEAVY_CPU_MS: once. */
  heavy(): void;
  /** Past `budgetMs` with at least half of `timeoutMs` in CPU (or where /proc cannot say): it used its time. */
  overTime(): void;
  /** Past STARVED_WALL_FACTOR × `budgetMs` with less than that: the machine did not give it its time (yet). Once; watching goes on. */
  starved(cpuMs: number, elapsedMs: number): void;
  /** Past GIVE_UP_WALL_FACTOR × `budgetMs`, still short of it: the machine will not give it its time. */
  givenUp(cpuMs: number, elapsedMs: number): void;
}

/** Watches from now on (the check was just sent); returns what stops watching. */
export function watchCheck(checker: CheckerProcess, budgetMs: number, timeoutMs: number, on: CheckCost): () => void {
  const cpuAtStart = checker.cpuMs();
  const sentAt = performance.now();
  const used = () => {
    const now = checker.cpuMs();
    return cpuAtStart === undefined || now === undefined ? undefined : now - cpuAtStart;
  };
  let deadline: NodeJS.Timeout | undefined;
  let weight: NodeJS.Timeout | undefined;
  let toldStarved = false;
  const judge = () => {
    const cpu = used();
    const elapsed = performance.now() - sentAt;
    if (cpu === undefined || cpu >= timeoutMs / 2) return on.overTime();
    if (elapsed >= GIVE_UP_WALL_FACTOR * budgetMs) return on.givenUp(cpu, elapsed);
    if (!toldStarved && elapsed >= STARVED_WALL_FACTOR * budgetMs) {
      toldStarved = true;
      on.starved(cpu, elapsed);
    }
    deadline = setTimeout(judge, STARVED_POLL_MS);
  };
  const weigh = () => {
    const cpu = used();
    if (cpu === undefined) return;
    if (cpu >= HEAVY_CPU_MS) return on.heavy();
    weight = setTimeout(weigh, HEAVY_POLL_MS);
  };
  deadline = setTimeout(judge, budgetMs);
  weight = setTimeout(weigh, HEAVY_POLL_MS);
  return () => {
    clearTimeout(deadline);
    clearTimeout(weight);
  };
}
