/**
 * The control plane: orgs, partner credentials and Audience API tokens in DATA_DIR/control.duckdb
 * (pipelines/control.sql), a DuckDB instance of its own on this thread. Each org's data lives in its own
 * database (org-databases.ts), where its untrusted trigger and segment SQL runs; nothing of this file is
 * attached or reachable there, so even SQL that got past the guard finds no secret hash (tenant
 * isolation by construction, not only by a check). The stores (OrgStore, TokenStore) keep everything in memory and
 * write through, so this file is read at start and written on admin changes only.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalDatabase } from '../db/database.js';
import type { Database } from '../db/sql.js';
import { pipelinesDir } from '../paths.js';

export const CONTROL_FILE = 'control.duckdb';
/** Orgs, credentials and tokens are a few MB even for thousands of orgs. */
const CONTROL_MEMORY_LIMIT = '256MB';

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
