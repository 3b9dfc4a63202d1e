/** The org databases of this process's pool (org-databases.ts) as OrgStorage: the storage process's side, or STORAGE_PROCESS=inline. */
import type { OrgStorage } from '../db/org-storage.js';
import type { Database, Params, Row, Sql } from '../db/sql.js';
import type { OrgDatabases } from './org-databases.js';

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
