/**
 * A backup archive (GET /admin/v1/backup) unpacked into a new folder, by `npx audiencectl backup` and by a
 * restore from a `.tar` file. The archive may come from anywhere (whatever AUDIENCE_URL answers, a file
 * handed over), so it is held to what the service writes: regular files and folders, at relative paths
 * inside the folder. The first entry that is a link, a hard link, a device or a FIFO, or whose path is
 * absolute or has a `..`, stops the unpacking: it and everything after it are not created.
 */
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { extract } from 'tar';

/** The archive holds an entry a backup never has; the message names it. */
export class ArchiveRefused extends Error {
  override name = 'ArchiveRefused';
}

const ACCEPTED = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory']);
const NAMED: Record<string, string> = { SymbolicLink: 'a symbolic link', Link: 'a hard link', CharacterDevice: 'a device file', BlockDevice: 'a device file', FIFO: 'a FIFO' };

export async function unpackBackup(archive: Readable, dir: string): Promise<void> {
  let refused: string | undefined;
  const unpack = extract({
    cwd: dir,
    strict: true,
    filter: (path, entry) => {
      refused ??= entryProblem(path, 'type' in entry ? entry.type : 'File');
      return refused === undefined;
    },
  });
  await pipeline(archive, unpack);
  if (refused) throw new ArchiveRefused(`${refused}; a backup holds only regular files and folders`);
}

/** What is wrong with an entry, or undefined. */
function entryProblem(path: string, type: string): string | undefined {
  const entry = `the archive's entry ${JSON.stringify(path)}`;
  if (!ACCEPTED.has(type)) return `${entry} is ${NAMED[type] ?? `of type ${type}`}`;
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) return `${entry} has an absolute path`;
  if (path.split('/').includes('..')) return `${entry} leads out of the folder (..)`;
  return undefined;
}
