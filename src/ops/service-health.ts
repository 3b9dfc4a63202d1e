/** The checks this service's /readyz and /healthz run (health.ts says what each outcome means). */
import type { ControlDocuments } from '../control/types.js';
import type { StorageWorker } from '../storage/storage-client.js';
import { EmbeddedLog } from '../log/embedded-log.js';
import type { LogBackend } from '../log/types.js';
import { diskCheck } from './disk-check.js';
import { Health, type HealthCheck } from './health.js';

export interface ServiceHealthDeps {
  /** The control plane (the orgs' databases open and close on demand). */
  control: ControlDocuments;
  /** Absent on an `api` process in NATS mode (no collector, no storage). */
  log: LogBackend | undefined;
  /** Absent with STORAGE_THREAD=main: DuckDB then runs on this thread, which answering proves alive. */
  worker: StorageWorker | undefined;
  dataDir: string;
  /** Whether this process writes DATA_DIR (embedded log, org databases): only then is its disk checked. */
  usesDataDir: boolean;
}

export function serviceHealth(deps: ServiceHealthDeps): Health {
  const { control, log, worker } = deps;
  const checks: HealthCheck[] = [];
  if (worker) {
    checks.push({
      name: 'storage_worker',
      silence: 'the storage worker thread did not answer',
      // Its event loop answers a ping between statements; silence this long means it is stuck.
      silenceIsFatal: true,
      run: () => worker.health(),
    });
  }
  checks.push(
    {
      name: control.kind === 'duckdb' ? 'duckdb' : 'control',
      // Embedded: the control plane's DuckDB answers SELECT 1 on its one connection, so a long statement
      // makes this wait. Busy is not broken, so not fatal; readiness says so while it lasts.
      silence: control.kind === 'duckdb' ? 'DuckDB did not answer SELECT 1 (busy or stuck)' : 'NATS (control plane) did not answer a ping',
      silenceIsFatal: false,
      run: () => control.health(),
    },
  );
  if (log) {
    checks.push({
      name: 'log',
      silence: log.kind === 'jetstream' ? 'NATS did not answer a ping' : 'the embedded log did not answer',
      silenceIsFatal: false,
      run: () => log.health(),
    });
  }
  if (deps.usesDataDir) checks.push(diskCheck(log instanceof EmbeddedLog ? [deps.dataDir, log.directory] : [deps.dataDir]));
  return new Health(checks);
}
