/**
 * Files read or written where someone other than the service may have put something that is not a file:
 * a symbolic link (git checks them out), a hard link to a file elsewhere, a FIFO (opening one for reading
 * waits for a writer, for ever), a device, a folder, or a sparse file of a gigabyte. Only a regular file
 * with one name, inside the folder it is expected in, is read, copied or replaced; anything else is
 * refused with one line that says what was found, for the person who put it there. `shown` is the path
 * as that person knows it (`QUERIES_DIR/acme/x.sql`), so a reason never reveals where a link points.
 */
import { closeSync, constants, fstatSync, fsyncSync, lstatSync, openSync, readlinkSync, readSync, realpathSync, renameSync, type Stats, unlinkSync, writeSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { copyFile, lstat, realpath } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = constants;

export type Verb = 'read' | 'written' | 'copied';

/** A write or copy refused; the message is the one line to show. */
export class FileRefused extends Error {
  override name = 'FileRefused';
}

export type FileRead = { kind: 'read'; data: Buffer } | { kind: 'absent' } | { kind: 'refused'; reason: string };

export type FolderCheck = { kind: 'folder'; real: string } | { kind: 'absent' } | { kind: 'refused'; reason: string };

/** Why `stats` is not a regular file with one name (and at most `maxBytes`), or undefined. */
export function notRegular(stats: Stats, shown: string, verb: Verb, maxBytes = Infinity): string | undefined {
  const only = `only regular files are ${verb}`;
  if (stats.isSymbolicLink()) return `${shown} is a symbolic link; ${only}`;
  if (stats.isDirectory()) return `${shown} is a folder; ${only}`;
  if (stats.isFIFO()) return `${shown} is a FIFO; ${only}`;
  if (stats.isSocket()) return `${shown} is a socket; ${only}`;
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return `${shown} is a device file; ${only}`;
  if (!stats.isFile()) return `${shown} is not a regular file; ${only}`;
  // `ln /srv/secret x.sql` needs no access to the folder the secret is in, and looks like any file.
  if (stats.nlink > 1) return `${shown} has ${stats.nlink} hard links; only files with one link are ${verb} (another name may be a file outside its folder)`;
  if (stats.size > maxBytes) return `${shown} is ${stats.size} bytes; at most ${maxBytes} bytes are ${verb}`;
  return undefined;
}

/** A folder that is really one (not a link to one), with its resolved path. */
export function checkFolder(path: string, shown: string, verb: Verb): FolderCheck {
  let stats: Stats;
  try {
    stats = lstatSync(path);
  } catch (error) {
    if (isAbsent(error)) return { kind: 'absent' };
    return { kind: 'refused', reason: `${shown} cannot be ${verb} (${errorCode(error)})` };
  }
  if (stats.isSymbolicLink()) return { kind: 'refused', reason: `${shown} is a symbolic link; only a real folder is ${verb}` };
  if (!stats.isDirectory()) return { kind: 'refused', reason: `${shown} is not a folder` };
  try {
    return { kind: 'folder', real: realpathSync.native(path) };
  } catch (error) {
    return isAbsent(error) ? { kind: 'absent' } : { kind: 'refused', reason: `${shown} cannot be ${verb} (${errorCode(error)})` };
  }
}

/**
 * The file at `path` in the folder whose resolved path is `folder`, at most `maxBytes`. Checked with
 * lstat before it is opened, and again on the open descriptor: opened with O_NOFOLLOW (a link swapped in
 * since fails) and O_NONBLOCK (a FIFO swapped in does not wait), and the file opened must be the one
 * named inside `folder` (a folder on the way swapped for a link since it was checked is caught there).
 */
export function readRegularFile(path: string, shown: string, folder: string, maxBytes: number): FileRead {
  let fd: number;
  try {
    const reason = notRegular(lstatSync(path), shown, 'read', maxBytes);
    if (reason) return { kind: 'refused', reason };
    fd = openSync(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (error) {
    return unreadable(error, shown);
  }
  try {
    const stats = fstatSync(fd);
    const reason = notRegular(stats, shown, 'read', maxBytes) ?? outside(fd, path, shown, folder, 'read');
    if (reason) return { kind: 'refused', reason };
    // One byte more than allowed: a file that grew past the bound since fstat is refused, not cut.
    const data = Buffer.alloc(Math.min(stats.size, maxBytes) + 1);
    let length = 0;
    for (let n = 1; n > 0 && length < data.length; length += n) n = readSync(fd, data, length, data.length - length, null);
    if (length > maxBytes) return { kind: 'refused', reason: `${shown} is over ${maxBytes} bytes; at most ${maxBytes} bytes are read` };
    return { kind: 'read', data: data.subarray(0, length) };
  } catch (error) {
    return unreadable(error, shown);
  } finally {
    closeSync(fd);
  }
}

/**
 * Puts `data` at `path` in the folder whose resolved path is `folder`: a temporary file next to it with a
 * new random name, created with O_CREAT|O_EXCL|O_NOFOLLOW (a file or link planted under any name is
 * never opened, so never written through), synced, then renamed over `path` in one step (rename replaces
 * a link or file of that name; it never writes into what a link points to). With `keep`, a `path` that
 * exists in any form is left alone and false is returned. Throws FileRefused.
 */
export function replaceFile(path: string, data: string, shown: string, folder: string, options: { keep?: boolean } = {}): boolean {
  const existing = lstatOrUndefined(path, shown);
  if (existing && options.keep) return false;
  if (existing?.isDirectory()) throw new FileRefused(`${shown} is a folder; only a regular file can be written in its place`);
  const temp = join(dirname(path), `.${basename(path)}.${randomUUID()}.tmp`);
  let fd: number;
  try {
    fd = openSync(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o666);
  } catch (error) {
    throw new FileRefused(`${shown} cannot be written (${errorCode(error)})`, { cause: error });
  }
  try {
    const wrongPlace = outside(fd, temp, shown, folder, 'written');
    if (wrongPlace) throw new FileRefused(wrongPlace);
    const bytes = Buffer.from(data);
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at);
    fsyncSync(fd);
    closeSync(fd);
    fd = -1;
    renameSync(temp, path);
    return true;
  } catch (error) {
    if (fd >= 0) closeSync(fd);
    unlinkQuietly(temp);
    if (error instanceof FileRefused) throw error;
    throw new FileRefused(`${shown} cannot be written (${errorCode(error)})`, { cause: error });
  }
}

/**
 * Copies a regular file with one name inside `within` (a resolved path) to `target`, which must not exist
 * in any form (COPYFILE_EXCL: a link planted there is not written through). Checked with lstat and
 * realpath, then copied by path (copy_file_range; a database is copied while its org's compaction
 * waits): these are DATA_DIR's own files, or an unpacked backup checked whole before. Throws FileRefused.
 */
export async function copyRegularFile(source: string, target: string, shown: string, within: string): Promise<void> {
  try {
    const reason = notRegular(await lstat(source), shown, 'copied');
    if (reason) throw new FileRefused(reason);
    if (!isInside(await realpath(source), within)) throw new FileRefused(`${shown} resolves to a path outside ${within}; only files inside it are copied`);
    await copyFile(source, target, constants.COPYFILE_EXCL);
  } catch (error) {
    if (error instanceof FileRefused) throw error;
    throw new FileRefused(`${shown} cannot be copied to ${target} (${errorCode(error)})`, { cause: error });
  }
}

/** lstat, or undefined when nothing is there; other failures are refusals. */
export function lstatOrUndefined(path: string, shown: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (error) {
    if (isAbsent(error)) return undefined;
    throw new FileRefused(`${shown} cannot be read (${errorCode(error)})`, { cause: error });
  }
}

export function isInside(path: string, folder: string): boolean {
  return path.startsWith(folder.endsWith('/') ? folder : `${folder}/`);
}

/** The path the descriptor was opened at (Linux: /proc/self/fd; elsewhere the path resolved now) must be `name` inside `folder`. */
function outside(fd: number, path: string, shown: string, folder: string, verb: Verb): string | undefined {
  let opened: string;
  try {
    opened = readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    opened = realpathSync.native(path);
  }
  return opened === join(folder, basename(path)) ? undefined : `${shown} is not inside its folder (a folder on the way was replaced); only files inside it are ${verb}`;
}

function unreadable(error: unknown, shown: string): FileRead {
  if (isAbsent(error)) return { kind: 'absent' };
  if (errorCode(error) === 'ELOOP') return { kind: 'refused', reason: `${shown} is a symbolic link; only regular files are read` };
  return { kind: 'refused', reason: `${shown} cannot be read (${errorCode(error)})` };
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Already gone.
  }
}

/** Gone, or never there (a vanished file is picked up at the next scan); ENOTDIR: a file where a folder was. */
function isAbsent(error: unknown): boolean {
  const code = errorCode(error);
  return code === 'ENOENT' || code === 'ENOTDIR';
}

function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
}
