/**
 * Traits written in SQL (issue 41): each live trait of an org runs over the org's tables, sandboxed as a
 * segment is, after the org's compaction commits and when its live version changes, at most every
 * 250 ms per org, or three times as long as its traits took. The values that changed are written to
 * contact_traits (this class is that table's and trait_types' one owner) and those contacts' profiles
 * refreshed: the value is a field of the served profile and a column of `profiles` within seconds of the
 * events that change it. A trait that fails (a runtime error, its deadline, a duplicate e-mail) keeps its
 * last values and says why in its status; a trait deleted, or without a valid version, has no values.
 */
import { listValue } from '@duckdb/node-api';
import { normalizeEmail } from '../../core/domain.js';
import type { Context } from '../../core/context.js';
import { OrgUnavailable, StorageUnavailable } from '../../core/unavailable.js';
import type { OrgStorage } from '../../db/org-storage.js';
import type { Sql } from '../../db/sql.js';
import { YIELD_EVERY, yieldNow } from '../../db/yield-now.js';
import { SandboxBusy, SandboxPaused } from '../../db/untrusted.js';
import type { ProfileRefresher } from '../../events/profiles/profile-refresher.js';
import { type ColumnType, makeProfilesView } from '../../events/profiles/profiles-view.js';
import { jsonRow } from './json-row.js';
import { QueryFailed, runSandboxed, withSandbox } from './sandbox.js';
import type { TriggerStore } from './trigger-store.js';

/**
 * The shortest pause between two computations of one org's traits; three times their run time when that is
 * longer (they hold DuckDB at most a quarter of the time). Measured (`npm run bench -- --only freshness`,
 * collect at 4,059 req/s in the background, a trait over every stored event): event → value served p50
 * 899 ms, p99 2,367 ms; with a 1 s pause p50 1,769, p99 5,186 ms (the run itself: 12 ms).
 */
const MIN_INTERVAL_MS = 250;
const PAUSE_PER_RUN = 3;

export interface TraitStatus {
  /** The version whose values are stored (null: none computed yet). */
  version: number | null;
  computedAt: string | null;
  /** Contacts with a value. */
  contacts: number;
  /** How long its last run took (ms): its org's traits run again after 3 × their run time, at least 250 ms later. */
  tookMs: number | null;
  /** Why the last computation failed (its last values are kept), else null. */
  error: string | null;
}

interface Trait {
  hash: string;
  version: number | null;
  /** email → value as JSON text. */
  values: Map<string, string>;
  status: TraitStatus;
}

interface OrgTraits {
  /** Loaded from contact_traits once (load), then kept in step with it. */
  traits: Map<string, Trait>;
  /** A commit came since the last computation. */
  dirty: boolean;
  /** The computation under way. */
  running?: Promise<void>;
  dueAt: number;
}

export class TraitValues {
  private readonly orgs = new Map<string, OrgTraits>();

  constructor(
    private readonly deps: {
      orgs: OrgStorage;
      triggers: Pick<TriggerStore, 'list'>;
      refresher: Pick<ProfileRefresher, 'enqueue'>;
      /** Told of the org's trait names as they become live: profile fields an org may serve from then. */
      fields: (org: string, names: string[]) => void;
      ctx: Context;
      timeoutMs: number;
      /** Rows a trait may return (TRIGGER_MAX_ROWS × 10, as a segment). */
      maxRows: number;
      /** A computation failed otherwise than by its query (that is the trait's `values.error`). */
      onError: (error: unknown, org: string) => void;
    },
  ) {}

  /**
   * The org's database is open (the role loads each org in turn): what contact_traits holds is read once,
   * so a computation never opens the database of an org without traits.
   */
  async load(org: string): Promise<void> {
    const known: OrgTraits = { traits: new Map(), dirty: true, dueAt: 0 };
    const rows = await this.deps.orgs.org(org).all<{ name: string; email: string; value: string }>('SELECT name, email, value::VARCHAR AS value FROM contact_traits WHERE org = $1', [org]);
    for (const row of rows) {
      let trait = known.traits.get(row.name);
      if (!trait) known.traits.set(row.name, (trait = blankTrait()));
      trait.values.set(row.email, row.value);
    }
    this.orgs.set(org, known);
  }

  /** The org's events changed (a commit) or its traits did (a PUT, a DELETE): compute when due. An org created since start has no values yet. */
  changed(org: string): void {
    const known = this.orgs.get(org);
    if (known) known.dirty = true;
    else this.orgs.set(org, { traits: new Map(), dirty: true, dueAt: 0 });
  }

  /** The org was deleted: resolves once a computation under way has ended (its database goes next). */
  async forget(org: string): Promise<void> {
    const known = this.orgs.get(org);
    this.orgs.delete(org);
    await known?.running;
  }

  status(org: string, name: string): TraitStatus | undefined {
    return this.orgs.get(org)?.traits.get(name)?.status;
  }

  /** The type of each live trait's value (a column of `profiles` of that type), known from the moment it is checked. */
  types(org: string): Map<string, ColumnType> {
    return new Map(this.deps.triggers.list(org, 'trait').flatMap((s) => (s.live ? [[s.name, s.live.checked.valueType ?? 'VARCHAR'] as const] : [])));
  }

  /**
   * One pass: each org whose traits are due (a commit since, or a live version changed) and not being
   * computed is started, and not waited for: one org's slow traits (up to TRIGGER_TIMEOUT_MS each) never
   * hold up another's. The sandbox bounds how many run at once (SandboxBusy: that org tries again later).
   */
  computeDue(): Promise<void> {
    for (const [org, known] of this.orgs) {
      if (known.running || known.dueAt > performance.now()) continue;
      // An org without traits costs a look at the trigger store per commit, no query.
      const none = known.traits.size === 0 && this.deps.triggers.list(org, 'trait').every((s) => !s.live);
      if (none || (!known.dirty && !this.versionsChanged(org, known))) continue;
      known.dirty = false;
      known.running = this.computeOrg(org, known).finally(() => (known.running = undefined));
    }
    return Promise.resolve();
  }

  /** Resolves once no computation runs (the role's close, tests). */
  async settled(): Promise<void> {
    await Promise.all([...this.orgs.values()].map((known) => known.running));
  }

  private async computeOrg(org: string, known: OrgTraits): Promise<void> {
    const started = performance.now();
    try {
      await this.compute(org, known);
    } catch (error) {
      known.dirty = true;
      // Nothing could run now (no sandbox capacity, the storage process restarting, the org unavailable): later.
      if (!(error instanceof SandboxBusy || error instanceof SandboxPaused || error instanceof StorageUnavailable || error instanceof OrgUnavailable)) this.deps.onError(error, org);
    } finally {
      known.dueAt = performance.now() + Math.max(MIN_INTERVAL_MS, PAUSE_PER_RUN * (performance.now() - started));
    }
  }

  private versionsChanged(org: string, known: OrgTraits): boolean {
    const live = this.deps.triggers.list(org, 'trait').filter((s) => s.live);
    return live.length !== known.traits.size || live.some((s) => known.traits.get(s.name)?.hash !== s.live!.hash);
  }

  private async compute(org: string, known: OrgTraits): Promise<void> {
    const live = new Map(this.deps.triggers.list(org, 'trait').flatMap((s) => (s.live ? [[s.name, s.live] as const] : [])));
    this.deps.fields(org, [...live.keys()]);
    const changes: Array<{ name: string; emails: string[]; values: Map<string, string> }> = [];
    for (const [name, trait] of known.traits) {
      if (live.has(name)) continue;
      changes.push({ name, emails: [...trait.values.keys()], values: new Map() });
      known.traits.delete(name);
    }
    for (const [name, version] of live) {
      const trait = known.traits.get(name) ?? blankTrait();
      known.traits.set(name, trait);
      let values: Map<string, string>;
      const started = performance.now();
      try {
        values = await this.run(org, version.checked);
      } catch (error) {
        if (!(error instanceof QueryFailed)) throw error;
        // Tried again after the next commit, not at every pass: the values kept are the last version's.
        trait.hash = version.hash;
        trait.status = { ...trait.status, error: error.reason };
        continue;
      }
      const emails = [...new Set([...trait.values.keys(), ...values.keys()])].filter((e) => trait.values.get(e) !== values.get(e));
      if (emails.length > 0) changes.push({ name, emails, values });
      Object.assign(trait, { hash: version.hash, version: version.version, values });
      const tookMs = Math.round(performance.now() - started);
      trait.status = { version: version.version, computedAt: new Date(this.deps.ctx.clock.now()).toISOString(), contacts: values.size, tookMs, error: null };
    }
    await this.write(org, changes, this.types(org));
    const touched = new Set(changes.flatMap((c) => c.emails));
    this.deps.refresher.enqueue([...touched].map((email) => ({ org, email })));
  }

  /** The trait's value per contact; an e-mail twice is the trait's error (which value would it be?). */
  private async run(org: string, checked: Parameters<typeof runSandboxed>[1]): Promise<Map<string, string>> {
    const page = await withSandbox(this.deps.orgs.org(org), this.deps.timeoutMs, (c) => runSandboxed(c, checked, { cursor_start_time: null, cursor_end_time: null }, this.deps.maxRows));
    if (page.truncated) throw new QueryFailed(`the trait returns more than ${this.deps.maxRows} rows (10 × TRIGGER_MAX_ROWS)`);
    const values = new Map<string, string>();
    // Yielding now and then: an org of 50,000 contacts brings 50,000 rows, and collect and lookups share this thread.
    for (const [i, row] of page.rows.entries()) {
      if (i % YIELD_EVERY === YIELD_EVERY - 1) await yieldNow();
      const { email, value } = jsonRow(row);
      if (typeof email !== 'string' || value === null || value === undefined) continue;
      const key = normalizeEmail(email);
      if (values.has(key)) throw new QueryFailed(`the trait returns ${key} more than once; return one row per contact (GROUP BY email)`);
      values.set(key, JSON.stringify(value));
    }
    return values;
  }

  /** The changed rows in one transaction; `profiles` made again when a trait's column came, went or changed type. */
  private async write(org: string, changes: ReadonlyArray<{ name: string; emails: string[]; values: Map<string, string> }>, types: Map<string, ColumnType>): Promise<void> {
    await this.deps.orgs.org(org).transaction(async (c) => {
      // (An empty list cannot be a parameter: its item type would be unknown.)
      for (const { name, emails, values } of changes) {
        if (emails.length === 0) continue;
        await c.run('DELETE FROM contact_traits WHERE org = $1 AND name = $2 AND email IN (SELECT unnest($3::VARCHAR[]))', [org, name, listValue(emails)]);
        const kept = emails.filter((e) => values.has(e));
        if (kept.length === 0) continue;
        await c.run('INSERT INTO contact_traits SELECT $1, unnest($2::VARCHAR[]), $3, unnest($4::VARCHAR[])::JSON', [org, listValue(kept), name, listValue(kept.map((e) => values.get(e)!))]);
      }
      if (await this.writeTypes(c, types)) await makeProfilesView(c);
    });
  }

  private async writeTypes(c: Sql, types: Map<string, ColumnType>): Promise<boolean> {
    const stored = new Map((await c.all<{ name: string; type: ColumnType }>('SELECT name, type FROM trait_types')).map((r) => [r.name, r.type]));
    const same = stored.size === types.size && [...types].every(([name, type]) => stored.get(name) === type);
    if (same) return false;
    await c.run('DELETE FROM trait_types');
    if (types.size > 0) await c.run('INSERT INTO trait_types SELECT unnest($1::VARCHAR[]), unnest($2::VARCHAR[])', [listValue([...types.keys()]), listValue([...types.values()])]);
    return true;
  }
}

/** A trait with no values yet (or values read back from contact_traits), computed at the next pass. */
function blankTrait(): Trait {
  return { hash: '', version: null, values: new Map(), status: { version: null, computedAt: null, contacts: 0, tookMs: null, error: null } };
}
