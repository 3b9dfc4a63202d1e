/**
 * Faults the soak injects, one at a time at random moments: the service killed (kill -9) and started
 * again on its DATA_DIR, the storage process killed (its supervisor starts a new one) or stopped
 * (SIGSTOP) for seconds, the disk saturated by a writer that syncs every megabyte, and the page cache
 * emptied again and again (as memory pressure does; needs root, else noted and skipped). Beside them, for the
 * whole run, busy loops take cores away as a loaded machine does.
 */
import { join } from 'node:path';
import { rmSync, writeFileSync } from 'node:fs';
import { Child } from '../procs.js';
import type { Target } from './drivers.js';
import { type SoakService, sleep, storagePid } from './service.js';

export type FaultKind = 'kill-service' | 'kill-storage' | 'stop-storage' | 'disk-pressure' | 'drop-caches';
export const FAULT_KINDS: readonly FaultKind[] = ['kill-service', 'kill-storage', 'stop-storage', 'disk-pressure', 'drop-caches'];

export interface FaultLog {
  kind: FaultKind;
  at: number;
  ms: number;
  note?: string;
}

export interface FaultDeps {
  target: Target;
  workDir: string;
  service: () => SoakService;
  /** Starts the service again after a kill (the new one becomes `service()`). */
  restart: () => Promise<void>;
  random: () => number;
}

export async function inject(kind: FaultKind, deps: FaultDeps): Promise<FaultLog> {
  const at = Date.now();
  const done = (note?: string): FaultLog => ({ kind, at, ms: Date.now() - at, ...(note ? { note } : {}) });
  switch (kind) {
    case 'kill-service': {
      deps.target.down = true;
      const { child } = deps.service();
      child.kill();
      await child.exited;
      await deps.restart();
      deps.target.down = false;
      return done();
    }
    case 'kill-storage': {
      const pid = storagePid(deps.service().child.pid);
      if (pid === undefined) return done('no storage process running');
      process.kill(pid, 'SIGKILL');
      return done(`pid ${pid}`);
    }
    case 'stop-storage': {
      const pid = storagePid(deps.service().child.pid);
      if (pid === undefined) return done('no storage process running');
      process.kill(pid, 'SIGSTOP');
      await sleep(2000 + deps.random() * 4000);
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // It was replaced meanwhile.
      }
      return done(`pid ${pid}`);
    }
    case 'disk-pressure': {
      const file = join(deps.workDir, 'pressure.bin');
      const writer = Child.exec('disk-pressure', 'dd', ['if=/dev/zero', `of=${file}`, 'bs=1M', 'count=384', 'conv=fsync', 'oflag=dsync'], {
        logFile: join(deps.workDir, 'faults.log'),
      });
      await Promise.race([writer.exited, sleep(15_000)]);
      writer.kill();
      rmSync(file, { force: true });
      return done();
    }
    case 'drop-caches': {
      for (let i = 0; i < 20; i++) {
        try {
          writeFileSync('/proc/sys/vm/drop_caches', '3\n');
        } catch (error) {
          return done(`not permitted (${(error as NodeJS.ErrnoException).code})`);
        }
        await sleep(500);
      }
      return done();
    }
  }
}

/** Busy loops for the whole run (the guide's "two busy loops beside the suite"). */
export function busyLoops(count: number, workDir: string): Child[] {
  return Array.from({ length: count }, (_, i) =>
    Child.exec(`busy-${i}`, process.execPath, ['-e', 'for(;;){}'], { logFile: join(workDir, 'faults.log') }),
  );
}
