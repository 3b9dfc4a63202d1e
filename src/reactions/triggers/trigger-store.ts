/**
 * Trigger and segment versions (SPEC 7). A version is committed when its file in QUERIES_DIR changes
 * (polled) or when PUT writes it: it is checked by the sandbox guard, recorded with its hash, and if
 * valid becomes the live version used from the next run of every live flow. An invalid version is
 * recorded with its reason and the previous live version stays live.
 * Layout: QUERIES_DIR/<org>/<trigger>.sql and QUERIES_DIR/<org>/segments/<segment>.sql.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Context } from '../../core/context.js';
import { tsParam } from '../../db/database.js';
import type { OrgStorage } from '../../db/org-storage.js';
import { sha256Hex } from '../../core/secrets.js';
import { PeriodicTask } from '../../core/periodic-task.js';
import { SandboxBusy } from '../../db/untrusted.js';
import { OrgUnavailable } from '../../core/unavailable.js';
import { QUERY_NAME, QueryFiles } from './query-files.js';
import type { SqlChecker } from './sql-checker.js';
import { type CheckedSql, type QueryKind, SqlRefused } from './sql-guard.js';

export { QUERY_NAME };
/** A start waits this many tries (a second apart) for a free checker per live version it loads. */
const LOAD_CHECK_TRIES = 60;

export type VersionStatus = 'valid' | 'invalid';

export interface QueryVersion {
  version: number;
  hash: string;
  sql: string;
  status: VersionStatus;
  error: string | null;
  committedAt: number;
}

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

interface VersionRow {
  org: string;
  kind: QueryKind;
  name: string;
  version: number;
  hash: string;
  sql: string;
  status: VersionStatus;
  error: string | null;
  created_at: Date;
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
    },
  ) {
    this.files = new QueryFiles(options.queriesDir, options.logger);
  }

  /** Loads an org's recorded versions: the newest of each query, and its newest valid one re-checked as live. */
  async load(org: string): Promise<void> {
    const rows = await this.orgs.org(org).all<VersionRow>('SELECT * FROM trigger_versions ORDER BY kind, name, version');
    const loaded = new Set<QueryState>();
    const lastValid = new Map<QueryState, VersionRow>();
    for (const row of rows) {
      const version = fromRow(row);
      const state = this.stateFor(row.org, row.kind, row.name, version);
      state.latest = version;
      loaded.add(state);
      if (row.status === 'valid') lastValid.set(state, row);
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
    return [...this.states.values()].filter((s) => s.org === org && s.kind === kind).sort((a, b) => a.name.localeCompare(b.name));
  }

  get(org: string, kind: QueryKind, name: string): QueryState | undefined {
    return this.states.get(key(org, kind, name));
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
    for (const kind of ['trigger', 'segment'] as const) {
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
    if (!QUERY_NAME.test(name)) return;
    const file = this.files.read(org, kind, name);
    if (file.kind !== 'sql') return;
    const { sql } = file;
    const hash = sha256Hex(sql);
    const state = this.get(org, kind, name);
    if (state?.fileHash === hash) return;
    await this.commit(org, kind, name, sql);
    this.get(org, kind, name)!.fileHash = hash;
  }

  /**
   * PUT: checks the SQL and, when valid, writes the file (atomically) and makes it live. An invalid
   * version is recorded and reported but the file is left as it was, so file and live version agree.
   */
  async put(org: string, kind: QueryKind, name: string, sql: string): Promise<QueryVersion> {
    this.files.assertWritable(org, kind, name);
    const version = await this.commit(org, kind, name, sql);
    if (version.status === 'valid') {
      this.files.write(org, kind, name, sql);
      this.get(org, kind, name)!.fileHash = version.hash;
    }
    return version;
  }

  /**
   * Checks, records and (when valid) makes live one version; an unchanged hash is not a new version.
   * Commits run one at a time (the poll, PUT and a refresh may race), so version numbers never collide.
   */
  private commit(org: string, kind: QueryKind, name: string, sql: string): Promise<QueryVersion> {
    const result = this.commits.then(() => this.commitNow(org, kind, name, sql));
    this.commits = result.catch(() => undefined);
    return result;
  }

  private async commitNow(org: string, kind: QueryKind, name: string, sql: string): Promise<QueryVersion> {
    const hash = sha256Hex(sql);
    const existing = this.get(org, kind, name);
    if (existing?.latest.hash === hash) return existing.latest;
    let checked: CheckedSql | undefined;
    let error: string | null = null;
    try {
      checked = await this.check(sql, org, kind);
    } catch (e) {
      if (!(e instanceof SqlRefused)) throw e;
      error = e.reason;
    }
    const version: QueryVersion = {
      version: (existing?.latest.version ?? 0) + 1,
      hash,
      sql,
      status: checked ? 'valid' : 'invalid',
      error,
      committedAt: this.ctx.clock.now(),
    };
    await this.orgs.org(org).run('INSERT INTO trigger_versions VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)', [
      org,
      kind,
      name,
      version.version,
      hash,
      sql,
      version.status,
      error,
      tsParam(version.committedAt),
    ]);
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
    return this.options.checker.check(sql, org, kind, this.options.timeoutMs);
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

function key(org: string, kind: QueryKind, name: string): string {
  return `${org}/${kind}/${name}`;
}

function fromRow(row: VersionRow): QueryVersion {
  return {
    version: row.version,
    hash: row.hash,
    sql: row.sql,
    status: row.status,
    error: row.error,
    committedAt: row.created_at.getTime(),
  };
}
