/** The errors an org's data answers with while its database or the storage process is not there. */
import { AppError } from './errors.js';

/**
 * A database that could not be opened is tried again after this long, not on every use: each try reads
 * the damaged file, and a restored file is picked up this soon without a restart.
 */
export const REOPEN_DAMAGED_AFTER_SECONDS = 10;

/**
 * The org's database cannot be opened (a damaged or unreadable file). Only this org is unavailable:
 * every other org's database is its own file. Its events stay in the event log (compaction holds the
 * log's checkpoint below them) until the file is restored or moved aside.
 */
export class OrgUnavailable extends AppError {
  constructor(
    readonly slug: string,
    /** What DuckDB said, without the directory (for logs and /readyz, not for API answers). */
    readonly reason: string,
  ) {
    super(
      'org_unavailable',
      `The database of org "${slug}" cannot be opened (damaged or unreadable); other orgs are not affected and its events are kept in the ` +
        'event log. An operator restores it from a backup or moves it aside: see "A damaged org database" in docs/operators.md.',
      { headers: { 'Retry-After': String(REOPEN_DAMAGED_AFTER_SECONDS) } },
    );
    this.name = 'OrgUnavailable';
  }
}

/** The storage process is not there right now (restarting): nothing was done, or its outcome is unknown. */
export class StorageUnavailable extends AppError {
  constructor(reason: string) {
    super(
      'storage_unavailable',
      `The storage process is restarting (${reason}); try again in a second. A change sent just before may or may not have been made: read it back first.`,
      { headers: { 'Retry-After': '1' } },
    );
    this.name = 'StorageUnavailable';
  }
}
