/**
 * What the compactor keeps of one org between batches, loaded from the org's database: its dedupe
 * window, identities, pending identities and tombstones, its log position, and when its next sweep of
 * expired pending identities and its next fold are due.
 */
import { tsParam } from '../../db/database.js';
import type { Database } from '../../db/sql.js';
import { DEDUPE_WINDOW_MS, DedupeWindow, dedupeKey } from './dedupe-window.js';
import { foldContactActivity } from './fold-contact-activity.js';
import { foldEventTypes } from './fold-event-types.js';
import { IdentityMap, clientKey } from './identity-map.js';
import type { PlanState } from './plan-batch.js';
import { loadTombstones } from './tombstones.js';
import { CURSOR_NAME } from './write-batch.js';

/** Expired pending identities are swept at most this often (a pending row expires within this of its 7 days). */
export const SWEEP_INTERVAL_MS = 10_000;
/**
 * Newly visible events are folded into the per-contact aggregates at most this often, and at most
 * FOLD_SHARE of the time: each profile computation reads the unfolded events, so folding bounds that
 * read to seconds of traffic, while one fold serves many commits (a fold per commit would double the
 * cost of small commits) and a backlog being drained is not slowed by folds of many contacts.
 */
const FOLD_INTERVAL_MS = 5_000;
const FOLD_SHARE = 0.1;

export interface OrgState {
  plan: PlanState;
  /** The log seq up to which the org's database holds its entries (its log_cursor). */
  cursor: number;
  lastVisibleAtMicros: bigint;
  nextSweepAt: number;
  nextFoldAt: number;
}

/**
 * Where reading must start for an org to get every record it lacks. Position 0 is a database that never
 * compacted a record (a new org, or positions reset for a new log): it lacks nothing at or below the
 * checkpoint, so it asks for no replay.
 */
export function replayPoint(cursor: number): number {
  return cursor > 0 ? cursor : Infinity;
}

/** Expired pending identities are looked for at most every SWEEP_INTERVAL_MS, and only if any exist. */
export function sweepDue(state: OrgState, now: number): boolean {
  return state.plan.pendingByClient.size > 0 && now >= state.nextSweepAt;
}

export function decrementPending(plan: PlanState, key: string): void {
  const left = (plan.pendingByClient.get(key) ?? 1) - 1;
  if (left > 0) plan.pendingByClient.set(key, left);
  else plan.pendingByClient.delete(key);
}

/** Folds newly visible events into the per-contact aggregates, and schedules the next fold. */
export async function foldOrg(db: Database, state: OrgState, now: number, logger: { error(details: object, message: string): void }): Promise<void> {
  const started = performance.now();
  try {
    await db.transaction(async (c) => {
      await foldContactActivity(c);
      await foldEventTypes(c);
    });
    state.nextFoldAt = now + Math.max(FOLD_INTERVAL_MS, (performance.now() - started) / FOLD_SHARE);
  } catch (error) {
    state.nextFoldAt = now + FOLD_INTERVAL_MS;
    // The batch is committed and profiles stay exact without the fold; the next one catches up.
    logger.error({ err: error }, 'folding contact activity and event types failed');
  }
}

/** The org's state as its database holds it. */
export async function loadOrgState(db: Database, org: string, now: number): Promise<OrgState> {
  // Created once here, so each commit only updates it (write-batch.ts).
  await db.run('INSERT OR IGNORE INTO log_cursor VALUES ($1, 0, NULL)', [CURSOR_NAME]);
  const [cursor] = await db.all<{ seq: bigint; visible_us: bigint | null }>(
    'SELECT seq, epoch_us(visible_at) AS visible_us FROM log_cursor WHERE name = $1',
    [CURSOR_NAME],
  );

  const dedupe = await loadDedupeWindow(db, org, now);

  const identities = new IdentityMap();
  const mappings = await db.all<{ org: string; environment: string; client_id: string; email: string; received_ms: bigint }>(
    'SELECT org, environment, client_id, email, epoch_ms(received_at) AS received_ms FROM identify_mappings',
  );
  for (const m of mappings) {
    identities.record({ org: m.org, environment: m.environment, clientId: m.client_id, email: m.email, receivedAt: Number(m.received_ms) });
  }

  const pendingByClient = new Map<string, number>();
  const pending = await db.all<{ org: string; environment: string; client_id: string; n: bigint }>(
    'SELECT org, environment, client_id, count(*) AS n FROM pending_identity GROUP BY ALL',
  );
  for (const p of pending) pendingByClient.set(clientKey(p.org, p.environment, p.client_id), Number(p.n));

  return {
    plan: { dedupe, identities, pendingByClient, tombstones: await loadTombstones(db) },
    cursor: Number(cursor?.seq ?? 0n),
    lastVisibleAtMicros: cursor?.visible_us ?? 0n,
    nextSweepAt: 0,
    // Opening the database folded what was there (storage/migrate.ts): the next fold is due later.
    nextFoldAt: now + FOLD_INTERVAL_MS,
  };
}

/** A day of message ids is read an hour of receipt at a time. */
const LOAD_SLICE_MS = 60 * 60 * 1000;

/**
 * The message ids of the last 24 h (stored and pending), oldest first. Read in hourly slices of receipt
 * time (DuckDB skips the row groups outside each by their time range), so the storage process answers
 * other calls between them: 2.7 M rows read at once held it for 7 s of conversion, and with it the
 * service's start. The org is the database's own: only its environment and id are read per row.
 */
async function loadDedupeWindow(db: Database, org: string, now: number): Promise<DedupeWindow> {
  const dedupe = new DedupeWindow();
  for (let from = now - DEDUPE_WINDOW_MS; ; from += LOAD_SLICE_MS) {
    // The last slice is open-ended: receipt times ahead of this clock (another process's) count too.
    const last = from + LOAD_SLICE_MS > now;
    const within = last ? 'received_at > $1' : 'received_at > $1 AND received_at <= $2';
    const seen = await db.all<{ environment: string; message_id: string; seen_ms: bigint }>(
      `SELECT environment, message_id, epoch_ms(received_at) AS seen_ms FROM events WHERE ${within}
       UNION ALL
       SELECT environment, message_id, epoch_ms(received_at) FROM pending_identity WHERE ${within}
       ORDER BY seen_ms`,
      last ? [tsParam(from)] : [tsParam(from), tsParam(from + LOAD_SLICE_MS)],
    );
    for (const s of seen) dedupe.checkAndRecord(dedupeKey(org, s.environment, s.message_id), Number(s.seen_ms));
    if (last) return dedupe;
  }
}
