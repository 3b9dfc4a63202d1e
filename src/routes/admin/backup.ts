/**
 * GET /admin/v1/backup[?org=<slug>]: a backup (backup.ts) of what this process keeps, streamed as a tar
 * archive; `npx audiencectl backup <dir>` unpacks it. It is staged in DATA_DIR first (the copies take
 * seconds; a slow download must not hold an org's database that long), the manifest goes last, and the
 * staging directory is removed once the answer ends, however it ends.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { create as createTar } from 'tar';
import { AppError } from '../../core/errors.js';
import { operationSchema } from '../../openapi/route-schema.js';
import { ADMIN, slugParam } from './schema-parts.js';
import { type BackupSources, MANIFEST_FILE, writeBackup } from '../../backup/backup.js';

/** Where backups are staged, under DATA_DIR; left-overs of a crash are removed at start. */
const STAGING_DIR = 'backup-staging';
/** How long a backup waits for compaction to reach the log head before it answers compaction_behind. */
const COMPACTION_WAIT_MS = 60_000;

const schema = operationSchema({
  tag: 'Admin: backups',
  summary: 'A consistent backup of what this storage process keeps, as a tar archive',
  description: 'The control plane, the org databases and the query files; `npx audiencectl backup <dir>` unpacks it. Taken from each storage process through its own port.',
  operationId: 'getBackup',
  auth: 'adminKey',
  querystring: { type: 'object', properties: { org: { ...slugParam, description: 'back up this org only' } }, additionalProperties: false },
  ok: {
    status: 200,
    description: 'A tar archive; `manifest.json` is its last entry',
    contentType: 'application/x-tar',
    schema: { type: 'string', format: 'binary' },
    headers: { 'Content-Disposition': { description: 'attachment; filename="audience-backup-<time>[-<org>].tar"', schema: { type: 'string' } } },
  },
  errors: [...ADMIN, 'org_not_found', 'compaction_behind', 'backup_in_progress', 'no_org_databases', 'backup_file_refused'],
});

export function registerBackupRoutes(app: FastifyInstance, sources: BackupSources | undefined): void {
  if (!sources) {
    app.get('/admin/v1/backup', { schema }, async () => {
      throw new AppError('no_org_databases', 'This process keeps no org databases (ROLES has neither compactor nor flows): take the backup from each storage process, through its own port.');
    });
    return;
  }
  const staging = join(sources.dataDir, STAGING_DIR);
  rmSync(staging, { recursive: true, force: true });
  let running = false;

  app.get<{ Querystring: { org?: string } }>('/admin/v1/backup', { schema }, async (request, reply) => {
    if (running) throw new AppError('backup_in_progress', 'Another backup of this process is being taken; retry once it is done.');
    running = true;
    const dir = join(staging, randomUUID());
    const cleanUp = () => rm(dir, { recursive: true, force: true }).finally(() => (running = false));
    try {
      const { org } = request.query;
      const manifest = await writeBackup(sources, dir, { ...(org ? { org } : {}), compactionWaitMs: COMPACTION_WAIT_MS });
      // Files only, listed in full: tar adds a directory's files after the names listed, which would put
      // the manifest before them.
      const files = (await readdir(dir, { recursive: true, withFileTypes: true }))
        .filter((entry) => entry.isFile())
        .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
        .filter((name) => name !== MANIFEST_FILE)
        .sort();
      const archive = createTar({ cwd: dir, portable: true }, [...files, MANIFEST_FILE]);
      request.log.info({ orgs: manifest.orgs.length, files: files.length + 1, compactedSeq: manifest.log.compactedSeq, ...(org ? { org } : {}) }, 'backup taken; sending it');
      reply.raw.once('close', () => void cleanUp());
      const name = `audience-backup-${manifest.createdAt.replace(/[:.]/g, '-')}${org ? `-${org}` : ''}.tar`;
      return reply.type('application/x-tar').header('content-disposition', `attachment; filename="${name}"`).send(archive);
    } catch (error) {
      await cleanUp();
      throw error;
    }
  });
}
