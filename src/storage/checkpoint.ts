/**
 * Two log positions the compactor keeps in DATA_DIR/orgs, next to the org databases:
 *
 * - the checkpoint (`log.checkpoint`), the position every org's database has reached: compaction reads
 *   the log from here at start, and each org skips the records its own database already holds (its
 *   log_cursor). Written after every batch whose orgs all committed, so it is never ahead of any org; it
 *   need not be durable (a stale or lost checkpoint only replays more records, which the orgs skip), so a
 *   plain write and rename suffice.
 * - the high-water mark (`log.high-water`), the highest position any org's database may hold: raised
 *   durably before an org commits a higher log_cursor. The log opens numbering above it (embedded-log.ts,
 *   jetstream-log.ts), so a log that lost its tail or was replaced never hands out a position an org
 *   would skip as already applied, and this needs no org database opened at start (there may be
 *   thousands).
 */
import { constants, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ORGS_DIR } from './org-files.js';
import { syncDirectory } from '../core/sync-directory.js';

/** In DATA_DIR/orgs. */
export const CHECKPOINT_FILE = 'log.checkpoint';
export const HIGH_WATER_FILE = 'log.high-water';
/** 20 digits and a newline, always: the file never changes size, so each raise is one in-place write. */
const HIGH_WATER_DIGITS = 20;

export class LogCheckpoint {
  readonly highWaterFile: string;

  constructor(readonly file: string) {
    this.highWaterFile = join(dirname(file), HIGH_WATER_FILE);
  }

  read(): number {
    return readPosition(this.file);
  }

  write(seq: number): void {
    writeFileSync(`${this.file}.tmp`, `${seq}\n`);
    renameSync(`${this.file}.tmp`, this.file);
  }

  /** No org holds a position above this. A missing or damaged file (or one from before the mark was
   *  kept) counts as the checkpoint, which no org was ever more than a batch ahead of. */
  highWater(): number {
    return Math.max(readPosition(this.highWaterFile), this.read());
  }

  /**
   * Makes `seq` the high-water mark before any org may commit it. One write of 21 bytes at offset 0
   * with O_DSYNC: a single sector, written whole or not at all, and durable when this resolves (one
   * small fsync per compaction batch; measured in docs/design.md).
   */
  async raiseHighWater(seq: number): Promise<void> {
    // Never through a symlink: the file is the service's own.
    const handle = await open(this.highWaterFile, constants.O_WRONLY | constants.O_CREAT | constants.O_DSYNC | constants.O_NOFOLLOW, 0o644);
    try {
      const created = (await handle.stat()).size === 0;
      await handle.write(`${String(seq).padStart(HIGH_WATER_DIGITS, '0')}\n`, 0);
      if (created) await syncDirectory(dirname(this.highWaterFile));
    } finally {
      await handle.close();
    }
  }
}

/** What the log must stay above at start: the high-water mark and checkpoint of `<dataDir>/orgs`. */
export function logPositions(dataDir: string): { highWater: number; compactedSeq: number } {
  const checkpoint = new LogCheckpoint(join(dataDir, ORGS_DIR, CHECKPOINT_FILE));
  return { highWater: checkpoint.highWater(), compactedSeq: checkpoint.read() };
}

/** A position file's number; 0 when it is missing or does not hold one. */
function readPosition(file: string): number {
  try {
    const text = readFileSync(file, 'utf8').trim();
    const seq = Number(text);
    return /^\d+$/.test(text) && Number.isSafeInteger(seq) ? seq : 0;
  } catch {
    return 0;
  }
}

