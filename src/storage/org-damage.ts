/**
 * Org databases that cannot be used (org-databases.ts): a file that does not open or that a statement
 * found damaged, or an instance DuckDB gave up on. Each is its org's problem alone: its uses answer
 * OrgUnavailable (503 org_unavailable) while every other org's database is its own file and instance.
 */
import { statSync } from 'node:fs';
import { basename } from 'node:path';
import { OrgUnavailable, REOPEN_DAMAGED_AFTER_SECONDS } from '../core/unavailable.js';
import { type Clock, systemClock } from '../core/context.js';

/**
 * DuckDB's words for a file it cannot read as a database (cut, overwritten, a foreign file, a WAL that
 * does not replay), at open or from any later statement that reads the bad block; a FATAL error may
 * carry them as its original error. Anchored at the error's type: a tenant's own SQL can raise an error
 * with any text (`error('…')`), but not an IO or FATAL one.
 */
const FILE_DAMAGE = /^(IO|FATAL) Error: .*(Could not read enough bytes|Corrupt database file|Corrupt WAL file|not a valid DuckDB database|checksum)/s;
/**
 * After a FATAL error (a checkpoint that could not write its file, say) DuckDB refuses every later
 * statement on that instance: "database has been invalidated … must be restarted".
 */
const INSTANCE_LOST = /^FATAL Error: |^\w+ Error: Database "[^"]*" has been invalidated/;

/**
 * When an unavailable org's database may be opened again. A file found damaged does not mend itself:
 * it is opened again only once its files changed (restored, moved aside; `files` is what they were once
 * no instance of ours had them open, undefined until then), at the first check after the change: a
 * restore is the operator's word that it is mended, and a check is a stat. Reopening an unchanged one
 * every few seconds would fail again or, where the bad block is past what opening reads, open and fail at
 * the next statement that reads it: the org would come and go. Anything else (an instance DuckDB
 * invalidated after a failed write, a lock never released) may pass: tried again after the pause.
 */
type Reopen = { when: 'after-pause' } | { when: 'files-changed'; files: string | undefined };

interface Damaged {
  error: OrgUnavailable;
  retryAt: number;
  reopen: Reopen;
}

/** Whether a statement's error makes its org's database unusable (rather than failing that statement only). */
export function isDamage(error: unknown): error is Error {
  return error instanceof Error && !(error instanceof OrgUnavailable) && (FILE_DAMAGE.test(error.message) || INSTANCE_LOST.test(error.message));
}

export class DamagedOrgs {
  private readonly orgs = new Map<string, Damaged>();

  constructor(
    /** DATA_DIR/orgs: kept out of the reasons, which /readyz shows. */
    private readonly dir: string,
    private readonly fileOf: (slug: string) => string,
    private readonly pauseMs = REOPEN_DAMAGED_AFTER_SECONDS * 1000,
    /** The service's clock where it runs in this process; the storage process's own otherwise. */
    private readonly clock: Clock = systemClock,
  ) {}

  get(slug: string): OrgUnavailable | undefined {
    return this.orgs.get(slug)?.error;
  }

  /**
   * The org's database failed with `error`. `instance`: 'open' while an instance of ours still has its
   * files (its state is taken once it is closed: `closed`), 'none' when none does.
   */
  mark(slug: string, error: Error, instance: 'open' | 'none', prefix = ''): OrgUnavailable {
    const file = this.fileOf(slug);
    // DuckDB's message names the file; the reason keeps its name, not DATA_DIR's path.
    const reason = prefix + error.message.split('\n')[0]!.replaceAll(file, basename(file)).replaceAll(this.dir, basename(this.dir));
    const unavailable = new OrgUnavailable(slug, reason);
    const reopen: Reopen = FILE_DAMAGE.test(error.message) ? { when: 'files-changed', files: instance === 'none' ? filesState(file) : undefined } : { when: 'after-pause' };
    this.orgs.set(slug, { error: unavailable, retryAt: this.clock.now() + this.pauseMs, reopen });
    return unavailable;
  }

  /** The org's instance is closed: a change of its files from here on is a repair. */
  closed(slug: string): void {
    const damaged = this.orgs.get(slug);
    if (damaged?.reopen.when === 'files-changed' && damaged.reopen.files === undefined) damaged.reopen.files = filesState(this.fileOf(slug));
  }

  /** Whether the org's database may be opened again now (never while `instanceOpen`: the one that failed). */
  mayReopen(slug: string, instanceOpen: boolean): boolean {
    const damaged = this.orgs.get(slug);
    if (!damaged) return true;
    if (instanceOpen) return false;
    const { reopen } = damaged;
    switch (reopen.when) {
      case 'after-pause':
        return this.clock.now() >= damaged.retryAt;
      case 'files-changed':
        return reopen.files !== undefined && reopen.files !== filesState(this.fileOf(slug));
    }
  }

  /** It opened again (or is gone for good). */
  forget(slug: string): void {
    this.orgs.delete(slug);
  }

  has(slug: string): boolean {
    return this.orgs.has(slug);
  }

  /** Each unavailable org with DuckDB's reason. */
  reasons(): Record<string, string> {
    return Object.fromEntries([...this.orgs].map(([slug, { error }]) => [slug, error.reason]));
  }
}

/** What identifies the org's files as they are: a restore or a move shows as a change (inode, size, times). */
function filesState(file: string): string {
  return [file, `${file}.wal`]
    .map((path) => {
      try {
        const { ino, size, mtimeMs, ctimeMs } = statSync(path);
        return `${ino}:${size}:${mtimeMs}:${ctimeMs}`;
      } catch {
        return '-';
      }
    })
    .join(' ');
}
