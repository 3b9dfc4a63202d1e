/**
 * How many log records the compactor reads at once, and when: batches sized to a number of events, and
 * spaced under steady traffic so each carries more of them.
 */

/**
 * Events per transaction: large enough for appender throughput, small enough that one commit stays in
 * the tens of milliseconds. A record holds one group commit (1 to ~1,000 events), so the number of
 * records read is adapted to the recent events-per-record.
 */
const TARGET_EVENTS_PER_BATCH = 5000;
const MAX_RECORDS_PER_BATCH = 500;
/**
 * Under steady traffic a batch starts at least this long after the previous one, so each carries more
 * events: every commit costs ~6 ms of CPU besides its rows (BEGIN, COMMIT with the WAL sync, the
 * cursor, the profile refresh after it). Measured on 2 cores at the collect maximum: 0 ms → 40 commits/s,
 * 5.2–6.1k collect req/s; 100 ms → 8 commits/s, 6.4–7.1k req/s. An event arriving after a quiet
 * moment is committed at once, so an idle service's freshness does not change.
 */
const MIN_COMMIT_INTERVAL_MS = 100;

export class BatchPacing {
  /** performance.now() of the last read that returned records, and whether it filled its batch. */
  private lastBatchReadAt = 0;
  /** The last read filled its batch: compaction is working through a backlog. */
  behind = false;
  /** Moving average of entries per log record, for sizing reads. Undefined until the first read, which
   *  takes one record: after a restart the backlog may hold large batch records. */
  private entriesPerRecord: number | undefined;

  /** Under steady traffic, batches start MIN_COMMIT_INTERVAL_MS apart; a backlog is read at once. */
  async pace(): Promise<void> {
    if (this.behind) return;
    const wait = this.lastBatchReadAt + MIN_COMMIT_INTERVAL_MS - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }

  recordsPerBatch(): number {
    if (this.entriesPerRecord === undefined) return 1;
    return Math.max(1, Math.min(MAX_RECORDS_PER_BATCH, Math.round(TARGET_EVENTS_PER_BATCH / this.entriesPerRecord)));
  }

  /** A read of at most `max` records returned `records`. */
  read(records: number, max: number): void {
    this.behind = records >= max;
    if (records > 0) this.lastBatchReadAt = performance.now();
  }

  /** `records` log records held `entries` entries of owned orgs. */
  observe(entries: number, records: number): void {
    const observed = entries / records;
    this.entriesPerRecord = this.entriesPerRecord === undefined ? observed : 0.7 * this.entriesPerRecord + 0.3 * observed;
  }
}
