/**
 * What the service sees of the orgs' data: one Database per org, wherever DuckDB runs (the storage
 * process, or this one: src/storage/). Every use leases the org's database from the pool for its
 * duration, so the pool may close it in between; a held connection (exclusive, transaction, untrusted)
 * keeps it open until it is released.
 */
import type { Database } from './sql.js';

export interface OrgStorage {
  /** The org's database (opened on demand; its file is created with the org's first use). */
  org(slug: string): Database;
  /** Orgs with a database file. */
  slugs(): Promise<string[]>;
  /** Deletes the org's database for good (the org was deleted); its events still in the log are skipped. */
  drop(slug: string): Promise<void>;
}
