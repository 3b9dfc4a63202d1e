/**
 * The log position every org's database has reached: compaction reads the log from here at start, and
 * each org skips the records its own database already holds (its log_cursor). Written after every batch
 * whose orgs all committed, so it is never ahead of any org; it need not be durable (a stale or lost
 * checkpoint only replays more records, which the orgs skip), so a plain write and rename suffice.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';

/** In DATA_DIR/orgs. */
export const CHECKPOINT_FILE = 'log.checkpoint';

export class LogCheckpoint {
  constructor(readonly file: string) {}

  read(): number {
    try {
      const seq = Number(readFileSync(this.file, 'utf8').trim());
      return Number.isSafeInteger(seq) && seq >= 0 ? seq : 0;
    } catch {
      return 0;
    }
  }

  write(seq: number): void {
    writeFileSync(`${this.file}.tmp`, `${seq}\n`);
    renameSync(`${this.file}.tmp`, this.file);
  }
}
