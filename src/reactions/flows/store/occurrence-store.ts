/**
 * Occurrences of scheduled and recurring flows (flow_occurrences, flow_occurrence_members;
 * pipelines/storage.sql): every read and write of the two tables goes through here.
 * - an occurrence starts (`start`) with its row and its members, in one transaction: the segment is read
 *   once per occurrence, and a restart finds either both or neither. A member erased with suppress is
 *   decided there and then (counted `suppressed`), never stored: its address is not written again;
 * - each chunk of members is decided in one transaction with its sends (`decided`, inside the caller's
 *   transaction with SendStore.record): the chunk's member rows go, the counts grow, and the occurrence is
 *   done when no member is left. A crash loses no member and decides none twice;
 * - an occurrence whose time had passed is recorded skipped (`skip`), with why;
 * - the admin API pages through them (`page`); an erasure deletes the contact's member rows (`eraseContact`),
 *   and an occurrence whose due members were all erased is settled (`settle`: done, or its next due time).
 */
import { listValue } from '@duckdb/node-api';
import { tsParam } from '../../../db/database.js';
import { type Keyed, type Keyset, type PageRequest, readPage } from '../../../db/paging.js';
import type { OrgStorage } from '../../../db/org-storage.js';
import type { Sql } from '../../../db/sql.js';
import { suppressedAmong } from '../../../events/compaction/tombstones.js';

export type OccurrenceStatus = 'sending' | 'done' | 'skipped';

/** What the scheduler keeps of an occurrence. */
export interface OccurrenceState {
  flowId: string;
  occurrence: string;
  status: OccurrenceStatus;
  /** The trigger_hash of its sends: the segment version it was read with. */
  segmentHash: string | null;
  /** While sending: when its next member is due (epoch ms); null when none is left. */
  nextDueAt: number | null;
}

/** A member to decide, and when it is due (epoch ms). */
export interface Member {
  email: string;
  dueAt: number;
}

/** When the occurrence's next member is due (epoch ms); with none left, it is done (null). */
async function finishIfEmpty(c: Sql, org: string, flowId: string, occurrence: string, now: number): Promise<number | null> {
  const [row] = await c.all<{ next_due: bigint | null }>(
    'SELECT epoch_ms(min(due_at)) AS next_due FROM flow_occurrence_members WHERE org = $1 AND flow_id = $2 AND occurrence = $3',
    [org, flowId, occurrence],
  );
  if (row?.next_due != null) return Number(row.next_due);
  await c.run("UPDATE flow_occurrences SET status = 'done', finished_at = $4 WHERE org = $1 AND flow_id = $2 AND occurrence = $3 AND status = 'sending'", [org, flowId, occurrence, tsParam(now)]);
  return null;
}

/** Newest occurrence first (an occurrence id sorts as its local date-time). */
export const OCCURRENCES_KEYSET: Keyset = { columns: [{ sql: 'occurrence', kind: 'text', desc: true }] };

export class OccurrenceStore {
  constructor(private readonly orgs: OrgStorage) {}

  /** The org's occurrences that are sending or started at or after `sinceMs`: what a scheduler starting now must know. */
  async recent(org: string, sinceMs: number): Promise<OccurrenceState[]> {
    const rows = await this.orgs.org(org).all<{ flow_id: string; occurrence: string; status: OccurrenceStatus; segment_hash: string | null; next_due: bigint | null }>(
      `SELECT o.flow_id, o.occurrence, o.status, o.segment_hash,
              (SELECT epoch_ms(min(m.due_at)) FROM flow_occurrence_members m
                WHERE m.org = o.org AND m.flow_id = o.flow_id AND m.occurrence = o.occurrence) AS next_due
         FROM flow_occurrences o WHERE o.org = $1 AND (o.status = 'sending' OR o.started_at >= $2)`,
      [org, tsParam(sinceMs)],
    );
    return rows.map((r) => ({ flowId: r.flow_id, occurrence: r.occurrence, status: r.status, segmentHash: r.segment_hash, nextDueAt: r.next_due === null ? null : Number(r.next_due) }));
  }

  /**
   * Starts an occurrence with its members (sorted by the caller), or records it done at once when it has
   * none to decide. False, writing nothing, when the occurrence exists already.
   */
  async start(
    org: string,
    flowId: string,
    occurrence: { id: string; dueAt: number },
    segmentHash: string,
    members: readonly Member[],
    missed: number,
    now: number,
  ): Promise<boolean> {
    return this.orgs.org(org).transaction(async (c) => {
      const suppressed = await suppressedAmong(c, members.map((m) => m.email));
      const kept = members.filter((m) => !suppressed.has(m.email));
      const status: OccurrenceStatus = kept.length > 0 ? 'sending' : 'done';
      const inserted = await c.all(
        `INSERT INTO flow_occurrences VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $12, $13, $9, $10, $11)
         ON CONFLICT DO NOTHING RETURNING 1`,
        [
          org,
          flowId,
          occurrence.id,
          tsParam(occurrence.dueAt),
          status,
          segmentHash,
          members.length + missed,
          missed,
          missed > 0 ? `${missed} members were due more than the grace before the occurrence could start, and were not sent` : null,
          tsParam(now),
          status === 'done' ? tsParam(now) : null,
          suppressed.size,
          JSON.stringify(suppressed.size > 0 ? { suppressed: suppressed.size } : {}),
        ],
      );
      if (inserted.length === 0) return false;
      await c.appendRows({ table: 'flow_occurrence_members' }, kept, (a, m) => {
        a.appendVarchar(org);
        a.appendVarchar(flowId);
        a.appendVarchar(occurrence.id);
        a.appendVarchar(m.email);
        a.appendTimestampTZ(tsParam(m.dueAt));
      });
      return true;
    });
  }

  /** An occurrence not sent at all, and why. False when it exists already. */
  async skip(org: string, flowId: string, occurrence: { id: string; dueAt: number }, reason: string, now: number): Promise<boolean> {
    const inserted = await this.orgs.org(org).all(
      `INSERT INTO flow_occurrences VALUES ($1, $2, $3, $4, 'skipped', NULL, 0, 0, 0, '{}', $5, $6, $6) ON CONFLICT DO NOTHING RETURNING 1`,
      [org, flowId, occurrence.id, tsParam(occurrence.dueAt), reason, tsParam(now)],
    );
    return inserted.length > 0;
  }

  /** At most `limit` members of a sending occurrence due by `now`, in the order they are decided (due time, e-mail). */
  async dueMembers(org: string, flowId: string, occurrence: string, now: number, limit: number): Promise<string[]> {
    const rows = await this.orgs.org(org).all<{ email: string }>(
      `SELECT email FROM flow_occurrence_members WHERE org = $1 AND flow_id = $2 AND occurrence = $3 AND due_at <= $4
        ORDER BY due_at, email LIMIT $5`,
      [org, flowId, occurrence, tsParam(now), limit],
    );
    return rows.map((r) => r.email);
  }

  /**
   * In the chunk's transaction `c`: its members are decided (their rows go) with these outcome counts. The
   * occurrence is done when none is left. Returns when its next member is due (null: done). Throws, so the
   * caller's transaction rolls back, when the members were not all still there or it is not sending: the
   * chunk was decided elsewhere.
   */
  async decided(c: Sql, org: string, flowId: string, occurrence: string, emails: readonly string[], outcomes: Record<string, number>, now: number): Promise<number | null> {
    const removed = await c.all(
      'DELETE FROM flow_occurrence_members WHERE org = $1 AND flow_id = $2 AND occurrence = $3 AND email IN (SELECT unnest($4::VARCHAR[])) RETURNING 1',
      [org, flowId, occurrence, listValue([...emails])],
    );
    const [row] = await c.all<{ status: string; outcomes: string }>('SELECT status, outcomes FROM flow_occurrences WHERE org = $1 AND flow_id = $2 AND occurrence = $3', [
      org,
      flowId,
      occurrence,
    ]);
    if (removed.length !== emails.length || row?.status !== 'sending') throw new Error(`occurrence ${flowId}/${occurrence}: the chunk was decided elsewhere`);
    const counts = JSON.parse(row.outcomes) as Record<string, number>;
    for (const [outcome, n] of Object.entries(outcomes)) counts[outcome] = (counts[outcome] ?? 0) + n;
    await c.run('UPDATE flow_occurrences SET decided = decided + $4, outcomes = $5 WHERE org = $1 AND flow_id = $2 AND occurrence = $3', [
      org,
      flowId,
      occurrence,
      emails.length,
      JSON.stringify(counts),
    ]);
    return finishIfEmpty(c, org, flowId, occurrence, now);
  }

  /**
   * A sending occurrence with no member due where one was expected (an erasure took them): when its next
   * member is due, or null, the occurrence now done, when none is left.
   */
  settle(org: string, flowId: string, occurrence: string, now: number): Promise<number | null> {
    return this.orgs.org(org).transaction((c) => finishIfEmpty(c, org, flowId, occurrence, now));
  }

  /** A page of the flow's occurrences (OCCURRENCES_KEYSET), with how far each got. */
  page(org: string, flowId: string, page: PageRequest): Promise<Array<Record<string, unknown> & Keyed>> {
    return readPage<Record<string, unknown>>(
      this.orgs.org(org),
      {
        select: `occurrence, status, due_at AS "dueAt", members, missed, decided, outcomes, reason, segment_hash AS "segmentHash",
                 started_at AS "startedAt", finished_at AS "finishedAt",
                 (SELECT min(m.due_at) FROM flow_occurrence_members m
                   WHERE m.org = flow_occurrences.org AND m.flow_id = flow_occurrences.flow_id AND m.occurrence = flow_occurrences.occurrence) AS "nextDueAt"`,
        from: 'flow_occurrences',
        where: 'org = $1 AND flow_id = $2',
        params: [org, flowId],
        keyset: OCCURRENCES_KEYSET,
      },
      page,
    );
  }

  /**
   * An archived flow's occurrence under way stops: skipped, with why, its members left undecided, in the
   * archive's transaction (FlowStore.archive). Occurrences that ended stay as they ended.
   */
  static async stopFlow(c: Sql, flowId: string, now: number): Promise<number> {
    await c.run('DELETE FROM flow_occurrence_members WHERE flow_id = $1', [flowId]);
    const stopped = await c.all(
      "UPDATE flow_occurrences SET status = 'skipped', reason = 'the flow was archived while it was sending', finished_at = $2 WHERE flow_id = $1 AND status = 'sending' RETURNING 1",
      [flowId, tsParam(now)],
    );
    return stopped.length;
  }

  /** An erased contact is decided in no occurrence still to come, in the erasure's transaction (privacy/erasure.ts). */
  static async eraseContact(c: Sql, email: string): Promise<number> {
    return (await c.all('DELETE FROM flow_occurrence_members WHERE email = $1 RETURNING 1', [email])).length;
  }
}
