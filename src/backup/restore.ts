/**
 * `npx audiencectl restore <dir>`: a backup (backup.ts) into a fresh DATA_DIR, with the service stopped
 * (the DATA_DIR lock is taken). Org databases first, then their query files and the webhook key, then
 * the control documents, so an org is never named by the control plane before its database is in place.
 *
 * Log positions: each org database records how far into the log it has compacted (log_cursor). A fresh
 * embedded log starts again at 1, so positions are reset to 0 and every event of the new log is taken;
 * the backup holds every event acknowledged before it. Restored against the same JetStream stream they
 * are kept, so the events after the backup that are still in the stream are compacted again; the
 * highest becomes the high-water mark (storage/checkpoint.ts), so a stream recreated since is purged to
 * start above it and no new event is skipped as already applied.
 *
 * A backup may have been handed over or unpacked by anyone: before anything is read, every entry of it
 * must be a folder or a regular file with one link (a link would copy what it points to into DATA_DIR,
 * or write through into wherever it points), else nothing is restored. Files are copied into new names
 * only (COPYFILE_EXCL), query files are read and written as the service does (query-files.ts).
 */
import { createReadStream, existsSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, readdir, readFile, realpath, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { Config } from '../core/config.js';
import { openControl } from '../control/open-control.js';
import { ControlConflictError } from '../control/types.js';
import { lockDataDir } from '../core/data-dir-lock.js';
import { LocalDatabase } from '../db/database.js';
import { copyRegularFile, FileRefused, lstatOrUndefined, notRegular } from '../core/regular-file.js';
import { CHECKPOINT_FILE, LogCheckpoint } from '../storage/checkpoint.js';
import { isSlug, orgDatabaseFile, ORGS_DIR } from '../storage/org-files.js';
import { listQueryFiles, type QueryRoot, readQueryFile, unwritable, writeQueryFile } from '../reactions/triggers/query-files.js';
import { QUERY_KINDS, type QueryKind } from '../reactions/triggers/sql-guard.js';
import { BACKUP_FORMAT, type BackupManifest, CONTROL_FILE, copyDatabaseFile, MANIFEST_FILE, QUERIES_DIR, WEBHOOK_KEY_FILE } from './backup.js';
import { ArchiveRefused, unpackBackup } from './unpack.js';

/** What a restore cannot do, said so an operator can act on it. */
export class RestoreError extends Error {
  override name = 'RestoreError';
}

export interface RestoreReport {
  dataDir: string;
  orgs: string[];
  documents: { created: number; unchanged: number };
  queryFiles: number;
  webhookKey: boolean;
  logPositions: 'kept' | 'reset';
  /** Query files of the backup the service would not read (too large), left out. */
  warnings: string[];
}

interface BackupQuery {
  org: string;
  kind: QueryKind;
  name: string;
  sql: string;
}

/** `from`: a backup folder, or the archive GET /admin/v1/backup answers (unpacked into DATA_DIR first). */
export async function restoreBackup(from: string, config: Config, options: { resetLogPositions?: boolean } = {}): Promise<RestoreReport> {
  if ((await stat(from).catch(() => undefined))?.isFile()) return restoreArchive(from, config, options);
  await checkEntries(from);
  const manifest = await readManifest(from);
  await checkFreshDataDir(config);
  const reset = options.resetLogPositions === true || manifest.log.kind === 'embedded' || config.natsUrl === undefined;
  const within = await realpath(from);
  const { queries, warnings } = readBackupQueries(from, manifest.orgs);
  // Refused before anything is written: a restore stops whole or not at all.
  const unsaveable = queries.map((q) => unwritable({ dir: config.queriesDir, shown: config.queriesDir }, q.org, q.kind, q.name)).find((reason) => reason !== undefined);
  if (unsaveable) throw new RestoreError(`${unsaveable}; nothing was restored`);

  const lock = lockDataDir(config.dataDir);
  try {
    const orgsDir = join(config.dataDir, ORGS_DIR);
    await mkdir(orgsDir, { recursive: true });
    let highWater = 0;
    for (const slug of manifest.orgs) {
      const target = orgDatabaseFile(orgsDir, slug);
      const source = orgDatabaseFile(join(from, ORGS_DIR), slug);
      await refusedAsRestoreError(() => copyDatabaseFile(source, target, source, within));
      highWater = Math.max(highWater, await logPosition(target, reset));
    }
    if (highWater > 0) await new LogCheckpoint(join(orgsDir, CHECKPOINT_FILE)).raiseHighWater(highWater);
    // Files already in QUERIES_DIR (a checkout of the team's repository) win over the backup's.
    for (const q of queries) await refusedAsRestoreError(() => writeQueryFile({ dir: config.queriesDir, shown: config.queriesDir }, q.org, q.kind, q.name, q.sql, { keep: true }));
    const webhookKey = manifest.webhookKey && config.webhookSigningKey === undefined && !lstatOrUndefined(join(config.dataDir, WEBHOOK_KEY_FILE), WEBHOOK_KEY_FILE);
    if (webhookKey) await refusedAsRestoreError(() => copyRegularFile(join(from, WEBHOOK_KEY_FILE), join(config.dataDir, WEBHOOK_KEY_FILE), join(from, WEBHOOK_KEY_FILE), within));
    const documents = await restoreDocuments(from, config);
    return { dataDir: config.dataDir, orgs: manifest.orgs, documents, queryFiles: queries.length, webhookKey, logPositions: reset ? 'reset' : 'kept', warnings };
  } finally {
    lock.release();
  }
}

/** The archive unpacked (unpack.ts) into a new folder in DATA_DIR, restored from there, then removed. */
async function restoreArchive(file: string, config: Config, options: { resetLogPositions?: boolean }): Promise<RestoreReport> {
  await checkFreshDataDir(config);
  await mkdir(config.dataDir, { recursive: true });
  const staging = await mkdtemp(join(config.dataDir, 'restore-'));
  try {
    await unpackBackup(createReadStream(file), staging).catch((error: Error) => {
      throw new RestoreError(`${file}: ${error instanceof ArchiveRefused ? error.message : `cannot be unpacked (${(error as NodeJS.ErrnoException).code ?? error.message})`}; nothing was restored`);
    });
    const report = await restoreBackup(staging, config, options);
    return { ...report, warnings: report.warnings.map((warning) => warning.replaceAll(staging, file)) };
  } catch (error) {
    // Said of the archive the operator named, not of the folder it was unpacked into.
    if (error instanceof RestoreError) throw new RestoreError(error.message.replaceAll(staging, file));
    throw error;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/**
 * Every entry of the backup is a folder or a regular file with one link, else nothing is restored: the
 * service writes nothing else, so anything else was put there by someone (a link to /etc/shadow as
 * `webhook.key`, a FIFO that would hang the restore). Checked before any file is read.
 */
async function checkEntries(from: string): Promise<void> {
  const entries = await readdir(from, { recursive: true, withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
    // A missing folder is said by the manifest's read, next.
    if (error.code === 'ENOENT') return [];
    throw new RestoreError(`${from} cannot be read (${error.code ?? error.message})`);
  });
  for (const entry of entries) {
    if (entry.isDirectory()) continue;
    const path = join(entry.parentPath, entry.name);
    const reason = notRegular(await lstat(path), path, 'copied');
    if (reason) throw new RestoreError(`${reason}; a backup holds only folders and regular files with one link, so nothing was restored`);
  }
}

/** Before the lock: a DATA_DIR that holds org databases or logged events is not restored into. */
async function checkFreshDataDir(config: Config): Promise<void> {
  const orgsDir = join(config.dataDir, ORGS_DIR);
  const present = (await readdir(orgsDir).catch(() => [] as string[])).filter((name) => name.endsWith('.duckdb'));
  if (present.length > 0) throw new RestoreError(`${orgsDir} already holds org databases (${present.slice(0, 3).join(', ')}): restore into a fresh DATA_DIR`);
  if (config.natsUrl === undefined) {
    const logDir = join(config.dataDir, 'log');
    const sizes = await Promise.all((await readdir(logDir).catch(() => [] as string[])).map(async (name) => (await stat(join(logDir, name))).size));
    if (sizes.some((size) => size > 0)) throw new RestoreError(`${logDir} already holds events: restore into a fresh DATA_DIR`);
  }
}

/** The backup's query files of its orgs, read as the service reads QUERIES_DIR; one it would refuse is left out with a warning. */
function readBackupQueries(from: string, orgs: string[]): { queries: BackupQuery[]; warnings: string[] } {
  const root: QueryRoot = { dir: join(from, QUERIES_DIR), shown: join(from, QUERIES_DIR) };
  const queries: BackupQuery[] = [];
  const warnings: string[] = [];
  if (!existsSync(root.dir)) return { queries, warnings };
  for (const org of orgs) {
    for (const kind of QUERY_KINDS) {
      const listing = listQueryFiles(root, org, kind);
      if (listing.kind === 'refused') warnings.push(listing.reason);
      if (listing.kind !== 'listed') continue;
      for (const name of listing.names) {
        const file = readQueryFile(root, org, kind, name);
        if (file.kind === 'sql') queries.push({ org, kind, name, sql: file.sql });
        else if (file.kind === 'refused') warnings.push(`${file.reason}; not restored`);
      }
    }
  }
  return { queries, warnings };
}

async function refusedAsRestoreError<T>(act: () => T | Promise<T>): Promise<T> {
  try {
    return await act();
  } catch (error) {
    if (error instanceof FileRefused) throw new RestoreError(error.message);
    throw error;
  }
}

async function readManifest(from: string): Promise<BackupManifest> {
  let manifest: BackupManifest;
  try {
    manifest = JSON.parse(await readFile(join(from, MANIFEST_FILE), 'utf8')) as BackupManifest;
  } catch (error) {
    throw new RestoreError(`${join(from, MANIFEST_FILE)} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}): a backup is complete only once its manifest is written`);
  }
  if (manifest.format !== BACKUP_FORMAT || manifest.version !== 1) throw new RestoreError(`${from} is not an Audience backup of a version this service reads (format ${BACKUP_FORMAT}, version 1)`);
  if (!Array.isArray(manifest.orgs) || !manifest.orgs.every((slug) => typeof slug === 'string' && isSlug(slug))) throw new RestoreError(`${join(from, MANIFEST_FILE)} lists an org that is not a slug`);
  return manifest;
}

/** The org's log position as restored: 0 when reset (the new log starts at 1: the org takes every record of it). */
async function logPosition(file: string, reset: boolean): Promise<number> {
  const db = await LocalDatabase.open(file, { memoryLimit: '256MB' });
  try {
    if (reset) await db.run('UPDATE log_cursor SET seq = 0');
    const [row] = await db.all<{ seq: bigint | null }>('SELECT max(seq) AS seq FROM log_cursor');
    return Number(row?.seq ?? 0n);
  } finally {
    await db.close();
  }
}

/** Creates each document; one already there with the same content (another shard's restore) is left alone. */
async function restoreDocuments(from: string, config: Config): Promise<RestoreReport['documents']> {
  const entries = JSON.parse(await readFile(join(from, CONTROL_FILE), 'utf8')) as Array<{ key: string; value: unknown }>;
  const control = await openControl(config, true);
  const counts = { created: 0, unchanged: 0 };
  try {
    for (const { key, value } of entries) {
      try {
        await control.create(key, value);
        counts.created++;
      } catch (error) {
        if (!(error instanceof ControlConflictError)) throw error;
        if (!isDeepStrictEqual((await control.get(key))?.value, value)) {
          throw new RestoreError(`the control plane already holds ${key} with other content: restore into a fresh deployment`);
        }
        counts.unchanged++;
      }
    }
  } finally {
    await control.close();
  }
  return counts;
}
