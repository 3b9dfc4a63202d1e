/** The errors an org's data answers with while its database or the storage process is not there. */
import { AppError } from './errors.js';

/**
 * An unavailable org's database is tried again at most this often, not on every use (a damaged file only
 * once its files changed: storage/org-damage.ts); the storage role looks this often, so a repaired file
 * is picked up within twice this, without a restart.
 */
export const REOPEN_DAMAGED_AFTER_SECONDS = 10;

/**
 * The org's database cannot be opened or read (a damaged or unreadable file, an instance DuckDB gave up
 * on). Only this org is unavailable: every other org's database is its own file. Its events stay in the
 * event log (compaction holds the log's checkpoint below them) until the file is restored or moved aside.
 */
export class OrgUnavailable extends AppError {
  constructor(
    readonly slug: string,
    /** What DuckDB said, without the directory (for logs and /readyz, not for API answers). */
    readonly reason: string,
  ) {
    super(
      'org_unavailable',
      `The database of org "${slug}" cannot be opened or read (damaged or unreadable); other orgs are not affected and its events are kept in the ` +
        'event log. An operator restores it from a backup or moves it aside: see "A damaged org database" in docs/operators.md.',
      { headers: { 'Retry-After': String(REOPEN_DAMAGED_AFTER_SECONDS) } },
    );
    this.name = 'OrgUnavailable';
  }
}

/**
 * The storage process is not there right now (restarting): nothing was done, or its outcome is unknown.
 * `killedFor`: the process was killed to stop that org's query (see readAgainAfterKills).
 */
export class StorageUnavailable extends AppError {
  constructor(
    reason: string,
    readonly killedFor?: string,
  ) {
    super(
      'storage_unavailable',
      `The storage process is restarting (${reason}); try again in a second. A change sent just before may or may not have been made: read it back first.`,
      { headers: { 'Retry-After': '1' } },
    );
    this.name = 'StorageUnavailable';
  }
}

/** Tries of readAgainAfterKills: a kill pauses the org that caused it, so a third in a row is two other orgs' doing. */
const READ_TRIES = 3;
/** A read is tried again only within this many query deadlines of being asked: one try's wait for a slot and its query. */
const READ_AGAIN_DEADLINES = 2;

/**
 * Runs `org`'s read-only `work` (a preview, a simulation: nothing it does changes data) again when it
 * failed only because the storage process ended under it: killed to stop another org's query (that org's
 * doing, and it is paused), or ended by a crash or an operator. Reading again is safe and this org gets
 * its answer, later. It is read again only while less than READ_AGAIN_DEADLINES times `queryTimeoutMs`
 * (TRIGGER_TIMEOUT_MS) has passed since it was asked: restarts that come one after another (a crash loop,
 * a slow disk) answer 503 storage_unavailable, with Retry-After, instead of holding the client past its
 * patience. Its own query's kill, and any other failure, is thrown as it is.
 */
export async function readAgainAfterKills<T>(org: string, queryTimeoutMs: number, work: () => Promise<T>): Promise<T> {
  const asked = performance.now();
  const withinMs = READ_AGAIN_DEADLINES * queryTimeoutMs;
  for (let tries = 1; ; tries++) {
    try {
      return await work();
    } catch (error) {
      const notItsOwn = error instanceof StorageUnavailable && error.killedFor !== org;
      if (!notItsOwn || tries >= READ_TRIES || performance.now() - asked >= withinMs) throw error;
    }
  }
}
