/**
 * Free space where the service writes durably (DATA_DIR: DuckDB and its WAL; the embedded log's directory).
 * A full disk fails log appends (collect answers 503) and compaction commits; readiness says so first.
 */
import { statfs } from 'node:fs/promises';
import type { CheckOutcome, HealthCheck } from './health.js';

/** DuckDB's WAL grows to 256 MB before a checkpoint (database.ts), so less than that is close to full. */
const MIN_FREE_BYTES = 256 * 1024 * 1024;
/** On a small volume a fixed 256 MB would never be free; there the bar is 5 % of its size. */
const MIN_FREE_FRACTION = 0.05;

/** The free space below which a file system of `totalBytes` counts as full. */
export function minFreeBytes(totalBytes: number): number {
  return Math.min(MIN_FREE_BYTES, Math.floor(totalBytes * MIN_FREE_FRACTION));
}

export function diskCheck(paths: readonly string[]): HealthCheck {
  return {
    name: 'disk',
    silence: 'the file system did not answer statfs',
    silenceIsFatal: false,
    async run(): Promise<CheckOutcome> {
      const low: string[] = [];
      for (const path of new Set(paths)) {
        const fs = await statfs(path);
        const free = fs.bavail * fs.bsize;
        const needed = minFreeBytes(fs.blocks * fs.bsize);
        if (free < needed) low.push(`${path} has ${mib(free)} free, below ${mib(needed)}`);
      }
      if (low.length === 0) return { ok: true };
      return { ok: false, reason: `low disk space: ${low.join(', ')}; free some space`, fatal: false };
    },
  };
}

function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
