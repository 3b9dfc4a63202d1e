/** The checks this service's /readyz and /healthz run (health.ts says what each outcome means). */
import type { ControlDocuments } from '../control/types.js';
import type { Storage } from '../storage/open-storage.js';
import { EmbeddedLog } from '../events/log/embedded-log.js';
import type { LogBackend } from '../events/log/types.js';
import { diskCheck } from '../ops/disk-check.js';
import { Health, type HealthCheck } from '../ops/health.js';
import { type CompactionLag, LAG_NOTE_SECONDS } from '../ops/compaction-lag.js';

export interface ServiceHealthDeps {
  /** The control plane (the orgs' databases open and close on demand). */
  control: ControlDocuments;
  /** Absent on an `api` process in NATS mode (no collector, no storage). */
  log: LogBackend | undefined;
  /** The org databases; absent on a process without the storage role. */
  storage: Storage | undefined;
  dataDir: string;
  /** Whether this process writes DATA_DIR (embedded log, org databases): only then is its disk checked. */
  usesDataDir: boolean;
  /** How far compaction trails the log, where this process compacts. */
  lag: CompactionLag | undefined;
}

export function serviceHealth(deps: ServiceHealthDeps): Health {
  const { control, log, storage } = deps;
  const checks: HealthCheck[] = [];
  const storageProcess = storage?.process;
  if (storageProcess) {
    checks.push({
      name: 'storage',
      silence: 'the storage process did not answer a ping (busy)',
      silenceIsFatal: false,
      // Restarted by its supervisor when it ends; collect and lookups do not wait for it.
      advisory: true,
      run: () => storageProcess.health(),
    });
  }
  if (storage) {
    checks.push({
      name: 'orgs',
      silence: 'the storage process did not say which org databases cannot be opened',
      silenceIsFatal: false,
      // One org's damaged database is that org's problem: every other org is served.
      advisory: true,
      run: async () => {
        const unavailable = await storage.unavailable();
        const slugs = Object.keys(unavailable);
        return slugs.length === 0 ? { ok: true } : { ok: true, note: `org databases that cannot be opened: ${slugs.join(', ')}`, details: unavailable };
      },
    });
  }
  const { lag } = deps;
  if (lag) {
    checks.push({
      name: 'compaction',
      silence: 'the log did not say its head position',
      silenceIsFatal: false,
      // Lookups and collect are served while profiles trail the log: no reason to take this instance
      // out of a load balancer, which would only move its traffic (and its lag) to the others.
      advisory: true,
      run: async () => {
        const { records, seconds } = await lag.read();
        if (seconds <= LAG_NOTE_SECONDS) return { ok: true };
        const behind = { seconds: seconds.toFixed(1), records: String(records) };
        return { ok: true, note: `profiles are ${behind.seconds} s behind the log (${records} records)`, details: behind };
      },
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
