/**
 * The vocabulary of the SQL checker (sql-checker.ts): a check asked for, the check running in a
 * checker, and a slot holding a checker process.
 */
import type { ProfileColumn } from '../../events/profiles/profiles-view.js';
import type { CheckerProcess } from './checker-process.js';
import type { CheckedSql, QueryKind } from './sql-guard.js';
import type { StarvedRequest } from './starved-checks.js';


export interface Request extends StarvedRequest {
  org: string;
  kind: QueryKind;
  source: string;
  /** The org's custom columns of `profiles`. */
  columns: ProfileColumn[];
  /** The same org, kind, SQL and columns: what a starved check's outcome is kept under. */
  key: string;
  /** When it was asked (Date.now): its deadline counts from here, waiting for a checker included. */
  asked: number;
  timeoutMs: number;
  resolve: (checked: CheckedSql) => void;
  reject: (error: Error) => void;
  waitTimer?: NodeJS.Timeout;
}

export interface Running {
  request: Request;
  id: number;
  checker: CheckerProcess;
  /** Past its deadline and told to stop: whatever it answers now is this verdict. */
  overrun: (() => Error) | undefined;
  /** Stops watching its cost (check-watch.ts). */
  unwatch: () => void;
  /** The grace after it was told to stop. */
  timer: NodeJS.Timeout | undefined;
  /** Moved to HEAVY_NICE: its checker goes back to LIGHT_NICE (or is replaced) when it ends. */
  heavy: boolean;
}

export interface Slot {
  checker: CheckerProcess | undefined;
  running: Running | undefined;
  /** The org whose check ended this slot's last checker, while the replacement starts: its share. */
  heldBy: string | undefined;
}
