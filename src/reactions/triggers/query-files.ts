/**
 * Trigger, segment and trait files (SPEC 7), the only file I/O on QUERIES_DIR: QUERIES_DIR/<org>/<name>.sql,
 * QUERIES_DIR/<org>/segments/<name>.sql and QUERIES_DIR/<org>/traits/<name>.sql, and tracking plans'
 * QUERIES_DIR/<org>/plans/<event type>.schema.json. QUERIES_DIR is often a checkout of the data team's repository,
 * written by people and tools the service does not control, and git checks out symbolic links: a `.sql`
 * link to DATA_DIR/webhook.key once showed the signing key through the triggers API. So only regular
 * files inside the org's own folders are read or written, never through a link (regular-file.ts), and
 * anything else is refused with a reason shown on the trigger; a refused file is never read, stored or
 * backed up.
 */
import { mkdirSync, readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { checkFolder, FileRefused, type FolderCheck, lstatOrUndefined, readRegularFile, replaceFile, type Verb } from '../../core/regular-file.js';
import type { QueryKind } from './sql-guard.js';

export const QUERY_NAME = /^[a-z][a-z0-9_]{0,63}$/;
/** What PUT accepts (JSON Schema maxLength: UTF-16 code units); a file may hold no more. */
export const SQL_MAX_CHARS = 100_000;
/** A code unit is at most 3 bytes of UTF-8, so a larger file cannot be SQL_MAX_CHARS: refused unread. */
export const SQL_MAX_BYTES = 3 * SQL_MAX_CHARS;

/** Where query files are, and how a reason names it (`QUERIES_DIR`, or a backup's `…/queries`). */
export interface QueryRoot {
  dir: string;
  shown: string;
}

export type QueryRead = { kind: 'sql'; sql: string } | { kind: 'absent' } | { kind: 'refused'; reason: string; of: 'folder' | 'file' };
export type QueryListing = { kind: 'listed'; names: string[]; ignored: string[] } | { kind: 'absent' } | { kind: 'refused'; reason: string };

/** The names of the `.sql` files in the org's folder of this kind (those not matching QUERY_NAME in `ignored`). */
export function listQueryFiles(root: QueryRoot, org: string, kind: QueryKind): QueryListing {
  const folder = queryFolder(root, org, kind, 'read');
  if (folder.kind !== 'folder') return folder;
  let entries: string[];
  try {
    entries = readdirSync(folder.path);
  } catch (error) {
    return { kind: 'refused', reason: `${folder.shown} cannot be listed (${(error as NodeJS.ErrnoException).code})` };
  }
  const files = entries.filter((file) => file.endsWith('.sql')).map((file) => file.slice(0, -'.sql'.length));
  return { kind: 'listed', names: files.filter((name) => QUERY_NAME.test(name)), ignored: files.filter((name) => !QUERY_NAME.test(name)).map((name) => `${folder.shown}/${name}.sql`) };
}

export function readQueryFile(root: QueryRoot, org: string, kind: QueryKind, name: string): QueryRead {
  const folder = queryFolder(root, org, kind, 'read');
  if (folder.kind === 'refused') return { ...folder, of: 'folder' };
  if (folder.kind === 'absent') return folder;
  const shown = `${folder.shown}/${name}.sql`;
  const file = readRegularFile(join(folder.path, `${name}.sql`), shown, folder.real, SQL_MAX_BYTES);
  if (file.kind !== 'read') return file.kind === 'refused' ? { ...file, of: 'file' } : file;
  const sql = file.data.toString('utf8');
  if (sql.length > SQL_MAX_CHARS) return { kind: 'refused', reason: `${shown} holds ${sql.length} characters; a query may have at most ${SQL_MAX_CHARS} (what PUT accepts)`, of: 'file' };
  return { kind: 'sql', sql };
}

/** Why saving the query would be refused (a folder on the way is a link, the file is a folder), or undefined. */
export function unwritable(root: QueryRoot, org: string, kind: QueryKind, name: string): string | undefined {
  const folder = queryFolder(root, org, kind, 'written');
  if (folder.kind === 'refused') return folder.reason;
  if (folder.kind === 'absent') return undefined;
  const shown = `${folder.shown}/${name}.sql`;
  try {
    return lstatOrUndefined(join(folder.path, `${name}.sql`), shown)?.isDirectory() ? `${shown} is a folder; only a regular file can be written in its place` : undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * Saves the query atomically (regular-file.ts replaceFile), creating the org's folders if needed but never
 * writing through one that is a link. With `keep`, a file already there stays and false is returned.
 * Throws FileRefused.
 */
export function writeQueryFile(root: QueryRoot, org: string, kind: QueryKind, name: string, sql: string, options: { keep?: boolean } = {}): boolean {
  // QUERIES_DIR itself is the operator's choice and may be a link; what is under it is checked.
  try {
    mkdirSync(root.dir, { recursive: true });
  } catch (error) {
    throw new FileRefused(`${root.shown} cannot be created (${(error as NodeJS.ErrnoException).code})`, { cause: error });
  }
  const folder = queryFolder(root, org, kind, 'written', true);
  if (folder.kind !== 'folder') throw new FileRefused(folder.kind === 'refused' ? folder.reason : `${root.shown}/${org} vanished while being written`);
  return replaceFile(join(folder.path, `${name}.sql`), sql, `${folder.shown}/${name}.sql`, folder.real, options);
}

/**
 * Removes the query's file: a regular file, or whatever else has its name except a folder (a link is
 * removed, never what it points to). False when nothing was there. Throws FileRefused.
 */
export function removeQueryFile(root: QueryRoot, org: string, kind: QueryKind, name: string): boolean {
  const folder = queryFolder(root, org, kind, 'written');
  if (folder.kind === 'refused') throw new FileRefused(folder.reason);
  if (folder.kind === 'absent') return false;
  const path = join(folder.path, `${name}.sql`);
  const shown = `${folder.shown}/${name}.sql`;
  const stats = lstatOrUndefined(path, shown);
  if (!stats) return false;
  if (stats.isDirectory()) throw new FileRefused(`${shown} is a folder; the service removes only files`);
  try {
    unlinkSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return false;
    throw new FileRefused(`${shown} cannot be removed (${code})`, { cause: error });
  }
  return true;
}

type QueryFolder = { kind: 'folder'; path: string; shown: string; real: string } | Exclude<FolderCheck, { kind: 'folder' }>;

/**
 * The org's folder, then (segments, traits) its `segments/` or `traits/`, each a real folder and not a link, checked before
 * the next is looked at (or created, with `create`: never inside a link).
 */
function queryFolder(root: QueryRoot, org: string, kind: QueryKind | 'plan', verb: Verb, create = false): QueryFolder {
  let path = root.dir;
  let shown = root.shown;
  let real = '';
  for (const part of kind === 'trigger' ? [org] : [org, `${kind}s`]) {
    path = join(path, part);
    shown = `${shown}/${part}`;
    if (create) makeFolder(path, shown);
    const check = checkFolder(path, shown, verb);
    if (check.kind !== 'folder') return check;
    real = check.real;
  }
  return { kind: 'folder', path, shown, real };
}

function makeFolder(path: string, shown: string): void {
  try {
    mkdirSync(path);
  } catch (error) {
    // EEXIST: a folder, or a link that the check after this refuses.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw new FileRefused(`${shown} cannot be created (${(error as NodeJS.ErrnoException).code})`, { cause: error });
  }
}

/**
 * Tracking plans' files (issue 42): QUERIES_DIR/<org>/plans/<event type>.schema.json, a plan's JSON Schema,
 * under the same rules (regular files in real folders, never through a link). Event types may hold any
 * character but a control one, so a name is any file name with the suffix that checkEventName accepts.
 */
export const PLAN_FILE_SUFFIX = '.schema.json';
/** Bytes read of a plan's file: a plan's schema is at most 16 KB as JSON, whitespace aside. */
const PLAN_FILE_MAX_BYTES = 256 * 1024;

export type PlanFileRead = { kind: 'json'; text: string } | { kind: 'absent' } | { kind: 'refused'; reason: string };

/** Whether the event type can name a file in the plans folder: no `/` or `\\` (a path), no leading dot. */
export function isPlanFileName(eventType: string): boolean {
  return !/[/\\]/.test(eventType) && !eventType.startsWith('.');
}

/** The event types that have a plan's file in the org's folder (refused and absent folders: none). */
export function listPlanFiles(root: QueryRoot, org: string): QueryListing {
  const folder = queryFolder(root, org, 'plan', 'read');
  if (folder.kind !== 'folder') return folder;
  try {
    const names = readdirSync(folder.path).filter((f) => f.endsWith(PLAN_FILE_SUFFIX)).map((f) => f.slice(0, -PLAN_FILE_SUFFIX.length));
    return { kind: 'listed', names: names.filter(isPlanFileName), ignored: [] };
  } catch (error) {
    return { kind: 'refused', reason: `${folder.shown} cannot be listed (${(error as NodeJS.ErrnoException).code})` };
  }
}

export function readPlanFile(root: QueryRoot, org: string, eventType: string): PlanFileRead {
  if (!isPlanFileName(eventType)) return { kind: 'absent' };
  const folder = queryFolder(root, org, 'plan', 'read');
  if (folder.kind !== 'folder') return folder;
  const file = readRegularFile(join(folder.path, eventType + PLAN_FILE_SUFFIX), `${folder.shown}/${eventType}${PLAN_FILE_SUFFIX}`, folder.real, PLAN_FILE_MAX_BYTES);
  return file.kind === 'read' ? { kind: 'json', text: file.data.toString('utf8') } : file;
}

/**
 * Saves a plan's schema as its file (PUT does, so the file and the plan in force agree); an event type that
 * cannot be a file name has no file. Throws FileRefused.
 */
export function writePlanFile(root: QueryRoot, org: string, eventType: string, text: string): void {
  if (!isPlanFileName(eventType)) return;
  try {
    mkdirSync(root.dir, { recursive: true });
  } catch (error) {
    throw new FileRefused(`${root.shown} cannot be created (${(error as NodeJS.ErrnoException).code})`, { cause: error });
  }
  const folder = queryFolder(root, org, 'plan', 'written', true);
  if (folder.kind !== 'folder') throw new FileRefused(folder.kind === 'refused' ? folder.reason : `${root.shown}/${org} vanished while being written`);
  replaceFile(join(folder.path, eventType + PLAN_FILE_SUFFIX), text, `${folder.shown}/${eventType}${PLAN_FILE_SUFFIX}`, folder.real);
}

/**
 * The service's view of QUERIES_DIR: reads and writes as above, and the current refusal of each folder
 * and file, logged once when it appears or changes, for the triggers list to show.
 */
export class QueryFiles {
  private readonly root: QueryRoot;
  private readonly folders = new Map<string, { refused?: string; files: Map<string, string> }>();
  /** Files whose names cannot be queries, warned about once. */
  private readonly ignored = new Set<string>();

  constructor(
    queriesDir: string,
    private readonly logger: FastifyBaseLogger,
  ) {
    this.root = { dir: queriesDir, shown: 'QUERIES_DIR' };
  }

  /** The folders in QUERIES_DIR: the orgs that may have files. */
  orgs(): string[] {
    try {
      return readdirSync(this.root.dir);
    } catch {
      return [];
    }
  }

  /** The query names in the org's folder of this kind; a refused folder has none (and its reason is kept). */
  names(org: string, kind: QueryKind): string[] {
    const listing = listQueryFiles(this.root, org, kind);
    const folder = this.folder(org, kind);
    this.noteFolder(folder, listing.kind === 'refused' ? listing.reason : undefined);
    if (listing.kind !== 'listed') {
      folder.files.clear();
      return [];
    }
    for (const name of folder.files.keys()) if (!listing.names.includes(name)) folder.files.delete(name);
    for (const file of listing.ignored) {
      if (this.ignored.has(file)) continue;
      this.ignored.add(file);
      this.logger.warn({ file }, `ignored: query file names match ${QUERY_NAME}`);
    }
    return listing.names;
  }

  read(org: string, kind: QueryKind, name: string): QueryRead {
    const read = readQueryFile(this.root, org, kind, name);
    const folder = this.folder(org, kind);
    this.noteFolder(folder, read.kind === 'refused' && read.of === 'folder' ? read.reason : undefined);
    const reason = read.kind === 'refused' && read.of === 'file' ? read.reason : undefined;
    if (reason === undefined) folder.files.delete(name);
    else if (folder.files.get(name) !== reason) {
      folder.files.set(name, reason);
      this.logger.warn({ org, kind, name, reason }, `${kind} file refused; it is not read`);
    }
    return read;
  }

  /** Throws FileRefused before anything is recorded, when the save could not be written. */
  assertWritable(org: string, kind: QueryKind, name: string): void {
    const reason = unwritable(this.root, org, kind, name);
    if (reason) throw new FileRefused(reason);
  }

  write(org: string, kind: QueryKind, name: string, sql: string): void {
    writeQueryFile(this.root, org, kind, name, sql);
    this.folder(org, kind).files.delete(name);
  }

  /** Removes the query's file (removeQueryFile); false when there was none. Throws FileRefused. */
  remove(org: string, kind: QueryKind, name: string): boolean {
    const removed = removeQueryFile(this.root, org, kind, name);
    this.folder(org, kind).files.delete(name);
    return removed;
  }

  /** Why the query's file (or its folder) is not read, as of the last look. */
  refusal(org: string, kind: QueryKind, name: string): string | undefined {
    const folder = this.folders.get(`${org}/${kind}`);
    return folder?.refused ?? folder?.files.get(name);
  }

  folderRefusal(org: string, kind: QueryKind): string | undefined {
    return this.folders.get(`${org}/${kind}`)?.refused;
  }

  /** Names whose files were refused at the last look (some may have no recorded version). */
  refusedNames(org: string, kind: QueryKind): string[] {
    return [...(this.folders.get(`${org}/${kind}`)?.files.keys() ?? [])];
  }

  private folder(org: string, kind: QueryKind): { refused?: string; files: Map<string, string> } {
    const key = `${org}/${kind}`;
    let folder = this.folders.get(key);
    if (!folder) this.folders.set(key, (folder = { files: new Map() }));
    return folder;
  }

  private noteFolder(folder: { refused?: string }, reason: string | undefined): void {
    if (reason !== undefined && folder.refused !== reason) this.logger.warn({ reason }, 'query folder refused; nothing in it is read');
    folder.refused = reason;
  }
}
