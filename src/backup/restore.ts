/**
 * `npx audience restore <dir>`: a backup (backup.ts) into a fresh DATA_DIR, with the service stopped
 * (the DATA_DIR lock is taken). Org databases first, then their query files and the webhook key, then
 * the control documents, so an org is never named by the control plane before its database is in place.
 *
 * Log positions: each org database records how far into the log it has compacted (log_cursor). A fresh
 * embedded log starts again at 1, so positions are reset to 0 and every event of the new log is taken;
 * the backup holds every event acknowledged before it. Restored against the same JetStream stream they
 * are kept, so the events after the backup that are still in the stream are compacted again.
 */
import { existsSync } from 'node:fs';
import { copyFile, cp, mkdir, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { Config } from '../config.js';
import { openControl } from '../control/open-control.js';
import { ControlConflictError } from '../control/types.js';
import { lockDataDir } from '../data-dir-lock.js';
import { LocalDatabase } from '../db/database.js';
import { isSlug, orgDatabaseFile, ORGS_DIR } from '../storage/org-databases.js';
import { BACKUP_FORMAT, type BackupManifest, CONTROL_FILE, copyDatabaseFile, MANIFEST_FILE, QUERIES_DIR, WEBHOOK_KEY_FILE } from './backup.js';

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
}

export async function restoreBackup(from: string, config: Config, options: { resetLogPositions?: boolean } = {}): Promise<RestoreReport> {
  const manifest = await readManifest(from);
  const orgsDir = join(config.dataDir, ORGS_DIR);
  const present = (await readdir(orgsDir).catch(() => [] as string[])).filter((name) => name.endsWith('.duckdb'));
  if (present.length > 0) throw new RestoreError(`${orgsDir} already holds org databases (${present.slice(0, 3).join(', ')}): restore into a fresh DATA_DIR`);
  const reset = options.resetLogPositions === true || manifest.log.kind === 'embedded' || config.natsUrl === undefined;
  if (config.natsUrl === undefined) {
    const logDir = join(config.dataDir, 'log');
    const sizes = await Promise.all((await readdir(logDir).catch(() => [] as string[])).map(async (name) => (await stat(join(logDir, name))).size));
    if (sizes.some((size) => size > 0)) throw new RestoreError(`${logDir} already holds events: restore into a fresh DATA_DIR`);
  }

  const lock = lockDataDir(config.dataDir);
  try {
    await mkdir(orgsDir, { recursive: true });
    for (const slug of manifest.orgs) {
      const target = orgDatabaseFile(orgsDir, slug);
      await copyDatabaseFile(orgDatabaseFile(join(from, ORGS_DIR), slug), target);
      if (reset) await resetLogPosition(target);
    }
    let queryFiles = 0;
    if (existsSync(join(from, QUERIES_DIR))) {
      for (const slug of manifest.orgs.filter((org) => existsSync(join(from, QUERIES_DIR, org)))) {
        // Files already in QUERIES_DIR (a checkout of the team's repository) win over the backup's.
        await cp(join(from, QUERIES_DIR, slug), join(config.queriesDir, slug), { recursive: true, force: false, errorOnExist: false });
        queryFiles += (await readdir(join(from, QUERIES_DIR, slug), { recursive: true })).filter((name) => name.endsWith('.sql')).length;
      }
    }
    const webhookKey = manifest.webhookKey && config.webhookSigningKey === undefined && !existsSync(join(config.dataDir, WEBHOOK_KEY_FILE));
    if (webhookKey) await copyFile(join(from, WEBHOOK_KEY_FILE), join(config.dataDir, WEBHOOK_KEY_FILE));
    const documents = await restoreDocuments(from, config);
    return { dataDir: config.dataDir, orgs: manifest.orgs, documents, queryFiles, webhookKey, logPositions: reset ? 'reset' : 'kept' };
  } finally {
    lock.release();
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

/** The new log starts at 1: the org takes every record of it. */
async function resetLogPosition(file: string): Promise<void> {
  const db = await LocalDatabase.open(file, { memoryLimit: '256MB' });
  try {
    await db.run('UPDATE log_cursor SET seq = 0');
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
