/**
 * The event log: an ordered, durable, append-only sequence of records.
 * Two backends implement `LogBackend` (embedded file, JetStream); both pass test/events/log/contract.ts.
 * Records carry Avro-encoded batches of `LogEntry` (see record-codec.ts); backends only see bytes.
 */
import type { Environment } from '../../core/domain.js';
import type { EventFacts } from './event-facts.js';

/** One event (or one rejected event bound for quarantine) as carried by the log. */
export interface LogEntry {
  kind: 'event' | 'rejected';
  org: string;
  environment: Environment;
  /** The event's messageId; for a rejected event, the quarantine row id. */
  messageId: string;
  /** Server clock at receipt, epoch milliseconds. */
  receivedAt: number;
  /** The event as received, without partnerSecret, with messageId filled in, as JSON text. */
  body: string;
  /** Rejected entries only: stable reason code and JSON array of `{ path, message }`. */
  code: string | null;
  errors: string | null;
  /**
   * Accepted entries: the columns compaction stores, derived by the collector from the parsed event, so
   * the body is not parsed again. Null for rejected entries and for entries logged before entries carried them.
   */
  facts: EventFacts | null;
  /**
   * A member of an accepted batch stored as it arrived (events/collect/batch-text.ts): `body` is empty
   * until the record is read, when it is made from the batch's text exactly as the collector would have
   * made it (record-codec.ts). Absent on entries as read back.
   */
  batchPart?: BatchPart;
}

/** The text of one accepted batch as it arrived, its credentials cut out; its members' entries share it. */
export interface StoredBatch {
  /** UTF-8. */
  readonly text: Buffer;
}

export interface BatchPart {
  batch: StoredBatch;
  /** The member's place in the batch's `batch` array. */
  member: number;
}

/**
 * A record as read back: its position (1-based, increasing; never reused, so positions may be skipped:
 * see `LogBehind`) and payload.
 */
export interface StoredRecord {
  seq: number;
  payload: Uint8Array;
  /** The one org of every entry in the record, where the backend keeps records per org (JetStream subjects). */
  org?: string;
}

export interface WriteResult {
  seq: number;
  /** True when a record with the same id was already stored (within the dedupe window). */
  duplicate: boolean;
}

export interface LogBackend {
  readonly kind: 'embedded' | 'jetstream';
  /** Records are written per org (`write`'s `org`), so a reader can skip other orgs' records unread. */
  readonly perOrg: boolean;
  /**
   * Stores one record. Resolves only once the record is durable (fsync / JetStream ack).
   * A record whose id was written within the dedupe window is not stored again.
   * Rejects with `LogUnavailableError` when the record was certainly not stored (the store cannot be
   * reached, or it refused the write), and with `LogOutcomeUnknownError` when it was sent but not
   * confirmed (it may be stored).
   */
  write(recordId: string, payload: Uint8Array, org?: string): Promise<WriteResult>;
  /** Replays records with seq > afterSeq, in order. */
  openReader(afterSeq: number): Promise<LogReader>;
  /** Highest stored seq (0 when empty). */
  headSeq(): Promise<number>;
  /** False while the store is known to be unreachable (fast 503s); cheap, no I/O. */
  isAvailable(): boolean;
  /**
   * Whether the log can take a write now, asking the store itself (readiness): may do I/O, so callers
   * bound its time. `fatal` when only a restart helps (the log was closed).
   */
  health(): Promise<LogHealth>;
  close(): Promise<void>;
}

export type LogHealth = { ok: true } | { ok: false; reason: string; fatal: boolean };

/**
 * Positions a reader passed that hold no record, and why. `gap`: none was ever readable there — numbering
 * resumed above a lost tail (reported when the log opened: `LogBehind`), or a deleted org's records were
 * purged from between others (JetStream). `released`: removed from the front of the log — compacted
 * segments deleted (embedded), or the stream's age or size limit (JetStream). Released positions the
 * reader had not read are lost records unless every org held them already (compactor.ts decides).
 */
export interface EmptyRange {
  from: number;
  to: number;
  kind: 'gap' | 'released';
}

export interface LogReader {
  /**
   * Up to `max` next records; waits up to `waitMs` when none is available yet (may return []). Every
   * record of the positions it passes, or a rejection: a read never steps over a record it does not return.
   */
  read(max: number, waitMs: number): Promise<StoredRecord[]>;
  /** Every position up to here is read: the records handed out, and positions that hold none. */
  readonly position: number;
  /** The positions the last read passed that hold no record, and why (the rest of its range it returned). */
  readonly skipped: readonly EmptyRange[];
  close(): Promise<void>;
}

/**
 * At open, the log ended below the high-water mark (storage/checkpoint.ts): it lost records that org
 * databases had already compacted (a cut tail, a removed directory, an older copy, a recreated stream).
 * It numbers new records from `highWater + 1`, so no org skips them as already applied.
 */
export interface LogBehind {
  /** The last position the log held at open (0: none). */
  headSeq: number;
  highWater: number;
  /** The checkpoint: every org's database held every record up to here. */
  compactedSeq: number;
}

/** The one line an operator reads about a `LogBehind` (docs/operators.md, "A lost event log"). */
export function describeLogBehind(log: string, { headSeq, highWater, compactedSeq }: LogBehind): string {
  return (
    `${log} was behind the org databases: it ends at position ${headSeq} but they may hold up to ${highWater} ` +
    `(records were lost: a cut tail, a removed log, an older copy or a recreated stream); new records are numbered ` +
    `from ${highWater + 1}, skipping ${highWater - headSeq} positions. Acknowledged events after position ` +
    `${Math.max(headSeq, compactedSeq)} that were in the lost records may be missing from their org: see docs/operators.md "A lost event log"`
  );
}

/** The log cannot start without skipping or losing records; the message is the one line to print. */
export class LogBehindError extends Error {
  override name = 'LogBehindError';
}

export class LogUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LogUnavailableError';
  }
}

/**
 * The record was handed to the store but its acknowledgement never came (timeout, connection lost
 * while waiting): it may or may not be stored. Callers must not report it as "nothing stored".
 */
export class LogOutcomeUnknownError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LogOutcomeUnknownError';
  }
}
