/**
 * The contacts a candidate version of a trigger would fire for that its live version would not, and the
 * other way round, over one window (issue 26, part 4: POST …/triggers/{name}/diff, and the console's
 * comparison before Save). Contacts are distinct identities; rows without one fire nothing.
 *
 * Both queries are checked ones (sql-guard.ts) and run on the caller's sandboxed connection
 * (sandbox.ts, within TRIGGER_TIMEOUT_MS). Each reads at most MAX_READ identities, in identity order; when
 * one was cut there, the comparison covers the identities up to where both were read, exactly, and says
 * `truncated` — never a contact "removed" only because its side was cut.
 */
import type { Sql } from '../../db/sql.js';
import { runSandboxed, type Window } from './sandbox.js';
import type { CheckedSql } from './sql-guard.js';

/** Identities read per version: at most ~2.5 MB of e-mail addresses in this process. */
const MAX_READ = 10_000;
/** Identities listed per side: 1,000 of up to 254 characters keep an answer under NATS's 1 MiB payload. */
export const DIFF_MAX_LISTED = 1000;

export interface ContactDiff {
  added: string[];
  removed: string[];
  unchanged: number;
  truncated: boolean;
}

/** `live` undefined: the trigger has no live version, so every candidate contact is added. */
export async function diffContacts(c: Sql, candidate: CheckedSql, live: CheckedSql | undefined, window: Window): Promise<ContactDiff> {
  const mine = await identities(c, candidate, window);
  const theirs = live ? await identities(c, live, window) : { ids: [], truncated: false };
  // Compared up to the lowest identity where a cut side stopped: beyond it, that side is unknown.
  const cuts = [mine, theirs].filter((side) => side.truncated).map((side) => side.ids.at(-1)!);
  const within = (id: string) => cuts.every((cut) => id <= cut);
  const before = new Set(theirs.ids.filter(within));
  const after = new Set(mine.ids.filter(within));
  const added = [...after].filter((id) => !before.has(id));
  const removed = [...before].filter((id) => !after.has(id));
  return {
    added: added.slice(0, DIFF_MAX_LISTED),
    removed: removed.slice(0, DIFF_MAX_LISTED),
    unchanged: after.size - added.length,
    truncated: cuts.length > 0 || added.length > DIFF_MAX_LISTED || removed.length > DIFF_MAX_LISTED,
  };
}

/** The query's distinct identities in the window, in order. A newline ends a line comment the SQL may end with. */
async function identities(c: Sql, query: CheckedSql, window: Window): Promise<{ ids: string[]; truncated: boolean }> {
  const distinct: CheckedSql = {
    ...query,
    sql: `SELECT DISTINCT identity FROM (\n${query.sql}\n) AS version WHERE identity IS NOT NULL ORDER BY identity`,
    columns: ['identity'],
  };
  const page = await runSandboxed(c, distinct, window, MAX_READ);
  return { ids: page.rows.map((row) => String(row.identity)), truncated: page.truncated };
}
