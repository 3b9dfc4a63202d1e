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
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalDatabase } from '../db/database.js';
import { UntrustedBudget } from '../db/untrusted.js';
import { type Clock, systemClock } from '../core/context.js';
import { applyOrgSchema } from './migrate.js';
import { DamagedOrgs, isDamage } from './org-damage.js';
import { DELETED_SUFFIX, isSlug, OrgDeletedError, orgDatabaseFile, removeDatabaseFiles } from './org-files.js';



/** How long `drop` waits for the org's database to be put down by whoever holds it. */
const DROP_WAIT_MS = 30_000;
/** How long an open waits for another process's lock on the file to go (see `open`). */
const LOCK_WAIT_MS = 10_000;
const LOCK_RETRY_MS = 100;

export interface OrgDatabaseLimits {
  maxOpen: number;
  /** DuckDB memory_limit of each open org database. */
  memoryLimit: string;
  threads: number;
  idleCloseMs: number;
  /** How long an unavailable org's database is left before it is tried again (org-damage.ts); default REOPEN_DAMAGED_AFTER_SECONDS, tests shorten it. */
  reopenDamagedMs?: number;
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
  /** Orgs whose database could not be opened or was found damaged, why, and when it may be tried again. */
  private readonly damaged: DamagedOrgs;

  constructor(
    readonly dir: string,
    private readonly limits: OrgDatabaseLimits,
    /** When a damaged org may be reopened is read from it (the storage process has its own). */
    clock: Clock = systemClock,
  ) {
    mkdirSync(dir, { recursive: true });
    this.damaged = new DamagedOrgs(dir, (slug) => orgDatabaseFile(dir, slug), limits.reopenDamagedMs, clock);
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
      .filter((slug) => isSlug(slug) && !this.deleted.has(slug));
  }

  isDeleted(slug: string): boolean {
    return this.deleted.has(slug);
  }

  /**
   * Deletes the org's database for good: marks it deleted first (no new use opens it again, in this run
   * or after a restart), waits for the uses in progress to end, closes it and removes its files.
   */
  async drop(slug: string): Promise<void> {
    if (!isSlug(slug)) throw new Error(`not an org slug: ${JSON.stringify(slug)}`);
    if (!this.deleted.has(slug)) writeFileSync(join(this.dir, slug + DELETED_SUFFIX), `${new Date().toISOString()}\n`);
    this.deleted.add(slug);
    for (const deadline = Date.now() + DROP_WAIT_MS; (this.entries.get(slug)?.leases ?? 0) > 0 && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await this.closeEntry(slug);
    this.prepared.delete(slug);
    this.damaged.forget(slug);
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
    if (!isSlug(slug)) throw new Error(`not an org slug: ${JSON.stringify(slug)}`);
    if (this.deleted.has(slug)) throw new OrgDeletedError(slug);
    // Never the instance that failed (still in use, or closing), nor a damaged file unchanged since.
    const damaged = this.damaged.get(slug);
    if (damaged && !this.damaged.mayReopen(slug, this.entries.has(slug))) throw damaged;
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
      if (this.entries.size >= this.limits.maxOpen) {
        // Room made by closing the least recently used: looked at again, as another caller may have
        // taken it while this one waited for the close (two took the same room: one over the limit).
        if (await this.evictOne()) continue;
        await new Promise<void>((resolve) => this.waiting.push(resolve));
        continue;
      }
      // Synchronous from the check above to here: nobody takes the room in between. The next turn leases it.
      const opening = this.open(slug);
      const created: Entry = { slug, opening, leases: 0, lastUsed: Date.now() };
      this.entries.set(slug, created);
      this.highWater = Math.max(this.highWater, this.entries.size);
      opening.catch(() => this.entries.delete(slug));
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.idleTimer);
    await Promise.all([...this.entries.keys()].map((slug) => this.closeEntry(slug)));
  }

  /** Orgs whose database cannot be opened now, with DuckDB's reason. */
  unavailable(): Record<string, string> {
    return this.damaged.reasons();
  }

  private async open(slug: string): Promise<LocalDatabase> {
    const file = orgDatabaseFile(this.dir, slug);
    const fresh = !existsSync(file);
    let db: LocalDatabase;
    for (let waited = 0; ; waited += LOCK_RETRY_MS) {
      try {
        db = await LocalDatabase.open(file, { memoryLimit: this.limits.memoryLimit, threads: this.limits.threads, untrustedBudget: this.budget.of(slug) });
        break;
      } catch (error) {
        // The storage process before this one (killed a moment ago, or a service that was killed -9)
        // may still be on its way out with the file's lock: not damage, wait for it.
        if (/Could not set lock on file/i.test((error as Error).message) && waited < LOCK_WAIT_MS) {
          await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
          continue;
        }
        throw this.damaged.mark(slug, error as Error, 'none');
      }
    }
    try {
      // A new file (the org's first, or one moved aside) and a file put back after damage (a backup from
      // before a schema change) get the schema whether or not this process applied it to the file before.
      if (fresh || this.damaged.has(slug) || !this.prepared.has(slug)) await applyOrgSchema(db);
      this.prepared.add(slug);
    } catch (error) {
      await db.close({ checkpoint: false }).catch(() => undefined);
      throw this.damaged.mark(slug, error as Error, 'none', `cannot prepare ${fresh ? 'new' : 'existing'} org database: `);
    }
    this.damaged.forget(slug);
    return db;
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
   * damaged (DuckDB found it so only when it read that part), or that DuckDB gave up on the instance
   * (every later statement on it fails), makes the org unavailable, as a failed open does: the instance
   * is closed once nobody uses it, and later uses answer OrgUnavailable (503) at once, not DuckDB's error
   * (500) each time. Any other error comes back as it is.
   */
  damage(slug: string, error: unknown): unknown {
    if (!isDamage(error)) return error;
    const entry = this.entries.get(slug);
    // Later statements on the failed instance only repeat it: the first reason stays.
    const known = this.damaged.get(slug);
    if (known && entry) return known;
    const unavailable = this.damaged.mark(slug, error, entry ? 'open' : 'none');
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
      // A damaged file gets no more writes than DuckDB's own: it may be wanted as it is for repair.
      .then((db) => db.close({ checkpoint: !this.damaged.has(slug) }))
      .catch(() => undefined)
      .finally(() => {
        this.entries.delete(slug);
        this.damaged.closed(slug);
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
