/**
 * What the service holds of compaction and what one commit tells it, whether compaction runs in this
 * thread (compactor.ts) or in the storage process (storage/storage-client.ts), and what the compactor
 * is given.
 */
import type { Context } from '../../core/context.js';
import type { Shard } from '../../core/shard.js';
import type { Database } from '../../db/sql.js';
import type { Observations } from '../../ops/metrics.js';
import type { LogBackend } from '../log/types.js';
import type { KeptOut } from './tombstones.js';

/**
 * A contact whose profile needs a refresh: a production event of it was written, or a send to it recorded.
 * When the touch changes no more of the profile than the fields below, the profile can be moved on without
 * being computed again: `seenAt`, the event's receipt (epoch ms), when the event changes no more than its
 * first and last seen (write-batch.ts); `sent`, a send of a flow recorded as delivered or as held out of
 * an experiment, which changes no more than campaigns_received and flow_variant_membership.
 */
export interface ContactTouch {
  org: string;
  email: string;
  seenAt?: number | undefined;
  sent?: SentTouch | undefined;
}

/** A send recorded for the contact: delivered (a campaign received) or held out (a membership only). */
export interface SentTouch {
  flowId: string;
  variant: string | null;
  delivered: boolean;
}

/** What one commit tells the service, e.g. to refresh profiles (its own thread or the storage worker's). */
export interface CommitReport {
  touched: ContactTouch[];
  /** Orgs that stored new events in this batch: their real-time flows run now (reactions/flows/run/trigger-runs.ts). */
  orgs: string[];
  /** More records were waiting when this batch was read: compaction is working through a backlog. */
  backlog: boolean;
  /** When its events were received (profile-delays.ts): their delay is observed once their profiles are refreshed. */
  received: Observations;
  /** Per org of the batch, the receipt time of its newest event: profiles hold it once refreshed (freshness.ts). */
  newest: Array<[org: string, receivedAt: number]>;
  /** When the org's commit was made (its events' visible_at, epoch µs): the report at or after which a new compactor tells again. */
  committedAt: number;
}

/** The metrics the compactor moves; in the storage worker they are forwarded to the main thread's registry. */
export interface CompactorMetrics {
  compactionBatchSeconds: { observe(seconds: number): void };
  eventsQuarantined: { inc(labels: { code: string }): void };
  duplicatesDropped: { inc(count: number): void };
  eventsKeptOut: { inc(labels: { reason: KeptOut }, count: number): void };
  logRecordsLost: { inc(count: number): void };
}

/** What the service holds of compaction, in this thread (Compactor) or in the storage process (storage-client.ts). */
export interface Compaction {
  /** Highest log seq whose records are committed to DuckDB (by every org but those whose database is damaged). */
  readonly compactedSeq: number;
  /** Every org holds its records up to here, held orgs included: the log may drop records up to it. */
  readonly retainFromSeq: number;
  /** Resolves once every record up to `seq` is in DuckDB and its touched profiles were queued for refresh. */
  whenCompacted(seq: number): Promise<void>;
  /**
   * Whether the org stored an event with this messageId (in either environment) within the dedupe
   * window: answered once the batch being committed is, and its touched profiles were queued for
   * refresh (so a refresh waited for after a true answer holds the event).
   */
  holds(org: string, messageId: string): Promise<boolean>;
  /**
   * `reportedSince`: the commit time (µs) of the last report this compactor's predecessor is known to have
   * delivered (CommitReport.committedAt). Commits from then on are reported again before `holds` answers:
   * a storage process that ends between a commit and its report leaves that commit's contacts unrefreshed.
   */
  start(options?: { reportedSince?: number }): Promise<void>;
  /** Finishes the batch in progress, then stops (graceful shutdown). */
  stop(): Promise<void>;
  /**
   * The org's state (its tombstones among it) is read again from its database before its next batch is
   * planned: an erasure changed it. A batch planned before may still commit; whenCompacted tells when.
   */
  reload(org: string): Promise<void>;
}

/** What the compactor (compactor.ts) is given. */
export interface CompactorDeps {
  /** Each org's database. */
  orgs: { org(slug: string): Database; slugs(): Promise<string[]>; isDropped(slug: string): boolean };
  /** The position every org has reached, and the highest any org may hold (storage/checkpoint.ts). */
  checkpoint: { read(): number; write(seq: number): void; highWater(): number; raiseHighWater(seq: number): Promise<void> };
  log: Pick<LogBackend, 'openReader'>;
  /** The orgs this process compacts; other orgs' records are skipped (unread where the log keeps records per org). */
  shard: Shard;
  ctx: Context;
  metrics: CompactorMetrics;
  logger: { error(details: object, message: string): void };
  /** Runs after each batch, before waiters are told (e.g. queues the touched profiles for refresh). */
  afterCommit?: (report: CommitReport) => Promise<void>;
  /** Told the committed position (and retainFromSeq) whenever they may have moved (the storage process reports them). */
  onProgress?: (seq: number, retainFromSeq: number) => void;
}
