/**
 * One DuckDB database per org, DATA_DIR/orgs/<slug>.duckdb, opened on demand and closed when idle, in
 * the thread that holds DuckDB. Each is its own DuckDB instance: nothing of another org (nor the control
 * plane) is attached or reachable from it, so an org's untrusted SQL runs where only its data exists.
 *
 * Bounds, so that many orgs do not take the machine: at most `maxOpen` instances at once (past that, the
 * least recently used idle one is closed first, or the caller waits for one to become idle), each with a
 * memory limit of its share of DUCKDB_MEMORY_LIMIT and `threads` DuckDB threads, and an instance idle for
 * `idleCloseMs` is closed. An org's heavy query therefore has its own memory ceiling and thread, and the
 * abandoned-connection budget (db/untrusted.ts) is shared by all of them.
 */
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { LocalDatabase } from '../db/database.js';
import { UntrustedBudget } from '../db/untrusted.js';
import { applyOrgSchema } from './migrate.js';

/** Slugs become file names: schemas/org.schema.json's pattern, checked again here. */
const SLUG = /^[a-z][a-z0-9_]{1,39}$/;
export const ORGS_DIR = 'orgs';

export interface OrgDatabaseLimits {
  maxOpen: number;
  /** DuckDB memory_limit of each open org database. */
  memoryLimit: string;
  threads: number;
  idleCloseMs: number;
}

export interface OrgLease {
  db: LocalDatabase;
  release(): void;
}

interface Entry {
  opening: Promise<LocalDatabase>;
  leases: number;
  lastUsed: number;
  closing?: Promise<void>;
}

export class OrgDatabases {
  private readonly entries = new Map<string, Entry>();
  private readonly waiting: Array<() => void> = [];
  private readonly budget = new UntrustedBudget();
  /** Orgs whose schema this process applied already (it is idempotent, but not free: ~20 statements). */
  private readonly prepared = new Set<string>();
  private readonly idleTimer: NodeJS.Timeout;
  private closed = false;
  /** The most org databases open at once since start (metrics, tests). */
  highWater = 0;

  constructor(
    readonly dir: string,
    private readonly limits: OrgDatabaseLimits,
  ) {
    mkdirSync(dir, { recursive: true });
    this.idleTimer = setInterval(() => void this.closeIdle(), Math.max(1000, limits.idleCloseMs / 2)).unref();
  }

  /** Slugs with a database file. */
  slugs(): string[] {
    return readdirSync(this.dir)
      .filter((file) => file.endsWith('.duckdb'))
      .map((file) => file.slice(0, -'.duckdb'.length))
      .filter((slug) => SLUG.test(slug));
  }

  get openCount(): number {
    return this.entries.size;
  }

  async use<T>(slug: string, work: (db: LocalDatabase) => Promise<T>): Promise<T> {
    const lease = await this.lease(slug);
    try {
      return await work(lease.db);
    } finally {
      lease.release();
    }
  }

  /** The org's database, opened (and its schema applied) if need be; held until released. */
  async lease(slug: string): Promise<OrgLease> {
    if (!SLUG.test(slug)) throw new Error(`not an org slug: ${JSON.stringify(slug)}`);
    for (;;) {
      if (this.closed) throw new Error('org databases are closed');
      const entry = this.entries.get(slug);
      if (entry && !entry.closing) {
        entry.leases++;
        entry.lastUsed = Date.now();
        try {
          const db = await entry.opening;
          return { db, release: once(() => this.release(entry)) };
        } catch (error) {
          entry.leases--;
          throw error;
        }
      }
      if (entry?.closing) {
        await entry.closing;
        continue;
      }
      if (this.entries.size < this.limits.maxOpen || (await this.evictOne())) {
        if (this.entries.has(slug)) continue; // opened by another caller meanwhile
        const opening = this.open(slug);
        const created: Entry = { opening, leases: 0, lastUsed: Date.now() };
        this.entries.set(slug, created);
        this.highWater = Math.max(this.highWater, this.entries.size);
        opening.catch(() => this.entries.delete(slug));
        continue;
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.idleTimer);
    await Promise.all([...this.entries.keys()].map((slug) => this.closeEntry(slug)));
  }

  private async open(slug: string): Promise<LocalDatabase> {
    const file = join(this.dir, `${slug}.duckdb`);
    const fresh = !existsSync(file);
    const db = await LocalDatabase.open(file, {
      memoryLimit: this.limits.memoryLimit,
      threads: this.limits.threads,
      untrustedBudget: this.budget,
    });
    try {
      if (!this.prepared.has(slug)) await applyOrgSchema(db);
      this.prepared.add(slug);
    } catch (error) {
      await db.close();
      throw new Error(`cannot prepare ${fresh ? 'new' : 'existing'} org database ${file}: ${(error as Error).message}`, { cause: error });
    }
    return db;
  }

  private release(entry: Entry): void {
    entry.leases--;
    entry.lastUsed = Date.now();
    if (entry.leases === 0) this.waiting.shift()?.();
  }

  /** Closes the least recently used idle database; false when every open one is in use. */
  private async evictOne(): Promise<boolean> {
    let oldest: [string, Entry] | undefined;
    for (const item of this.entries) {
      const [, entry] = item;
      if (entry.leases === 0 && !entry.closing && (!oldest || entry.lastUsed < oldest[1].lastUsed)) oldest = item;
    }
    if (!oldest) return false;
    await this.closeEntry(oldest[0]);
    return true;
  }

  private async closeIdle(): Promise<void> {
    const now = Date.now();
    for (const [slug, entry] of this.entries) {
      if (entry.leases === 0 && !entry.closing && now - entry.lastUsed >= this.limits.idleCloseMs) await this.closeEntry(slug);
    }
  }

  private async closeEntry(slug: string): Promise<void> {
    const entry = this.entries.get(slug);
    if (!entry) return;
    entry.closing ??= entry.opening
      .then((db) => db.close())
      .catch(() => undefined)
      .finally(() => {
        this.entries.delete(slug);
        this.waiting.shift()?.();
      });
    await entry.closing;
  }
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (!done) {
      done = true;
      fn();
    }
  };
}
