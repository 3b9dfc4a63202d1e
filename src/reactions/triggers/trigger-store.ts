/**
 * Trigger and segment versions (SPEC 7). A version is committed when its file in QUERIES_DIR changes
 * (polled) or when PUT writes it: it is checked by the sandbox guard, recorded with its hash, and if
 * valid becomes the live version used from the next run of every live flow. An invalid version is
 * recorded with its reason and the previous live version stays live. DELETE removes the file and records
 * a version with status deleted (a tombstone: the history stays, and a later save goes on from its number).
 * Layout: QUERIES_DIR/<org>/<trigger>.sql, QUERIES_DIR/<org>/segments/<segment>.sql, QUERIES_DIR/<org>/traits/<trait>.sql.
 */
import type { ProfileColumn } from '../../events/profiles/profiles-view.js';
import type { FastifyBaseLogger } from 'fastify';
import type { Context } from '../../core/context.js';
import type { OrgStorage } from '../../db/org-storage.js';
import { sha256Hex } from '../../core/secrets.js';
import { PeriodicTask } from '../../core/periodic-task.js';
import { SandboxBusy } from '../../db/untrusted.js';
import { OrgUnavailable } from '../../core/unavailable.js';
import { QUERY_NAME, QueryFiles } from './query-files.js';
import type { SqlChecker } from './sql-checker.js';
import { checkTraitName, QUERY_KINDS, type CheckedSql, type QueryKind, SqlRefused } from './sql-guard.js';
import { allVersions, fromRow, type QueryVersion, recordVersion, type VersionRow } from './trigger-versions.js';

export { QUERY_NAME };
export type { QueryVersion };
/** A start waits this many tries (a second apart) for a free checker per live version it loads. */
const LOAD_CHECK_TRIES = 60;

export interface LiveQuery extends QueryVersion {
  checked: CheckedSql;
}

interface QueryState {
  org: string;
  kind: QueryKind;
  name: string;
  live?: LiveQuery;
  latest: QueryVersion;
  /**
   * The hash of the file as last committed from (or written to) QUERIES_DIR. A refused PUT records a
   * version but leaves the file alone, so the file is compared with this, not with the latest version.
   */
  fileHash?: string;
}

export class TriggerStore {
  private readonly states = new Map<string, QueryState>();
  private commits: Promise<unknown> = Promise.resolve();
  /** The files in QUERIES_DIR, and why any of them is refused. */
  readonly files: QueryFiles;
  private readonly watcher = new PeriodicTask(
    () => this.scan(),
    (err) => this.options.logger.error({ err }, 'scanning QUERIES_DIR failed'),
  );

  constructor(
    private readonly orgs: OrgStorage,
    private readonly ctx: Context,
    private readonly options: {
      queriesDir: string;
      logger: FastifyBaseLogger;
      orgExists: (slug: string) => boolean;
      /** TRIGGER_TIMEOUT_MS: a check prepares the query, which can take as long as a run. */
      timeoutMs: number;
      /** Where checks run (checker processes, sql-checker.ts). */
      checker: Pick<SqlChecker, 'check'>;
      /** The org's custom columns (its profiles' custom fields), columns of its `profiles` (profiles-view.ts). */
      customColumns?: (org: string) => readonly ProfileColumn[];
    },
  ) {
    this.files = new QueryFiles(options.queriesDir, options.logger);
  }

  /** Loads an org's recorded versions: the newest of each query, and its newest valid one re-checked as live. */
  async load(org: string): Promise<void> {
    const rows = await allVersions(this.orgs.org(org));
    const loaded = new Set<QueryState>();
    const lastValid = new Map<QueryState, VersionRow>();
    for (const row of rows) {
      const version = fromRow(row);
      const state = this.stateFor(row.org, row.kind, row.name, version);
      state.latest = version;
      loaded.add(state);
      if (row.status === 'valid') lastValid.set(state, row);
      if (row.status === 'deleted') lastValid.delete(state);
    }
    // The file normally holds the live version (PUT writes only valid ones); if it holds a refused one,
    // the first scan records that once more.
    for (const state of loaded) state.fileHash = lastValid.get(state)?.hash ?? state.latest.hash;
    for (const [state, row] of lastValid) {
      try {
        const checked = await this.checkWhenFree(row.sql, state.org, state.kind);
        state.live = { ...fromRow(row), checked };
      } catch (error) {
        if (error instanceof SqlRefused) this.options.logger.warn({ org: state.org, name: state.name, reason: error.reason }, 'recorded version no longer passes the checks');
        else if (error instanceof SandboxBusy) this.options.logger.warn({ org: state.org, name: state.name }, 'recorded version could not be checked (the checkers stayed busy); it is checked again at its next change or start');
        else throw error;
      }
    }
  }

  live(org: string, kind: QueryKind, name: string): LiveQuery | undefined {
    return this.states.get(key(org, kind, name))?.live;
  }

  list(org: string, kind: QueryKind): QueryState[] {
    return [...this.states.values()].filter((s) => s.org === org && s.kind === kind && !deleted(s)).sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The query, or undefined when it has no version or was deleted since its last. */
  get(org: string, kind: QueryKind, name: string): QueryState | undefined {
    const state = this.states.get(key(org, kind, name));
    return state && !deleted(state) ? state : undefined;
  }

  /**
   * Polls QUERIES_DIR: a changed file is a commit. Polling (not fs.watch) because editors save by
   * rename, network and container mounts drop inotify events, and a second of delay is fine here.
   */
  watch(intervalMs: number): void {
    this.watcher.start(intervalMs);
  }

  stopWatching(): Promise<void> {
    return this.watcher.stop();
  }

  /** The org was deleted: its triggers and segments are forgotten (its files in QUERIES_DIR are left alone). */
  forget(org: string): void {
    for (const [id, state] of this.states) if (state.org === org) this.states.delete(id);
  }

  /** Reads every org's query files and commits those whose content changed. */
  async scan(): Promise<void> {
    for (const org of this.files.orgs()) {
      // An org whose database is unavailable (storage.ts says so) is scanned again once it opens; it
      // never stops the scan of the orgs after it.
      if (!this.options.orgExists(org)) continue;
      await this.scanOrg(org).catch((error: unknown) => {
        if (!(error instanceof OrgUnavailable)) throw error;
      });
    }
  }

  /** One org's files now: what the admin list shows includes a file saved a moment ago. */
  async scanOrg(org: string): Promise<void> {
    for (const kind of QUERY_KINDS) {
      for (const name of this.files.names(org, kind)) {
        try {
          await this.refresh(org, kind, name);
        } catch (error) {
          // No capacity to check it now: nothing was recorded, and the next scan tries again.
          if (!(error instanceof SandboxBusy)) throw error;
        }
      }
    }
  }

  /**
   * Commits the query's file now if it changed since the last scan, so a file saved a moment ago is what
   * a flow created or previewed right after it uses (the poll would pick it up within a second).
   */
  async refresh(org: string, kind: QueryKind, name: string): Promise<void> {
    if (!QUERY_NAME.test(name) || !this.changedFile(org, kind, name)) return;
    // Read again in its turn: a file read before a DELETE's turn must not be committed after it.
    await this.inTurn(async () => {
      const file = this.changedFile(org, kind, name);
      if (!file) return;
      await this.commitNow(org, kind, name, file.sql);
      this.states.get(key(org, kind, name))!.fileHash = file.hash;
    });
  }

  /** The query's file, when it holds SQL other than what was last committed from (or written to) it. */
  private changedFile(org: string, kind: QueryKind, name: string): { sql: string; hash: string } | undefined {
    const file = this.files.read(org, kind, name);
    if (file.kind !== 'sql') return undefined;
    const hash = sha256Hex(file.sql);
    return this.states.get(key(org, kind, name))?.fileHash === hash ? undefined : { sql: file.sql, hash };
  }

  /**
   * PUT: checks the SQL and, when valid, writes the file (atomically) and makes it live. An invalid
   * version is recorded and reported but the file is left as it was, so file and live version agree.
   */
  put(org: string, kind: QueryKind, name: string, sql: string): Promise<QueryVersion> {
    this.files.assertWritable(org, kind, name);
    return this.inTurn(async () => {
      const version = await this.commitNow(org, kind, name, sql);
      if (version.status === 'valid') {
        this.files.write(org, kind, name, sql);
        this.states.get(key(org, kind, name))!.fileHash = version.hash;
      }
      return version;
    });
  }

  /**
   * DELETE: removes the file (a link in its place too, never what it points to), then records the
   * tombstone version; from then the query has no live version. The file goes first: a crash between the
   * two leaves the query as it was in the database, and DELETE can be repeated. The caller has checked
   * that no flow names it. Answers the tombstone (none when only a refused file had the name), or undefined
   * when there was nothing to delete. Throws FileRefused (a folder on the way is a link; a folder has the file's name).
   */
  delete(org: string, kind: QueryKind, name: string): Promise<{ tombstone: QueryVersion | null } | undefined> {
    return this.inTurn(async () => {
      const state = this.get(org, kind, name);
      const removed = this.files.remove(org, kind, name);
      if (!state) return removed ? { tombstone: null } : undefined;
      const version: QueryVersion = { version: state.latest.version + 1, hash: '', sql: '', status: 'deleted', error: null, committedAt: this.ctx.clock.now() };
      await recordVersion(this.orgs.org(org), org, kind, name, version);
      state.latest = version;
      delete state.live;
      state.fileHash = version.hash;
      this.options.logger.info({ org, kind, name, version: version.version, fileRemoved: removed }, `${kind} deleted`);
      return { tombstone: version };
    });
  }

  /**
   * Commits, deletes and file reads run one at a time (the poll, PUT, DELETE and a refresh may race), so
   * version numbers never collide and a file read is never committed after a later DELETE.
   */
  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    const result = this.commits.then(work);
    this.commits = result.catch(() => undefined);
    return result;
  }

  /**
   * Checks, records and (when valid) makes live one version; an unchanged hash is not a new version.
   * When that version was refused, the same SQL is checked again, as what it reads may have changed
   * since (a custom column an import brought): a new version only if it passes now. Runs in its turn.
   */
  private async commitNow(org: string, kind: QueryKind, name: string, sql: string): Promise<QueryVersion> {
    const hash = sha256Hex(sql);
    const existing = this.states.get(key(org, kind, name));
    const unchanged = existing?.latest.hash === hash;
    if (unchanged && existing.latest.status !== 'invalid') return existing.latest;
    let checked: CheckedSql | undefined;
    let error: string | null = null;
    try {
      if (kind === 'trait') checkTraitName(name);
      checked = await this.check(sql, org, kind);
    } catch (e) {
      if (!(e instanceof SqlRefused)) throw e;
      error = e.reason;
    }
    if (unchanged && !checked) return existing.latest;
    const version: QueryVersion = {
      version: (existing?.latest.version ?? 0) + 1,
      hash,
      sql,
      status: checked ? 'valid' : 'invalid',
      error,
      committedAt: this.ctx.clock.now(),
    };
    await recordVersion(this.orgs.org(org), org, kind, name, version);
    const state = this.stateFor(org, kind, name, version);
    state.latest = version;
    if (checked) state.live = { ...version, checked };
    const log = { org, kind, name, version: version.version, hash };
    if (checked) this.options.logger.info(log, `${kind} version committed and live`);
    else this.options.logger.warn({ ...log, reason: error }, `${kind} version refused; the previous version stays live`);
    return version;
  }

  /**
   * The guard, in a checker process, within TRIGGER_TIMEOUT_MS. Throws SqlRefused (a verdict) or
   * SandboxBusy (no capacity now: not a verdict, nothing may be recorded).
   */
  check(sql: string, org: string, kind: QueryKind): Promise<CheckedSql> {
    // The org's custom columns are columns of its `profiles` (profiles-view.ts): the check knows them too.
    return this.options.checker.check(sql, org, kind, this.options.timeoutMs, this.options.customColumns?.(org) ?? []);
  }

  /** A check that waits out busy checkers (loading at start, when every live version must be had). */
  private async checkWhenFree(sql: string, org: string, kind: QueryKind): Promise<CheckedSql> {
    for (let tries = 1; ; tries++) {
      try {
        return await this.check(sql, org, kind);
      } catch (error) {
        if (!(error instanceof SandboxBusy) || tries >= LOAD_CHECK_TRIES) throw error;
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  }

  private stateFor(org: string, kind: QueryKind, name: string, initial: QueryVersion): QueryState {
    const k = key(org, kind, name);
    let state = this.states.get(k);
    if (!state) this.states.set(k, (state = { org, kind, name, latest: initial }));
    return state;
  }
}

const deleted = (state: QueryState): boolean => state.latest.status === 'deleted';

function key(org: string, kind: QueryKind, name: string): string {
  return `${org}/${kind}/${name}`;
}
