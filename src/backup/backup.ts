/**
 * A backup of what a storage process keeps, taken while it runs: the control plane's documents, a
 * consistent copy of each org database, the orgs' query files and the generated webhook signing key.
 *
 * Consistent: before copying, compaction is waited for up to the log head seen at the start, so every
 * event acknowledged before the backup began is in the copies. Each org database is copied while this
 * process holds its one writing connection, right after a CHECKPOINT (the file then holds every commit),
 * so the copy is the database as of one commit; collection goes on (events wait in the log) and only that
 * org's compaction pauses for the length of one file copy. The manifest is written last: a directory
 * without one is not a backup.
 */
import { mkdir, realpath, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Compaction } from '../events/compaction/compaction.js';
import { isDeletedOrg } from '../control/documents.js';
import type { ControlDocuments, ControlEntry } from '../control/types.js';
import { AppError } from '../core/errors.js';
import type { LogBackend } from '../events/log/types.js';
import { serviceVersion } from '../core/paths.js';
import { copyRegularFile, FileRefused, lstatOrUndefined } from '../core/regular-file.js';
import { orgDatabaseFile, ORGS_DIR } from '../storage/org-files.js';
import type { OrgStorage } from '../db/org-storage.js';
import { listQueryFiles, type QueryRoot, readQueryFile } from '../reactions/triggers/query-files.js';
import { QUERY_KINDS } from '../reactions/triggers/sql-guard.js';

export const BACKUP_FORMAT = 'audience-backup';
export const MANIFEST_FILE = 'manifest.json';
export const CONTROL_FILE = 'control.json';
export const QUERIES_DIR = 'queries';
export const WEBHOOK_KEY_FILE = 'webhook.key';

export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  version: 1;
  createdAt: string;
  serviceVersion: string;
  /** The log the databases were compacted from, and the seq every acknowledged event before the backup is at or below. */
  log: { kind: LogBackend['kind']; compactedSeq: number };
  /** The orgs whose databases are in `orgs/` (those this process keeps). */
  orgs: string[];
  /** Control documents in control.json. */
  documents: number;
  /** Files under queries/<org>/. */
  queryFiles: number;
  /** Whether webhook.key (the generated signing master key) is included. */
  webhookKey: boolean;
}

export interface BackupSources {
  control: ControlDocuments;
  orgs: OrgStorage;
  /** The orgs this process keeps (SHARD). */
  owns(slug: string): boolean;
  log: LogBackend;
  compaction: Compaction | undefined;
  dataDir: string;
  queriesDir: string;
  /** WEBHOOK_SIGNING_KEY is set: the key is the operator's, not a file to back up. */
  webhookKeyConfigured: boolean;
  now(): number;
}

/** Writes a backup of every org this process keeps, or of one (`org`), into the new directory `dir`. */
export async function writeBackup(sources: BackupSources, dir: string, options: { org?: string; compactionWaitMs: number }): Promise<BackupManifest> {
  const compactedSeq = await waitForCompaction(sources, options.compactionWaitMs);
  const wanted = (key: string) => options.org === undefined || key === `org.${options.org}` || key === `tokens.${options.org}`;
  const documents = (await sources.control.list()).filter((entry) => wanted(entry.key));
  const orgs = documents.filter((entry) => entry.key.startsWith('org.') && !isDeletedOrg(entry.value)).map((entry) => entry.key.slice('org.'.length));
  if (options.org !== undefined && orgs.length === 0) throw new AppError('org_not_found', `No org "${options.org}".`);
  const kept = orgs.filter((slug) => sources.owns(slug));
  // Only DATA_DIR's own files: a link out of it (to /etc, to another deployment) is refused, not followed.
  const within = await realpath(sources.dataDir);

  await mkdir(join(dir, ORGS_DIR), { recursive: true });
  for (const slug of kept) await backupFile(() => copyOrgDatabase(sources, slug, join(dir, ORGS_DIR), within));
  let queryFiles = 0;
  for (const slug of kept) queryFiles += await copyQueryFiles({ dir: sources.queriesDir, shown: 'QUERIES_DIR' }, slug, join(dir, QUERIES_DIR, slug));
  await writeFile(join(dir, CONTROL_FILE), JSON.stringify(documents.map(({ key, value }: ControlEntry) => ({ key, value })), null, 1));
  const webhookKey = !sources.webhookKeyConfigured && (await backupFile(() => copyWebhookKey(sources.dataDir, dir, within)));

  const manifest: BackupManifest = {
    format: BACKUP_FORMAT,
    version: 1,
    createdAt: new Date(sources.now()).toISOString(),
    serviceVersion: serviceVersion(),
    log: { kind: sources.log.kind, compactedSeq },
    orgs: kept,
    documents: documents.length,
    queryFiles,
    webhookKey,
  };
  await writeFile(join(dir, MANIFEST_FILE), JSON.stringify(manifest, null, 2) + '\n');
  return manifest;
}

/** The log head now, once compaction has reached it (so the copies hold every event acknowledged so far). */
async function waitForCompaction(sources: BackupSources, waitMs: number): Promise<number> {
  const head = await sources.log.headSeq();
  const { compaction } = sources;
  if (!compaction) return 0;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), waitMs)));
  const outcome = await Promise.race([compaction.whenCompacted(head).then(() => 'done' as const), late]).finally(() => clearTimeout(timer));
  if (outcome === 'late') {
    throw new AppError('compaction_behind', `Compaction is ${head - compaction.compactedSeq} records behind the log and did not catch up within ${waitMs / 1000} s; a backup now would miss acknowledged events. Retry once audience_compaction_lag_seconds is low.`, {
      headers: { 'Retry-After': '30' },
    });
  }
  return head;
}

/** A file of DATA_DIR that is not a regular file inside it stops the backup, saying which (a 409, not a 500). */
async function backupFile<T>(copy: () => Promise<T>): Promise<T> {
  try {
    return await copy();
  } catch (error) {
    if (error instanceof FileRefused) throw new AppError('backup_file_refused', error.message);
    throw error;
  }
}

/** The generated webhook.key, if there is one. */
async function copyWebhookKey(dataDir: string, into: string, within: string): Promise<boolean> {
  const shown = `DATA_DIR/${WEBHOOK_KEY_FILE}`;
  if (!lstatOrUndefined(join(dataDir, WEBHOOK_KEY_FILE), shown)) return false;
  await copyRegularFile(join(dataDir, WEBHOOK_KEY_FILE), join(into, WEBHOOK_KEY_FILE), shown, within);
  return true;
}

/** CHECKPOINT, then the file (and a WAL, should one be left), while no other statement can write. */
async function copyOrgDatabase(sources: BackupSources, slug: string, into: string, within: string): Promise<void> {
  const source = orgDatabaseFile(join(sources.dataDir, ORGS_DIR), slug);
  const target = orgDatabaseFile(into, slug);
  await sources.orgs.org(slug).exclusive(async (connection) => {
    await connection.run('CHECKPOINT');
    await copyDatabaseFile(source, target, `DATA_DIR/${ORGS_DIR}/${slug}.duckdb`, within);
  });
}

/** A DuckDB file and its WAL, should one be there: regular files inside `within`, never through a link. Throws FileRefused. */
export async function copyDatabaseFile(source: string, target: string, shown: string, within: string): Promise<void> {
  await copyRegularFile(source, target, shown, within);
  if (lstatOrUndefined(`${source}.wal`, `${shown}.wal`)) await copyRegularFile(`${source}.wal`, `${target}.wal`, `${shown}.wal`, within);
}

/**
 * An org's trigger, segment and trait files, as the service reads them (query-files.ts): a refused file (a link,
 * a hard link, a FIFO, too large…) is left out, as it never reached the org's database. Returns how many.
 */
async function copyQueryFiles(root: QueryRoot, org: string, to: string): Promise<number> {
  let count = 0;
  for (const kind of QUERY_KINDS) {
    const listing = listQueryFiles(root, org, kind);
    if (listing.kind !== 'listed') continue;
    const into = kind === 'trigger' ? to : join(to, `${kind}s`);
    for (const name of listing.names) {
      const file = readQueryFile(root, org, kind, name);
      if (file.kind !== 'sql') continue;
      await mkdir(into, { recursive: true });
      await writeFile(join(into, `${name}.sql`), file.sql, { flag: 'wx' });
      count++;
    }
  }
  return count;
}
