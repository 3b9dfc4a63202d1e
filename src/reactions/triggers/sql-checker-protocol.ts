/** Messages between the service (sql-checker.ts) and a checker process (sql-check-process.ts). */
import type { ProfileColumn } from '../../events/profiles/profiles-view.js';
import type { CheckedSql, QueryBudget, QueryKind } from './sql-guard.js';

export type CheckerRequest =
  | { type: 'init'; memoryLimit: string }
  /** `columns`: the org's custom columns, each a column of its `profiles` (events/profiles/profiles-view.ts). */
  | { type: 'check'; id: number; org: string; kind: QueryKind; source: string; columns: ProfileColumn[] }
  /** Stops the check running now (DuckDB stops between vectors; a folded constant may not stop). */
  | { type: 'interrupt' };

export type CheckerReply =
  | { type: 'ready' }
  | { type: 'checked'; id: number; checked: CheckedSql }
  /** `budget`: refused for what running it on the sample row took (the address space is the org's memory share). */
  | { type: 'refused'; id: number; reason: string; budget?: QueryBudget }
  /** DuckDB failed on the SQL otherwise than by refusing it (out of memory while parsing it, say). */
  | { type: 'failed'; id: number; message: string };
