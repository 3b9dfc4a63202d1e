/**
 * The trigger_versions table (pipelines/storage.sql): one row per version of a trigger or segment, written
 * only through here (trigger-store.ts commits and deletes; the versions page reads it as pages).
 */
import { tsParam } from '../../db/database.js';
import type { Database } from '../../db/sql.js';
import type { QueryKind } from './sql-guard.js';

/** deleted: the tombstone DELETE records; the query has no live version until it is saved again. */
export type VersionStatus = 'valid' | 'invalid' | 'deleted';

export interface QueryVersion {
  version: number;
  hash: string;
  sql: string;
  status: VersionStatus;
  error: string | null;
  committedAt: number;
}

export interface VersionRow {
  org: string;
  kind: QueryKind;
  name: string;
  version: number;
  hash: string;
  sql: string;
  status: VersionStatus;
  error: string | null;
  created_at: Date;
}

/** Every recorded version of the org's queries, oldest first per query. */
export function allVersions(db: Pick<Database, 'all'>): Promise<VersionRow[]> {
  return db.all<VersionRow>('SELECT * FROM trigger_versions ORDER BY kind, name, version');
}

export async function recordVersion(db: Pick<Database, 'run'>, org: string, kind: QueryKind, name: string, v: QueryVersion): Promise<void> {
  await db.run('INSERT INTO trigger_versions VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)', [org, kind, name, v.version, v.hash, v.sql, v.status, v.error, tsParam(v.committedAt)]);
}

export function fromRow(row: VersionRow): QueryVersion {
  return { version: row.version, hash: row.hash, sql: row.sql, status: row.status, error: row.error, committedAt: row.created_at.getTime() };
}
