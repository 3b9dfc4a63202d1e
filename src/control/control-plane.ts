/**
 * The control plane: orgs, partner credentials and Audience API tokens in DATA_DIR/control.duckdb
 * (pipelines/control.sql), a DuckDB instance of its own on this thread. The orgs' data lives in
 * audience.duckdb, where untrusted trigger and segment SQL runs; nothing of this file is attached or
 * reachable there, so even SQL that got past the guard finds no secret hash (tenant isolation by
 * construction, not only by a check). The stores (OrgStore, TokenStore) keep everything in memory and
 * write through, so this file is read at start and written on admin changes only.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalDatabase, tsParam } from '../db/database.js';
import type { Database } from '../db/sql.js';
import { pipelinesDir } from '../paths.js';

export const CONTROL_FILE = 'control.duckdb';
/** Orgs, credentials and tokens are a few MB even for thousands of orgs. */
const CONTROL_MEMORY_LIMIT = '256MB';
const CONTROL_TABLES = ['orgs', 'partner_credentials', 'audience_tokens'] as const;

export async function openControlPlane(dataDir: string): Promise<Database> {
  const db = await LocalDatabase.open(join(dataDir, CONTROL_FILE), { memoryLimit: CONTROL_MEMORY_LIMIT });
  try {
    await db.run(readFileSync(join(pipelinesDir, 'control.sql'), 'utf8'));
    return db;
  } catch (error) {
    await db.close();
    throw error;
  }
}

/**
 * A DATA_DIR written before the control plane had its own file keeps orgs, credentials and tokens in
 * audience.duckdb: copy them here, then drop them there. Both steps are idempotent (rows already here are
 * kept), so a crash between them is repaired by the next start. Returns the rows moved.
 */
export async function moveControlTables(orgData: Database, control: Database): Promise<number> {
  const present = new Set(
    (
      await orgData.all<{ name: string }>(
        `SELECT table_name AS name FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main'`,
      )
    ).map((t) => t.name),
  );
  const tables = CONTROL_TABLES.filter((table) => present.has(table));
  if (tables.length === 0) return 0;
  let moved = 0;
  await control.transaction(async (c) => {
    for (const table of tables) {
      for (const row of await orgData.all<Record<string, unknown>>(`SELECT * FROM ${table}`)) {
        const columns = Object.keys(row);
        const values = Object.values(row).map((value) => (value instanceof Date ? tsParam(value.getTime()) : (value as string | number | boolean | null)));
        await c.run(`INSERT OR IGNORE INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`, values);
        moved++;
      }
    }
  });
  await orgData.transaction(async (c) => {
    for (const table of tables) await c.run(`DROP TABLE ${table}`);
  });
  return moved;
}
