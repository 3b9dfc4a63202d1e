/**
 * libuv's thread pool, as it really is. DuckDB runs every statement on this pool, so a process that runs
 * DuckDB needs more threads than statements it lets run at once. The size is read once, from
 * UV_THREADPOOL_SIZE, when the pool starts: setting the variable from code is too late (loading ES
 * modules already started the pool with 4), so the service sets it in the storage process's environment
 * (spawn-process.ts), and each process checks at start that the pool it got is the pool it needs:
 * - the storage process: 16 (open-storage.ts);
 * - the service's own process: libuv's default of 4 (SERVICE_THREAD_POOL_SIZE), since nothing there can
 *   hold a thread for long but webhook DNS lookups, and those take at most 2 (channels/target-guard.ts):
 *   the embedded log's writes and the control plane's statements always find one.
 *
 * The check is exact, not timed: `threads - 1` opens of FIFOs that have no writer each hold a pool
 * thread; one more file operation then completes only if a thread is left. Opening each FIFO
 * read-write (which never blocks on Linux) lets the held opens return.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** What the service's own process needs (see above); an operator's UV_THREADPOOL_SIZE may raise it. */
export const SERVICE_THREAD_POOL_SIZE = 4;

/** A free thread answers a stat in microseconds; this only bounds the wait when none is free. */
const FREE_THREAD_WAIT_MS = 5_000;

/** Whether libuv's pool in this process has at least `threads` threads (`waitMs`: how long a free thread may take to answer). */
export async function threadPoolHasAtLeast(threads: number, waitMs = FREE_THREAD_WAIT_MS): Promise<boolean> {
  const dir = mkdtempSync(join(tmpdir(), 'audience-pool-'));
  try {
    const fifos = Array.from({ length: threads - 1 }, (_, i) => join(dir, `f${i}`));
    if (fifos.length > 0) execFileSync('mkfifo', fifos);
    const held = fifos.map((fifo) => open(fifo, 'r'));
    let timer: NodeJS.Timeout | undefined;
    const free = await Promise.race([
      stat(dir).then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), waitMs))),
    ]);
    clearTimeout(timer);
    const writers = fifos.map((fifo) => openSync(fifo, 'r+'));
    for (const handle of await Promise.all(held)) await handle.close();
    for (const fd of writers) closeSync(fd);
    return free;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
