/**
 * One process per DATA_DIR. The embedded log has no lock of its own: a second process opening
 * `log/events.log` would take the first's in-flight frame for a torn tail and cut it, and DuckDB's own
 * lock is only reached after the log is open. So `buildApp` takes this lock before anything in
 * DATA_DIR is opened: `DATA_DIR/audience.pid`, created exclusively and holding the owner's pid.
 *
 * A kill -9 leaves the file behind; its pid is then dead (or, in a container restarted with the same
 * pid numbering, our own) and the next start takes it over. Two processes taking over one stale file
 * at the same instant could both succeed; this guards against starting a second service by mistake,
 * and DuckDB's file lock stays as a second wall.
 */
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const LOCK_FILE = 'audience.pid';

/** Start-up refused because another process holds DATA_DIR; the message is the one line to print. */
export class DataDirInUseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DataDirInUseError';
  }
}

export interface DataDirLock {
  readonly file: string;
  /** Removes the file if it is still ours; safe to call more than once. */
  release(): void;
}

/** Locks held by this process: a second app built here on the same DATA_DIR is refused as well. */
const heldHere = new Set<string>();

export function lockDataDir(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const file = resolve(join(dataDir, LOCK_FILE));
  if (heldHere.has(file)) throw inUse(dataDir, process.pid);
  // Twice at most: a stale file is removed once, then the atomic link decides.
  for (let attempt = 0; ; attempt++) {
    try {
      createWithPid(file);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw error;
    }
    const owner = ownerOf(file);
    if (owner !== undefined && owner !== process.pid && isAlive(owner)) throw inUse(dataDir, owner);
    removeIfPresent(file);
  }
  heldHere.add(file);
  let released = false;
  return {
    file,
    release() {
      if (released) return;
      released = true;
      heldHere.delete(file);
      if (ownerOf(file) === process.pid) removeIfPresent(file);
    },
  };
}

/**
 * DuckDB's own lock, should it still be met (another program holding `audience.duckdb`): the same
 * one line instead of DuckDB's message and a stack.
 */
export function duckdbLockProblem(error: unknown, dataDir: string): DataDirInUseError | undefined {
  const message = error instanceof Error ? error.message : '';
  if (!/Could not set lock on file/i.test(message)) return undefined;
  const pid = /PID (\d+)/.exec(message)?.[1];
  return new DataDirInUseError(
    `DATA_DIR ${dataDir}: audience.duckdb is locked by another process${pid ? ` (pid ${pid})` : ''}; stop it or use another DATA_DIR`,
  );
}

function inUse(dataDir: string, pid: number): DataDirInUseError {
  return new DataDirInUseError(
    `DATA_DIR ${dataDir} is in use by another audience process (pid ${pid}); stop it or use another DATA_DIR`,
  );
}

/**
 * The file appears with its pid already in it (written to a private name, then hard-linked, which
 * fails with EEXIST when the lock exists), so no other process ever reads it empty.
 */
function createWithPid(file: string): void {
  const draft = `${file}.${process.pid}.tmp`;
  writeFileSync(draft, `${process.pid}\n`, { mode: 0o644 });
  try {
    linkSync(draft, file);
  } finally {
    removeIfPresent(draft);
  }
}

function removeIfPresent(file: string): void {
  try {
    unlinkSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** The pid in the file; undefined when it is gone or holds no pid (damaged). */
function ownerOf(file: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(file, 'utf8').trim(), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
