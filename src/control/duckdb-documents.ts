/**
 * The embedded control plane: documents in DATA_DIR/control.duckdb (pipelines/control.sql), a DuckDB
 * instance of its own on this thread. Nothing of this file is attached where untrusted SQL runs, so even
 * SQL that got past the guard finds no secret hash (isolation by construction). One process owns the
 * file (data-dir-lock.ts), so its own writes are the only changes a watcher is told of. Every statement
 * goes through one serialized connection, which makes the compare-and-set of `update` atomic.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalDatabase } from '../db/database.js';
import type { Database } from '../db/sql.js';
import { pipelinesDir } from '../core/paths.js';
import { migrateControlTables } from './migrate-control-tables.js';
import { type ControlDocuments, type ControlEntry, ControlConflictError } from './types.js';

export const CONTROL_FILE = 'control.duckdb';
/** Orgs, credentials and tokens are a few MB even for thousands of orgs. */
const CONTROL_MEMORY_LIMIT = '256MB';

interface DocumentRow {
  key: string;
  value: string;
  revision: bigint;
}

export class DuckDbDocuments implements ControlDocuments {
  readonly kind = 'duckdb';
  private readonly watchers: Array<(entry: ControlEntry) => void> = [];

  private constructor(
    private readonly db: Database,
    private revision: number,
  ) {}

  static async open(dataDir: string): Promise<DuckDbDocuments> {
    const db = await LocalDatabase.open(join(dataDir, CONTROL_FILE), { memoryLimit: CONTROL_MEMORY_LIMIT });
    try {
      await db.run(readFileSync(join(pipelinesDir, 'control.sql'), 'utf8'));
      await migrateControlTables(db);
      const [head] = await db.all<{ revision: bigint | null }>('SELECT max(revision) AS revision FROM control_documents');
      return new DuckDbDocuments(db, Number(head?.revision ?? 0n));
    } catch (error) {
      await db.close();
      throw error;
    }
  }

  async watch(onEntry: (entry: ControlEntry) => void): Promise<void> {
    const rows = await this.db.all<DocumentRow>('SELECT key, value, revision FROM control_documents ORDER BY revision');
    for (const row of rows) onEntry(toEntry(row));
    this.watchers.push(onEntry);
  }

  async get(key: string): Promise<ControlEntry | undefined> {
    const [row] = await this.db.all<DocumentRow>('SELECT key, value, revision FROM control_documents WHERE key = $1', [key]);
    return row ? toEntry(row) : undefined;
  }

  async list(): Promise<ControlEntry[]> {
    return (await this.db.all<DocumentRow>('SELECT key, value, revision FROM control_documents ORDER BY key')).map(toEntry);
  }

  create(key: string, value: unknown): Promise<ControlEntry> {
    return this.write(key, value, 0);
  }

  update(key: string, value: unknown, revision: number): Promise<ControlEntry> {
    return this.write(key, value, revision);
  }

  /** One connection serves every statement, so a long one makes this wait: busy, not broken. */
  async health(): Promise<{ ok: true }> {
    await this.db.all('SELECT 1');
    return { ok: true };
  }

  async close(): Promise<void> {
    this.watchers.length = 0;
    await this.db.close();
  }

  /** Writes when the document's revision is `expected` (0: absent), then tells the watchers. */
  private async write(key: string, value: unknown, expected: number): Promise<ControlEntry> {
    const entry = await this.db.transaction(async (c) => {
      const [row] = await c.all<{ revision: bigint }>('SELECT revision FROM control_documents WHERE key = $1', [key]);
      if (Number(row?.revision ?? 0n) !== expected) throw new ControlConflictError(key);
      const next: ControlEntry = { key, value, revision: this.revision + 1 };
      await c.run('INSERT OR REPLACE INTO control_documents VALUES ($1, $2, $3)', [key, JSON.stringify(value), BigInt(next.revision)]);
      return next;
    });
    this.revision = entry.revision;
    // The write is committed: a watcher that cannot take it in must not make the writer think it failed.
    for (const watcher of this.watchers) {
      try {
        watcher(entry);
      } catch {
        // A receiver that cannot take in a document (a malformed one) keeps what it had; the commit stands.
      }
    }
    return entry;
  }
}

function toEntry(row: DocumentRow): ControlEntry {
  return { key: row.key, value: JSON.parse(row.value) as unknown, revision: Number(row.revision) };
}
