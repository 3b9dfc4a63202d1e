/**
 * An org's commits told again, rebuilt from its database: a storage process that ends between a commit
 * and its report (the report still in the pipe to the service) left the service unaware of them, so the
 * contacts they touched kept their old profiles — a read-your-writes lookup for a new contact answered
 * 404 (freshness.test.ts, the storage process killed while lookups wait) — until their next event.
 * The next compactor tells every commit made at or after the last one the service was told of: that
 * one twice (one refresh of its contacts more), none missed.
 */
import { microsParam } from '../../db/database.js';
import type { Database } from '../../db/sql.js';
import type { CommitReport, CompactorDeps } from './compaction.js';
import type { OrgState } from './org-state.js';

/**
 * Every loaded org's commits at or after `sinceMicros` (events.visible_at), told again through `report`.
 * An org whose state or database does not answer is left out (logged): it is held, its contacts stale.
 */
export async function reportAgain(
  states: ReadonlyMap<string, Promise<OrgState>>,
  deps: Pick<CompactorDeps, 'orgs' | 'logger'>,
  sinceMicros: number,
  report: (report: CommitReport) => Promise<void>,
): Promise<void> {
  for (const [org, loading] of states) {
    try {
      if ((await loading).lastVisibleAtMicros < BigInt(sinceMicros)) continue;
      const again = await commitsSince(deps.orgs.org(org), org, sinceMicros);
      if (again) await report(again);
    } catch (error) {
      deps.logger.error({ err: error, org }, 'telling again the commits a storage process ended before reporting failed; the contacts they touched keep their profiles until their next event');
    }
  }
}

/** The report of the org's commits at or after `sinceMicros`, or undefined when none stored events. */
async function commitsSince(db: Database, org: string, sinceMicros: number): Promise<CommitReport | undefined> {
  const rows = await db.all<{ email: string | null; production: boolean; newest: bigint; committed: bigint }>(
    `SELECT email, environment = 'production' AS production, max(epoch_ms(received_at)) AS newest, max(epoch_us(visible_at)) AS committed
       FROM events WHERE visible_at >= $1 GROUP BY ALL`,
    [microsParam(BigInt(sinceMicros))],
  );
  if (rows.length === 0) return undefined;
  const touched = rows.filter((r) => r.production && r.email !== null).map((r) => ({ org, email: r.email! }));
  const newest = Math.max(...rows.map((r) => Number(r.newest)));
  const committedAt = Math.max(...rows.map((r) => Number(r.committed)));
  // `received` stays empty: the receipt → profile delay of events reported twice is not observed twice.
  return { touched, orgs: [org], backlog: false, received: [], newest: [[org, newest]], committedAt };
}
