/**
 * Converts a DATA_DIR written before per-org storage, where one audience.duckdb held every org's data and
 * the control plane, into control.duckdb and orgs/<slug>.duckdb. Runs at start, before anything opens
 * those files, in a DuckDB instance of its own that attaches the files (trusted statements only; it is
 * closed before the service opens anything).
 *
 * Crash-safe by staging: everything is written under DATA_DIR/.split, moved into place when complete
 * (the orgs directory, then control.duckdb), and only then is audience.duckdb renamed to
 * audience.duckdb.pre-orgs (kept: delete it once satisfied). A crash before the moves leaves the old
 * layout, and the split starts over; a crash between them is finished by the next start.
 */
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { CHECKPOINT_FILE, LogCheckpoint } from './checkpoint.js';
import { CONTROL_FILE } from '../control/duckdb-documents.js';
import { orgSchemaSql } from './migrate.js';
import { ORGS_DIR } from './org-files.js';

export const SINGLE_FILE = 'audience.duckdb';
export const SPLIT_SUFFIX = '.pre-orgs';
const STAGING = '.split';
const CONTROL_TABLES = ['orgs', 'partner_credentials', 'audience_tokens'];
/** Tables whose rows carry their org. */
const ORG_TABLES = ['events', 'identify_mappings', 'pending_identity', 'quarantine', 'contact_activity', 'contact_orders', 'contacts', 'trigger_versions', 'flows', 'flow_sends', 'flow_decisions'];
/** Tables that were one per file: every org's file gets a copy. */
const SHARED_TABLES = ['log_cursor', 'contact_activity_folded'];

/** The orgs split out, or undefined when DATA_DIR has no single file to split. */
export async function splitSingleFile(dataDir: string): Promise<string[] | undefined> {
  const single = join(dataDir, SINGLE_FILE);
  if (!existsSync(single)) return undefined;
  const staging = join(dataDir, STAGING);
  const orgsDir = join(dataDir, ORGS_DIR);
  const control = join(dataDir, CONTROL_FILE);
  let slugs: string[] = [];
  if (!existsSync(orgsDir) && !existsSync(control)) {
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(join(staging, ORGS_DIR), { recursive: true });
    slugs = await copyInto(single, staging);
  }
  // Moved in this order, so control.duckdb in place means the orgs directory is too.
  if (!existsSync(orgsDir)) renameSync(join(staging, ORGS_DIR), orgsDir);
  if (!existsSync(control)) renameSync(join(staging, CONTROL_FILE), control);
  renameSync(single, single + SPLIT_SUFFIX);
  rmSync(staging, { recursive: true, force: true });
  return slugs;
}

async function copyInto(single: string, staging: string): Promise<string[]> {
  const instance = await DuckDBInstance.create(':memory:');
  const c = await instance.connect();
  try {
    await c.run(`ATTACH ${literal(single)} AS old (READ_ONLY)`);
    const present = new Set(
      (await rows<{ name: string }>(c, "SELECT table_name AS name FROM duckdb_tables() WHERE database_name = 'old' AND schema_name = 'main'")).map((r) => r.name),
    );
    if (!present.has('orgs')) throw new Error(`${single} has no orgs table: it is not a store this version can split`);

    await c.run(`ATTACH ${literal(join(staging, CONTROL_FILE))} AS control`);
    // Copied as tables; the control plane turns them into documents when it opens (migrate-control-tables.ts).
    for (const table of CONTROL_TABLES.filter((t) => present.has(t))) await c.run(`CREATE TABLE control.main.${table} AS SELECT * FROM old.main.${table}`);

    const orgs = await rows<{ slug: string; currency_symbol: string }>(c, 'SELECT slug, currency_symbol FROM old.main.orgs ORDER BY slug');
    for (const org of orgs) {
      // Slugs matched ^[a-z][a-z0-9_]{1,39}$ when created: safe as a catalog name and in a file name.
      await c.run(`ATTACH ${literal(join(staging, ORGS_DIR, `${org.slug}.duckdb`))} AS org_${org.slug}`);
      await c.run(`USE org_${org.slug}`);
      for (const sql of orgSchemaSql()) await c.run(sql);
      for (const table of ORG_TABLES.filter((t) => present.has(t))) {
        await c.run(`INSERT INTO org_${org.slug}.main.${table} BY NAME SELECT * FROM old.main.${table} WHERE org = $1`, [org.slug]);
      }
      for (const table of SHARED_TABLES.filter((t) => present.has(t))) {
        await c.run(`INSERT INTO org_${org.slug}.main.${table} BY NAME SELECT * FROM old.main.${table}`);
      }
      await c.run(`INSERT OR REPLACE INTO org_${org.slug}.main.org_settings VALUES ($1, $2)`, [org.slug, org.currency_symbol]);
      await c.run('USE memory');
      await c.run(`DETACH org_${org.slug}`);
    }
    // Every org's file holds the old position: compaction goes on from there.
    const [cursor] = present.has('log_cursor') ? await rows<{ seq: bigint }>(c, "SELECT seq FROM old.main.log_cursor WHERE name = 'compactor'") : [];
    new LogCheckpoint(join(staging, ORGS_DIR, CHECKPOINT_FILE)).write(Number(cursor?.seq ?? 0n));
    await c.run('USE memory');
    await c.run('DETACH control');
    await c.run('DETACH old');
    return orgs.map((o) => o.slug);
  } finally {
    c.closeSync();
    instance.closeSync();
  }
}

async function rows<T>(c: DuckDBConnection, sql: string): Promise<T[]> {
  return (await c.runAndReadAll(sql)).getRowObjectsJS() as T[];
}

/** A file path as an SQL string literal (ATTACH takes no parameters). */
function literal(path: string): string {
  return `'${path.replaceAll("'", "''")}'`;
}
