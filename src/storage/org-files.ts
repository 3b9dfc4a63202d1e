/** Where an org's database files live under DATA_DIR/orgs, the names they may take, and a deleted org's mark. */
import { rmSync } from 'node:fs';
import { join } from 'node:path';

/** Slugs become file names: schemas/org.schema.json's pattern, checked again here. */
const SLUG = /^[a-z][a-z0-9_]{1,39}$/;
export const ORGS_DIR = 'orgs';
/** `<slug>.deleted` next to the databases: the org was deleted (kept for good: slugs are never reused). */
export const DELETED_SUFFIX = '.deleted';

/** The org was deleted: its database is gone and is never created again. */
export class OrgDeletedError extends Error {
  constructor(readonly slug: string) {
    super(`org "${slug}" was deleted`);
    this.name = 'OrgDeletedError';
  }
}

export function isSlug(value: string): boolean {
  return SLUG.test(value);
}

/** Where an org's database lives under DATA_DIR/orgs. */
export function orgDatabaseFile(orgsDir: string, slug: string): string {
  if (!SLUG.test(slug)) throw new Error(`not an org slug: ${JSON.stringify(slug)}`);
  return join(orgsDir, `${slug}.duckdb`);
}

/** Removes the org's database and its WAL (a deleted org's, or one a crash left after its deletion). */
export function removeDatabaseFiles(dir: string, slug: string): void {
  if (!SLUG.test(slug)) return;
  const file = orgDatabaseFile(dir, slug);
  for (const path of [file, `${file}.wal`]) rmSync(path, { force: true });
}
