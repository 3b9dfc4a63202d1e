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
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { LocalDatabase } from '../db/database.js';
import { OrgUnavailable, REOPEN_DAMAGED_AFTER_SECONDS } from '../core/unavailable.js';
import { UntrustedBudget } from '../db/untrusted.js';
import { applyOrgSchema } from './migrate.js';

/** Slugs become file names: schemas/org.schema.json's pattern, checked again here. */
const SLUG = /^[a-z][a-z0-9_]{1,39}$/;
export const ORGS_DIR = 'orgs';
/** `<slug>.deleted` next to the databases: the org was deleted (kept for good: slugs are never reused). */
const DELETED_SUFFIX = '.deleted';
/** How long `drop` waits for the org's database to be put down by whoever holds it. */
const DROP_WAIT_MS = 30_000;
/** DuckDB's words for a file it cannot read as a database (a cut, overwritten or foreign file). */
const DAMAGE = /IO Error: .*(Could not read enough bytes|Corrupt database file|not a valid DuckDB database|checksum)/i;
/** How long an open waits for another process's lock on the file to go (see `open`). */
const LOCK_WAIT_MS = 10_000;
const LOCK_RETRY_MS = 100;

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
  slug: string;
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
  /** Orgs deleted (their `.deleted` files): events of theirs still in the log never recreate a database. */
  private readonly deleted: Set<string>;
  /** The most org databases open at once since start (metrics, tests). */
  highWater = 0;
  /** Orgs whose database could not be opened, why, and when it may be tried again. */
  private readonly damaged = new Map<string, { error: OrgUnavailable; retryAt: number }>();

  constructor(
    readonly dir: string,
    private readonly limits: OrgDatabaseLimits,
  ) {
    mkdirSync(dir, { recursive: true });
    this.deleted = new Set(
      readdirSync(dir)
        .filter((file) => file.endsWith(DELETED_SUFFIX))
        .map((file) => file.slice(0, -DELETED_SUFFIX.length)),
    );
    // A crash between marking an org deleted and removing its files leaves them: they go now.
    for (const slug of this.deleted) removeDatabaseFiles(dir, slug);
    this.idleTimer = setInterval(() => void this.closeIdle(), Math.max(1000, limits.idleCloseMs / 2)).unref();
  }

  /** Slugs with a database file. */
  slugs(): string[] {
    return readdirSync(this.dir)
      .filter((file) => file.endsWith('.duckdb'))
      .map((file) => file.slice(0, -'.duckdb'.length))
      .filter((slug) => SLUG.test(slug) && !this.deleted.has(slug));
  }

  isDeleted(slug: string): boolean {
    return this.deleted.has(slug);
  }

  /**
   * Deletes the org's database for good: marks it deleted first (no new use opens it again, in this run
   * or after a restart), waits for the uses in progress to end, closes it and removes its files.
   */
  async drop(slug: string): Promise<void> {
    if (!SLUG.test(slug)) throw new Error(`not an org slug: ${JSON.stringify(slug)}`);
    if (!this.deleted.has(slug)) writeFileSync(join(this.dir, slug + DELETED_SUFFIX), `${new Date().toISOString()}\n`);
    this.deleted.add(slug);
    for (const deadline = Date.now() + DROP_WAIT_MS; (this.entries.get(slug)?.leases ?? 0) > 0 && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await this.closeEntry(slug);
    this.prepared.delete(slug);
    removeDatabaseFiles(this.dir, slug);
  }

  get openCount(): number {
    return this.entries.size;
  }

  async use<T>(slug: string, work: (db: LocalDatabase) => Promise<T>): Promise<T> {
    const lease = await this.lease(slug);
    try {
      return await work(lease.db);
    } catch (error) {
      throw this.damage(slug, error);
    } finally {
      lease.release();
    }
  }

  /** The org's database, opened (and its schema applied) if need be; held until released. */
  async lease(slug: string): Promise<OrgLease> {
    if (!SLUG.test(slug)) throw new Error(`not an org slug: ${JSON.stringify(slug)}`);
    if (this.deleted.has(slug)) throw new OrgDeletedError(slug);
    const damaged = this.damaged.get(slug);
    if (damaged && Date.now() < damaged.retryAt) throw damaged.error;
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
        const created: Entry = { slug, opening, leases: 0, lastUsed: Date.now() };
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

  /** Orgs whose database cannot be opened now, with DuckDB's reason. */
  unavailable(): Record<string, string> {
    return Object.fromEntries([...this.damaged].map(([slug, { error }]) => [slug, error.reason]));
  }

  private async open(slug: string): Promise<LocalDatabase> {
    const file = orgDatabaseFile(this.dir, slug);
    const fresh = !existsSync(file);
    let db: LocalDatabase;
    for (let waited = 0; ; waited += LOCK_RETRY_MS) {
      try {
        db = await LocalDatabase.open(file, { memoryLimit: this.limits.memoryLimit, threads: this.limits.threads, untrustedBudget: this.budget });
        break;
      } catch (error) {
        // The storage process before this one (killed a moment ago, or a service that was killed -9)
        // may still be on its way out with the file's lock: not damage, wait for it.
        if (/Could not set lock on file/i.test((error as Error).message) && waited < LOCK_WAIT_MS) {
          await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
          continue;
        }
        throw this.markDamaged(slug, file, error as Error);
      }
    }
    try {
      if (!this.prepared.has(slug)) await applyOrgSchema(db);
      this.prepared.add(slug);
    } catch (error) {
      await db.close().catch(() => undefined);
      throw this.markDamaged(slug, file, new Error(`cannot prepare ${fresh ? 'new' : 'existing'} org database: ${(error as Error).message}`));
    }
    this.damaged.delete(slug);
    return db;
  }

  private markDamaged(slug: string, file: string, error: Error): OrgUnavailable {
    // DuckDB's message names the file; the reason keeps its name, not DATA_DIR's path.
    const reason = error.message.split('\n')[0]!.replaceAll(file, basename(file)).replaceAll(this.dir, ORGS_DIR);
    const unavailable = new OrgUnavailable(slug, reason);
    this.damaged.set(slug, { error: unavailable, retryAt: Date.now() + REOPEN_DAMAGED_AFTER_SECONDS * 1000 });
    return unavailable;
  }

  private release(entry: Entry): void {
    entry.leases--;
    entry.lastUsed = Date.now();
    if (entry.leases > 0) return;
    // A database found damaged while open is closed as soon as nobody uses it.
    if (this.damaged.has(entry.slug)) void this.closeEntry(entry.slug);
    else this.waiting.shift()?.();
  }

  /**
   * What to throw for `error`, raised by a statement on `slug`'s database: an error that says the file is
   * damaged (DuckDB found it so only when it read that part) makes the org unavailable, as a failed open
   * does; any other error comes back as it is.
   */
  damage(slug: string, error: unknown): unknown {
    if (!(error instanceof Error) || !DAMAGE.test(error.message) || error instanceof OrgUnavailable) return error;
    const unavailable = this.markDamaged(slug, orgDatabaseFile(this.dir, slug), error);
    const entry = this.entries.get(slug);
    if (entry && entry.leases === 0) void this.closeEntry(slug);
    return unavailable;
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

function removeDatabaseFiles(dir: string, slug: string): void {
  if (!SLUG.test(slug)) return;
  const file = orgDatabaseFile(dir, slug);
  for (const path of [file, `${file}.wal`]) rmSync(path, { force: true });
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
