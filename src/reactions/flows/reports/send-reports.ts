/**
 * What the admin API reads of the outbox (flow_sends) and the decision log (flow_decisions): pages of
 * both, the delivery of sends, a flow's entries per variant for its results (flow-results.ts), its sends
 * and decisions over time (flow-activity.ts). Reads only: the tables'
 * one writer is store/send-store.ts.
 */
import { listValue } from '@duckdb/node-api';
import { tsParam } from '../../../db/database.js';
import { type Keyed, type Keyset, type PageRequest, readPage } from '../../../db/paging.js';
import type { OrgStorage } from '../../../db/org-storage.js';

/** A stored decision, as the admin API reads it. */
export interface DecisionRow {
  event_id: string | null;
  identity: string | null;
  identity_type: string | null;
  email: string | null;
  outcome: string;
  variant: string | null;
  send_id: string | null;
  reason: string | null;
  trigger_hash: string;
  decided_at: Date;
}

/** One variant's contacts on one UTC day: entered (first entry) and converted (first goal event) that day. */
export interface ResultsDay {
  variant: string | null;
  /** The day's start, epoch ms (UTC). */
  day: number;
  holdout: boolean;
  entered: number;
  sent: number;
  converted: number;
  /** The earliest first entry counted this day; null when the day has only conversions. */
  firstEntryMs: number | null;
}

/** What SendReports.activity reads. */
export interface FlowActivityRows {
  sends: Array<{ status: string; bucket: bigint; n: bigint }>;
  decisions: Array<{ outcome: string; atStep: boolean; n: number }>;
}

/** Where a send is in its delivery. */
export interface SendDelivery {
  send_id: string;
  status: string;
  attempts: number;
  last_error: string | null;
}

/** Newest first; send_id is the table's key. */
export const SENDS_KEYSET: Keyset = {
  columns: [
    { sql: 'created_at', kind: 'micros', desc: true },
    { sql: 'send_id', kind: 'text', desc: false },
  ],
  rowid: 'rowid',
};

/** Newest run first, its rows by event id; a trigger returning one row twice makes identical decisions. */
export const DECISIONS_KEYSET: Keyset = {
  columns: [
    { sql: 'decided_at', kind: 'micros', desc: true },
    { sql: "coalesce(event_id, '')", kind: 'text', desc: false },
  ],
  rowid: 'rowid',
};

export class SendReports {
  constructor(private readonly orgs: OrgStorage) {}

  /**
   * A flow's entries per variant and UTC day, for its results (flow-results.ts): contacts the flow entered
   * (a flow_sends row: sent, holdout or deferred; a capped entry has none) between `fromMs` (inclusive) and
   * `toMs` (exclusive; null: no bound), counted once per variant on the day of their first entry; `sent` those with a
   * delivered send; with a goal, `converted` on the day of their first goal event (production) at or
   * after one of their entries and at most `withinSeconds` later. One statement, so one snapshot.
   */
  async resultsByDay(org: string, flowId: string, goal: { event: string; withinSeconds: number } | null, fromMs: number | null, toMs: number | null): Promise<ResultsDay[]> {
    const rows = await this.orgs.org(org).all<{ variant: string | null; day: bigint; holdout: boolean; entered: bigint; sent: bigint; converted: bigint; first_ms: bigint }>(
      `WITH entries AS (
         SELECT email, variant, status, created_at FROM flow_sends
          WHERE org = $1 AND flow_id = $2 AND ($3::TIMESTAMPTZ IS NULL OR created_at >= $3) AND ($4::TIMESTAMPTZ IS NULL OR created_at < $4)
       ),
       conversions AS (
         SELECT e.variant, e.email, min(g.event_time) AS converted_at
           FROM entries e JOIN events g ON g.email = e.email
          WHERE $5::VARCHAR IS NOT NULL AND g.event_name = $5 AND g.environment = 'production'
            AND g.event_time >= e.created_at AND g.event_time <= e.created_at + to_seconds($6::BIGINT)
          GROUP BY e.variant, e.email
       ),
       contacts AS (
         SELECT c.variant, c.email, c.first_entry, c.sent, c.holdout, v.converted_at
           FROM (SELECT variant, email, min(created_at) AS first_entry, bool_or(status = 'delivered') AS sent, bool_or(status = 'holdout') AS holdout
                   FROM entries GROUP BY variant, email) c
           LEFT JOIN conversions v ON v.variant IS NOT DISTINCT FROM c.variant AND v.email = c.email
       ),
       days AS (
         SELECT variant, epoch_ms(first_entry) // 86400000 AS day, holdout, 1 AS entered, sent::INTEGER AS sent, 0 AS converted, epoch_ms(first_entry) AS first_ms FROM contacts
         UNION ALL
         SELECT variant, epoch_ms(converted_at) // 86400000, holdout, 0, 0, 1, NULL FROM contacts WHERE converted_at IS NOT NULL
       )
       SELECT variant, day, bool_or(holdout) AS holdout, sum(entered) AS entered, sum(sent) AS sent, sum(converted) AS converted, min(first_ms) AS first_ms
         FROM days GROUP BY variant, day ORDER BY day, variant NULLS FIRST`,
      [org, flowId, fromMs === null ? null : tsParam(fromMs), toMs === null ? null : tsParam(toMs), goal?.event ?? null, goal?.withinSeconds ?? 0],
    );
    return rows.map((r) => ({
      variant: r.variant,
      day: Number(r.day) * 86_400_000,
      holdout: r.holdout,
      entered: Number(r.entered),
      sent: Number(r.sent),
      converted: Number(r.converted),
      firstEntryMs: r.first_ms === null ? null : Number(r.first_ms),
    }));
  }

  /**
   * A flow's rows made in `[fromMs, toMs)`, for its activity (flow-activity.ts): outbox rows per status and
   * bucket of `bucketMs` (entries of a flow with steps, status entered, are not sends), and decisions per
   * outcome. A decision of a step (run/step-entries.ts: event id `<entry's event id>#<step>`, for an entry the
   * flow has) is told apart from a trigger row's, so a trigger row counts once however many steps it ran.
   */
  async activity(org: string, flowId: string, fromMs: number, toMs: number, bucketMs: number): Promise<FlowActivityRows> {
    const range = [org, flowId, tsParam(fromMs), tsParam(toMs)];
    const db = this.orgs.org(org);
    const [sends, decisions] = await Promise.all([
      db.all<{ status: string; bucket: bigint; n: bigint }>(
        `SELECT status, epoch_ms(created_at) // $5 AS bucket, count(*) AS n FROM flow_sends
          WHERE org = $1 AND flow_id = $2 AND created_at >= $3 AND created_at < $4 AND status <> 'entered' GROUP BY ALL`,
        [...range, BigInt(bucketMs)],
      ),
      db.all<{ outcome: string; at_step: boolean; n: bigint }>(
        `WITH d AS (SELECT email, event_id, outcome FROM flow_decisions WHERE org = $1 AND flow_id = $2 AND decided_at >= $3 AND decided_at < $4),
              entries AS (SELECT email, event_id FROM flow_sends WHERE org = $1 AND flow_id = $2 AND status = 'entered')
         SELECT d.outcome, e.event_id IS NOT NULL AS at_step, count(*) AS n
           FROM d LEFT JOIN entries e ON e.email = d.email AND regexp_matches(d.event_id, '#[0-9]+$') AND e.event_id = regexp_replace(d.event_id, '#[0-9]+$', '')
          GROUP BY ALL`,
        range,
      ),
    ]);
    return {
      sends: sends.map((r) => ({ status: r.status, bucket: r.bucket, n: r.n })),
      decisions: decisions.map((r) => ({ outcome: r.outcome, atStep: r.at_step, n: Number(r.n) })),
    };
  }

  /** A page of the flow's sends (SENDS_KEYSET), of one contact and/or one status when given. */
  sendsPage(org: string, flowId: string, filter: { email: string | null; status: string | null }, page: PageRequest): Promise<Array<Record<string, unknown> & Keyed>> {
    return readPage<Record<string, unknown>>(
      this.orgs.org(org),
      {
        select: `send_id AS "sendId", email, event_id AS "eventId", variant, channel, status, attempts,
                 last_error AS "lastError", trigger_hash AS "triggerHash", created_at AS "createdAt", sent_at AS "sentAt", due_at AS "dueAt"`,
        from: 'flow_sends',
        where: 'org = $1 AND flow_id = $2 AND ($3::VARCHAR IS NULL OR email = $3) AND ($4::VARCHAR IS NULL OR status = $4)',
        params: [org, flowId, filter.email, filter.status],
        keyset: SENDS_KEYSET,
      },
      page,
    );
  }

  /** A page of the flow's decisions (DECISIONS_KEYSET), of one contact (by e-mail or raw identity) when given. */
  decisionsPage(org: string, flowId: string, filter: { email: string | null; identity: string | null }, page: PageRequest): Promise<Array<DecisionRow & Keyed>> {
    return readPage<DecisionRow>(
      this.orgs.org(org),
      {
        select: 'event_id, identity, identity_type, email, outcome, variant, send_id, reason, trigger_hash, decided_at',
        from: 'flow_decisions',
        // A suppressed contact's decisions are found by its e-mail too, through the hash they keep.
        where: "org = $1 AND flow_id = $2 AND ($3::VARCHAR IS NULL OR email = $3 OR identity = $4 OR (identity_type = 'email-hash' AND identity = sha256($3)))",
        params: [org, flowId, filter.email, filter.identity],
        keyset: DECISIONS_KEYSET,
      },
      page,
    );
  }

  /**
   * The delivery of these sends only: joined in the decisions query, DuckDB compared every decision with
   * every send (a nested loop join: 10,000 of each took 2 s).
   */
  async deliveries(org: string, sendIds: string[]): Promise<Map<string, SendDelivery>> {
    const deliveries = new Map<string, SendDelivery>();
    if (sendIds.length === 0) return deliveries;
    const sends = await this.orgs
      .org(org)
      .all<SendDelivery>('SELECT send_id, status, attempts, last_error FROM flow_sends WHERE send_id IN (SELECT unnest($1::VARCHAR[]))', [listValue(sendIds)]);
    for (const send of sends) deliveries.set(send.send_id, send);
    return deliveries;
  }
}
