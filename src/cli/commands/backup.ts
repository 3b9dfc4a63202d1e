/**
 * `audiencectl backup` and `restore`: a running service's data into a directory, and back offline.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { EXIT, fail } from '../client.js';
import { type Command, query } from './command.js';

export const BACKUP_COMMANDS: Command[] = [
  {
    name: 'backup',
    args: ['<dir>'],
    options: ['org'],
    operations: ['getBackup'],
    summary: 'a consistent copy of a running service (or one org), into a new directory',
    example: 'audiencectl backup backups/2026-11-26',
    async run(ctx, [dir]) {
      if (existsSync(dir!) && readdirSync(dir!).length > 0) fail(EXIT.usage, `${dir} is not empty: a backup goes into a new or empty directory`);
      const res = await ctx.client.fetch('GET', `/admin/v1/backup${query({ org: ctx.opts.org })}`);
      if (!res.ok || !res.body) ctx.client.refused(res.status, await res.json().catch(() => null));
      mkdirSync(dir!, { recursive: true });
      const { ArchiveRefused, unpackBackup } = await import('../../backup/unpack.js');
      await unpackBackup(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), dir!).catch((error: Error) =>
        fail(
          EXIT.unavailable,
          error instanceof ArchiveRefused ? `${ctx.client.baseUrl} sent an archive that is not a backup (${error.message}); delete ${dir}` : `the backup stream broke off (${error.message}): ${dir} is incomplete; take the backup again`,
        ),
      );
      const manifest = join(dir!, 'manifest.json');
      if (!existsSync(manifest)) fail(EXIT.unavailable, `the backup ended before its manifest: ${dir} is incomplete; take the backup again`);
      ctx.print(JSON.parse(readFileSync(manifest, 'utf8')));
    },
  },
  {
    name: 'restore',
    args: ['<dir|file.tar>'],
    options: ['reset-log-positions'],
    operations: [],
    summary: 'offline, service stopped: a backup into a fresh DATA_DIR (reads DATA_DIR, QUERIES_DIR and NATS_URL like the service)',
    example: 'DATA_DIR=/var/lib/audience audiencectl restore backups/2026-11-26',
    async run(ctx, [dir]) {
      const { ConfigError, readConfig } = await import('../../core/config.js');
      const { RestoreError, restoreBackup } = await import('../../backup/restore.js');
      const { DataDirInUseError } = await import('../../core/data-dir-lock.js');
      try {
        ctx.print(await restoreBackup(dir!, readConfig(process.env), { resetLogPositions: ctx.opts['reset-log-positions'] === true }));
      } catch (error) {
        if (error instanceof ConfigError || error instanceof RestoreError || error instanceof DataDirInUseError) fail(EXIT.refused, error.message);
        throw error;
      }
    },
  },
];
