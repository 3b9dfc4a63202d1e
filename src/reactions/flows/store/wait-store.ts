/**
 * Entries of flows with steps (flow_waits, pipelines/storage.sql): every read and write of the table goes
 * through here. A row is one entry still in its steps; it is written in the run's transaction that
 * decided the entry (`enter`), moved on or deleted in the transaction that records what its steps did
 * (`replace`, run/step-entries.ts), and deleted with its contact (`eraseContact`).
 * Nothing is held in memory per entry: what is due is read by due_at, what an arrived event ends is
 * found by a join with the events table.
 */
import { listValue } from '@duckdb/node-api';
import { microsParam, tsParam } from '../../../db/database.js';
import type { Sql } from '../../../db/sql.js';
import type { OrgStorage } from '../../../db/org-storage.js';
import type { EnteredSteps, EntryData } from '../rules/decision.js';

/** One entry in its steps. Times are epoch ms; `since` and `enteredSince` are visible_at marks (µs). */
export interface WaitRow {
  entryId: string;
  flowId: string;
  email: string;
  eventId: string;
  variant: string | null;
  triggerHash: string;
  /** The step the entry is at. */
  step: number;
  /** true: step `step` is a wait ending at dueAt; false: step `step` runs at dueAt. */
  waiting: boolean;
  /** While waiting in a waitUntil: the event (or trigger) that ends it early. */
  untilEvent: string | null;
  since: bigint;
  enteredSince: bigint;
  enteredEventTime: number;
  /** How the last waitUntil ended. */
  lastWait: 'event' | 'timeout' | null;
  dueAt: number;
  enteredAt: number;
  data: EntryData;
}

/** Entries a trigger's rows may move on: those waiting on it (`until`), or every entry of a flow whose exit it is. */
export type MatchTarget = { kind: 'until'; event: string } | { kind: 'exit'; flowId: string; event: string };

/** An entry that an arrived event moves on: its waitUntil event (`until`), or its flow's exit event. */
export interface Arrival {
  entryId: string;
  kind: 'until' | 'exit';
  event: string;
}

const COLUMNS = `entry_id, flow_id, email, event_id, variant, trigger_hash, step, waiting, until_event, epoch_us(since) AS since,
  epoch_us(entered_since) AS entered_since, epoch_ms(entered_event_time) AS entered_event_time, last_wait, epoch_ms(due_at) AS due_at,
  epoch_ms(entered_at) AS entered_at, data`;

interface StoredRow {
  entry_id: string;
  flow_id: string;
  email: string;
  event_id: string;
  variant: string | null;
  trigger_hash: string;
  step: number;
  waiting: boolean;
  until_event: string | null;
  since: bigint;
  entered_since: bigint;
  entered_event_time: bigint;
  last_wait: 'event' | 'timeout' | null;
  due_at: bigint;
  entered_at: bigint;
  data: string;
}

export class WaitStore {
  constructor(private readonly orgs: OrgStorage) {}

  /** Entries a run decided, at their first step and due now, in the run's transaction `c`. */
  async enter(c: Sql, org: string, flowId: string, triggerHash: string, entries: readonly EnteredSteps[], since: bigint, now: number): Promise<void> {
    const rows = entries.map(
      (e): WaitRow => ({
        entryId: e.sendId,
        flowId,
        email: e.email,
        eventId: e.eventId,
        variant: e.variant,
        triggerHash,
        step: 0,
        waiting: false,
        untilEvent: null,
        since,
        enteredSince: since,
        enteredEventTime: e.eventAt,
        lastWait: null,
        dueAt: now,
        enteredAt: now,
        data: e.data,
      }),
    );
    await append(c, org, rows);
  }

  /**
   * The entries of these flows named (an event moved them on), and those due by `now`, at most `limit` of
   * these (the oldest due first): what one pass of run/step-entries.ts moves on.
   */
  async due(org: string, flowIds: readonly string[], now: number, named: readonly string[], limit: number): Promise<WaitRow[]> {
    if (flowIds.length === 0) return [];
    const db = this.orgs.org(org);
    const byName = named.length === 0 ? [] : await db.all<StoredRow>(`SELECT ${COLUMNS} FROM flow_waits WHERE org = $1 AND flow_id IN (SELECT unnest($2::VARCHAR[])) AND entry_id IN (SELECT unnest($3::VARCHAR[]))`, [org, texts(flowIds), texts(named)]);
    const due = await db.all<StoredRow>(
      `SELECT ${COLUMNS} FROM flow_waits WHERE org = $1 AND flow_id IN (SELECT unnest($2::VARCHAR[])) AND due_at <= $3 AND entry_id NOT IN (SELECT unnest($4::VARCHAR[]))
        ORDER BY due_at, entry_id LIMIT $5`,
      [org, texts(flowIds), tsParam(now), texts(named), limit],
    );
    return [...byName, ...due].map(fromStored);
  }

  /**
   * Entries that an event stored in (their mark, `end`] moves on: the contact's waitUntil event, or the
   * exit event of their flow (`exits`), stored after the wait (or the entry) began and happened no
   * earlier than the entry's event. `after`: every entry's mark is at or below it and events up to it
   * were looked at already, so only events stored after it are read (a pass's usual case); null: all.
   * Events named by a trigger are matched by run/step-entries.ts instead.
   */
  async arrivals(org: string, end: bigint, exits: ReadonlyArray<{ flowId: string; event: string }>, after: bigint | null, limit: number): Promise<Arrival[]> {
    const events =
      after === null
        ? "SELECT email, event_name, visible_at, event_time FROM events WHERE environment = 'production' AND visible_at <= $2"
        : `SELECT email, event_name, max(visible_at) AS visible_at, max(event_time) AS event_time FROM events
            WHERE environment = 'production' AND visible_at > $6 AND visible_at <= $2 GROUP BY email, event_name`;
    const rows = await this.orgs.org(org).all<{ entry_id: string; kind: 'until' | 'exit'; event: string }>(
      `WITH e AS (${events})
       SELECT DISTINCT w.entry_id, 'exit' AS kind, x.event FROM flow_waits w
         JOIN (SELECT unnest($3::VARCHAR[]) AS flow_id, unnest($4::VARCHAR[]) AS event) x ON x.flow_id = w.flow_id
         JOIN e ON e.email = w.email AND e.event_name = x.event
        WHERE w.org = $1 AND e.visible_at > w.entered_since AND e.event_time >= w.entered_event_time
       UNION
       SELECT DISTINCT w.entry_id, 'until', w.until_event FROM flow_waits w
         JOIN e ON e.email = w.email AND e.event_name = w.until_event
        WHERE w.org = $1 AND w.waiting AND e.visible_at > w.since AND e.event_time >= w.entered_event_time
       LIMIT $5`,
      [org, microsParam(end), texts(exits.map((x) => x.flowId)), texts(exits.map((x) => x.event)), limit, ...(after === null ? [] : [microsParam(after)])],
    );
    return rows.map((r) => ({ entryId: r.entry_id, kind: r.kind, event: r.event }));
  }

  /**
   * Of these candidates (entries in memory, with the event each waits for and its marks), the ones an event
   * stored in (mark, `end`] of the contact, happening no earlier than `eventTime`, moves on: for entries a
   * run wrote with a mark below what passes looked at already.
   */
  async arrivalsOf(org: string, end: bigint, candidates: ReadonlyArray<Arrival & { email: string; mark: bigint; eventTime: number }>): Promise<Arrival[]> {
    if (candidates.length === 0) return [];
    const rows = await this.orgs.org(org).all<{ entry_id: string; kind: 'until' | 'exit'; event: string }>(
      `SELECT c.entry_id, c.kind, c.event
         FROM (SELECT unnest($2::VARCHAR[]) AS entry_id, unnest($3::VARCHAR[]) AS kind, unnest($4::VARCHAR[]) AS event, unnest($5::VARCHAR[]) AS email,
                      make_timestamptz(unnest($6::BIGINT[])) AS mark, make_timestamptz(unnest($7::BIGINT[]) * 1000) AS event_time) c
        WHERE EXISTS (SELECT 1 FROM events e WHERE e.email = c.email AND e.event_name = c.event AND e.environment = 'production'
                         AND e.visible_at > c.mark AND e.visible_at <= $1 AND e.event_time >= c.event_time)`,
      [
        microsParam(end),
        texts(candidates.map((c) => c.entryId)),
        texts(candidates.map((c) => c.kind)),
        texts(candidates.map((c) => c.event)),
        texts(candidates.map((c) => c.email)),
        listValue(candidates.map((c) => c.mark)),
        listValue(candidates.map((c) => BigInt(c.eventTime))),
      ],
    );
    return rows.map((r) => ({ entryId: r.entry_id, kind: r.kind, event: r.event }));
  }

  /** The oldest mark (µs) of the entries `target` names, or null when there are none. */
  async oldestMark(org: string, target: MatchTarget): Promise<bigint | null> {
    const [row] = await this.orgs.org(org).all<{ mark: bigint | null }>(
      target.kind === 'until'
        ? 'SELECT epoch_us(min(since)) AS mark FROM flow_waits WHERE org = $1 AND waiting AND until_event = $2'
        : 'SELECT epoch_us(min(entered_since)) AS mark FROM flow_waits WHERE org = $1 AND flow_id = $2',
      [org, target.kind === 'until' ? target.event : target.flowId],
    );
    return row?.mark ?? null;
  }

  /** Entries `target` names that one of `rows` (a trigger's, with ts in epoch ms) comes after, for the same contact. */
  async matchRows(org: string, target: MatchTarget, rows: ReadonlyArray<{ email: string; ts: number }>): Promise<Arrival[]> {
    if (rows.length === 0) return [];
    const found = await this.orgs.org(org).all<{ entry_id: string }>(
      `SELECT DISTINCT w.entry_id FROM flow_waits w
         JOIN (SELECT unnest($3::VARCHAR[]) AS email, make_timestamptz(unnest($4::BIGINT[]) * 1000) AS ts) r ON r.email = w.email
        WHERE w.org = $1 AND ${target.kind === 'until' ? 'w.waiting AND w.until_event = $2 AND r.ts > w.since' : 'w.flow_id = $2 AND r.ts > w.entered_since'}`,
      [org, target.kind === 'until' ? target.event : target.flowId, texts(rows.map((r) => r.email)), listValue(rows.map((r) => BigInt(r.ts)))],
    );
    return found.map((f) => ({ entryId: f.entry_id, kind: target.kind, event: target.event }));
  }

  /** The entries' new state (`kept`) and the ended ones (`removed`), in the pass's transaction `c`. */
  async replace(c: Sql, org: string, removed: readonly string[], kept: readonly WaitRow[]): Promise<void> {
    const ids = [...removed, ...kept.map((k) => k.entryId)];
    if (ids.length === 0) return;
    await c.run('DELETE FROM flow_waits WHERE org = $1 AND entry_id IN (SELECT unnest($2::VARCHAR[]))', [org, texts(ids)]);
    await append(c, org, kept);
  }

  /** When the org's next entry of these flows is due (epoch ms), or null when none is in its steps. */
  async nextDue(org: string, flowIds: readonly string[]): Promise<number | null> {
    if (flowIds.length === 0) return null;
    const [row] = await this.orgs.org(org).all<{ due: bigint | null }>(
      'SELECT epoch_ms(min(due_at)) AS due FROM flow_waits WHERE org = $1 AND flow_id IN (SELECT unnest($2::VARCHAR[]))',
      [org, texts(flowIds)],
    );
    return row?.due == null ? null : Number(row.due);
  }

  /** Whether any entry of these flows waits for an event (the pass then looks at arrived events). */
  async anyWaitingOnEvents(org: string, flowIdsWithExit: readonly string[]): Promise<boolean> {
    const [row] = await this.orgs.org(org).all<{ n: bigint }>(
      `SELECT count(*) AS n FROM (SELECT 1 FROM flow_waits WHERE org = $1 AND ((waiting AND until_event IS NOT NULL) OR flow_id IN (SELECT unnest($2::VARCHAR[]))) LIMIT 1)`,
      [org, texts(flowIdsWithExit)],
    );
    return (row?.n ?? 0n) > 0n;
  }

  /** A flow's entries in their steps (of one contact, when `email`), oldest entry first, at most `limit`. */
  async list(org: string, flowId: string, email: string | null, limit: number): Promise<{ entries: WaitRow[]; total: number }> {
    const db = this.orgs.org(org);
    const params = [org, flowId, email];
    const where = 'org = $1 AND flow_id = $2 AND ($3::VARCHAR IS NULL OR email = $3)';
    const rows = await db.all<StoredRow>(`SELECT ${COLUMNS} FROM flow_waits WHERE ${where} ORDER BY entered_at, entry_id LIMIT ${Math.trunc(limit)}`, params);
    const [count] = await db.all<{ n: bigint }>(`SELECT count(*) AS n FROM flow_waits WHERE ${where}`, params);
    return { entries: rows.map(fromStored), total: Number(count?.n ?? 0n) };
  }

  /** An archived flow's entries leave its steps, in the archive's transaction (FlowStore.archive). */
  static async removeFlow(c: Sql, flowId: string): Promise<number> {
    return (await c.all('DELETE FROM flow_waits WHERE flow_id = $1 RETURNING 1', [flowId])).length;
  }

  /** An erased contact's entries go, in the erasure's transaction (privacy/erasure.ts). */
  static async eraseContact(c: Sql, email: string): Promise<number> {
    return (await c.all('DELETE FROM flow_waits WHERE email = $1 RETURNING 1', [email])).length;
  }
}

/** A VARCHAR[] parameter: DuckDB cannot type an empty list, so none is [''] ('' is no id, flow or event name). */
function texts(items: readonly string[]) {
  return listValue(items.length > 0 ? [...items] : ['']);
}

async function append(c: Sql, org: string, rows: readonly WaitRow[]): Promise<void> {
  await c.appendRows({ table: 'flow_waits' }, rows, (a, r) => {
    a.appendVarchar(r.entryId);
    a.appendVarchar(org);
    a.appendVarchar(r.flowId);
    a.appendVarchar(r.email);
    a.appendVarchar(r.eventId);
    if (r.variant === null) a.appendNull();
    else a.appendVarchar(r.variant);
    a.appendVarchar(r.triggerHash);
    a.appendInteger(r.step);
    a.appendBoolean(r.waiting);
    if (r.untilEvent === null) a.appendNull();
    else a.appendVarchar(r.untilEvent);
    a.appendTimestampTZ(microsParam(r.since));
    a.appendTimestampTZ(microsParam(r.enteredSince));
    a.appendTimestampTZ(tsParam(r.enteredEventTime));
    if (r.lastWait === null) a.appendNull();
    else a.appendVarchar(r.lastWait);
    a.appendTimestampTZ(tsParam(r.dueAt));
    a.appendTimestampTZ(tsParam(r.enteredAt));
    a.appendVarchar(JSON.stringify(r.data));
  });
}

function fromStored(r: StoredRow): WaitRow {
  return {
    entryId: r.entry_id,
    flowId: r.flow_id,
    email: r.email,
    eventId: r.event_id,
    variant: r.variant,
    triggerHash: r.trigger_hash,
    step: r.step,
    waiting: r.waiting,
    untilEvent: r.until_event,
    since: r.since,
    enteredSince: r.entered_since,
    enteredEventTime: Number(r.entered_event_time),
    lastWait: r.last_wait,
    dueAt: Number(r.due_at),
    enteredAt: Number(r.entered_at),
    data: JSON.parse(r.data) as EntryData,
  };
}
