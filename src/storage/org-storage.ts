/**
 * What the service sees of the orgs' data: one Database per org, whichever thread holds DuckDB. Every use
 * leases the org's database from the pool (org-databases.ts) for its duration, so the pool may close it
 * in between; a held connection (exclusive, transaction, untrusted) keeps it open until it is released.
 */
import type { Database, Params, Row, Sql } from '../db/sql.js';
import type { OrgDatabases } from './org-databases.js';


export interface OrgStorage {
  /** The org's database (opened on demand; its file is created with the org's first use). */
  org(slug: string): Database;
  /** Orgs with a database file. */
  slugs(): Promise<string[]>;
  /** Deletes the org's database for good (the org was deleted); its events still in the log are skipped. */
  drop(slug: string): Promise<void>;
}

/** The pool in this thread (STORAGE_THREAD=main, and the storage worker's own side). */
export class LocalOrgStorage implements OrgStorage {
  private readonly handles = new Map<string, Database>();

  constructor(readonly pool: OrgDatabases) {}

  org(slug: string): Database {
    let handle = this.handles.get(slug);
    if (!handle) this.handles.set(slug, (handle = new PooledDatabase(this.pool, slug)));
    return handle;
  }

  async slugs(): Promise<string[]> {
    return this.pool.slugs();
  }

  drop(slug: string): Promise<void> {
    return this.pool.drop(slug);
  }

  /** The compactor skips a deleted org's entries. */
  isDropped(slug: string): boolean {
    return this.pool.isDeleted(slug);
  }
}

class PooledDatabase implements Database {
  constructor(
    private readonly pool: OrgDatabases,
    private readonly slug: string,
  ) {}

  exclusive<T>(work: (connection: Sql) => Promise<T>): Promise<T> {
    return this.pool.use(this.slug, (db) => db.exclusive(work));
  }

  transaction<T>(work: (connection: Sql) => Promise<T>): Promise<T> {
    return this.pool.use(this.slug, (db) => db.transaction(work));
  }

  all<T = Row>(sql: string, params?: Params): Promise<T[]> {
    return this.pool.use(this.slug, (db) => db.all<T>(sql, params));
  }

  run(sql: string, params?: Params): Promise<void> {
    return this.pool.use(this.slug, (db) => db.run(sql, params));
  }

  untrusted<T>(timeoutMs: number, work: (connection: Sql) => Promise<T>): Promise<T> {
    return this.pool.use(this.slug, (db) => db.untrusted(timeoutMs, work));
  }

  /** The pool closes org databases; one org's handle does not. */
  async close(): Promise<void> {}
}
