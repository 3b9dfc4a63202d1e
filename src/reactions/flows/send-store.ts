/**
 * The outbox (flow_sends) and the decision log (flow_decisions) of flows: every read and write of the two
 * tables goes through here, their retention sweeps included (`sendSweeps`, run by src/roles/retention.ts).
 * Who calls what, and in which transaction:
 * - a run writes its decisions and outbox rows (`record`) in the transaction that advances its cursor
 *   (FlowStore.advance), so a window's rows are written once or not at all;
 * - the dispatcher reads what is pending at start (`pending`) and writes how each send ended
 *   (`recordOutcomes`, batched by send-outcomes.ts);
 * - the admin API pages through both (`sendsPage`, `decisionsPage`, `deliveries`), counts a flow's
 *   entries per variant for its results (`resultsByDay`) and its sends and decisions over time (`activity`);
 * - an erasure deletes a contact's rows of both (`eraseContact`).
 */
import { listValue } from '@duckdb/node-api';
import type { ChannelName, DeliveryResult, RenderedMessage } from '../channels/types.js';
import { tsParam } from '../../db/database.js';
import { type Keyed, type Keyset, type PageRequest, readPage } from '../../db/paging.js';
import type { Sql } from '../../db/sql.js';
import type { Sweep } from '../../db/sweep.js';
import type { OrgStorage } from '../../db/org-storage.js';
import { type Deferred, type EnteredSteps, type Holdout, type RenderedDecision, type Sent, sendKey } from './decide.js';
import type { PastSend } from './frequency-caps.js';

/** An outbox row to deliver. */
export interface PendingSend {
  sendId: string;
  org: string;
  flowId: string;
  email: string;
  eventId: string;
  variant: string | null;
  message: RenderedMessage;
}

/** What a step of an entry came to (flow-steps.ts): the entry's exit, or why its message step sent nothing. */
export interface StepDecision {
  flowId: string;
  triggerHash: string;
  email: string;
  /** `<entry event id>#<step>`. */
  eventId: string;
  outcome: string;
  reason: string | null;
  variant: string | null;
  sendId: string | null;
}

/** How one send ended. */
export interface SendOutcome {
  sendId: string;
  email: string;
  result: DeliveryResult;
  /** When it ended (epoch ms): sent_at of a delivered send. */
  at: number;
}

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

/** What SendStore.activity reads. */
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

export class SendStore {
  constructor(private readonly orgs: OrgStorage) {}

  /** The send keys (`email \0 eventId`) the flow already has among these events. */
  async usedKeys(org: string, flowId: string, eventIds: string[]): Promise<Set<string>> {
    if (eventIds.length === 0) return new Set();
    const used = await this.orgs.org(org).all<{ email: string; event_id: string }>(
      'SELECT email, event_id FROM flow_sends WHERE org = $1 AND flow_id = $2 AND event_id IN (SELECT unnest($3::VARCHAR[]))',
      [org, flowId, listValue(eventIds)],
    );
    return new Set(used.map((u) => sendKey(u.email, u.event_id)));
  }

  /** usedKeys of one event id among these contacts only (a scheduled occurrence: one id, up to millions of contacts). */
  async usedKeysAmong(org: string, flowId: string, eventId: string, emails: string[]): Promise<Set<string>> {
    if (emails.length === 0) return new Set();
    const used = await this.orgs.org(org).all<{ email: string }>(
      'SELECT email FROM flow_sends WHERE org = $1 AND flow_id = $2 AND event_id = $3 AND email IN (SELECT unnest($4::VARCHAR[]))',
      [org, flowId, eventId, listValue(emails)],
    );
    return new Set(used.map((u) => sendKey(u.email, eventId)));
  }

  /** Per contact, when the flow last entered them (epoch ms). */
  async lastEntries(org: string, flowId: string, emails: string[]): Promise<Map<string, number>> {
    if (emails.length === 0) return new Map();
    const last = await this.orgs.org(org).all<{ email: string; last_ms: bigint }>(
      'SELECT email, epoch_ms(max(created_at)) AS last_ms FROM flow_sends WHERE org = $1 AND flow_id = $2 AND email IN (SELECT unnest($3::VARCHAR[])) GROUP BY email',
      [org, flowId, listValue(emails)],
    );
    return new Map(last.map((l) => [l.email, Number(l.last_ms)]));
  }

  /**
   * Per contact, the sends the frequency caps count (pending or delivered, a channel) decided after
   * `sinceMs`, of every flow of the org.
   */
  /**
   * The sends caps count, per contact, decided after `sinceMs`: pending and delivered, and (`deferred`:
   * when deciding) the ones waiting for quiet hours to end, which will be sent then.
   */
  async recentSends(org: string, emails: string[], sinceMs: number, statuses: readonly string[] = ['pending', 'delivered', 'deferred']): Promise<Map<string, PastSend[]>> {
    const sends = new Map<string, PastSend[]>();
    if (emails.length === 0) return sends;
    const rows = await this.orgs.org(org).all<{ email: string; flow_id: string; channel: ChannelName; transactional: boolean; at: bigint }>(
      `SELECT email, flow_id, channel, transactional, epoch_ms(created_at) AS at FROM flow_sends
        WHERE org = $1 AND email IN (SELECT unnest($2::VARCHAR[])) AND created_at > $3
          AND status IN (SELECT unnest($4::VARCHAR[])) AND channel IS NOT NULL`,
      [org, listValue(emails), tsParam(sinceMs), listValue([...statuses])],
    );
    for (const r of rows) {
      const send: PastSend = { flowId: r.flow_id, channel: r.channel, transactional: r.transactional, at: Number(r.at) };
      const past = sends.get(r.email);
      if (past) past.push(send);
      else sends.set(r.email, [send]);
    }
    return sends;
  }

  /** A run's decisions and outbox rows (sent → pending, holdout → recorded), in the run's transaction `c`. */
  async record(c: Sql, org: string, flow: { id: string; transactional: boolean }, triggerHash: string, decisions: readonly RenderedDecision[], now: number): Promise<void> {
    const flowId = flow.id;
    const at = tsParam(now);
    await c.appendRows({ table: 'flow_decisions' }, decisions, (a, d) => {
      a.appendVarchar(org);
      a.appendVarchar(flowId);
      appendNullable(a, d.email);
      appendNullable(a, d.identity);
      appendNullable(a, d.identityType);
      appendNullable(a, d.eventId);
      a.appendVarchar(d.outcome);
      appendNullable(a, d.variant);
      appendNullable(a, d.sendId);
      a.appendVarchar(triggerHash);
      appendNullable(a, d.reason);
      a.appendTimestampTZ(at);
    });
    const entered = decisions.filter(
      (d): d is Sent | Holdout | Deferred | EnteredSteps => d.outcome === 'sent' || d.outcome === 'holdout' || d.outcome === 'deferred_quiet_hours' || d.outcome === 'entered',
    );
    await c.appendRows({ table: 'flow_sends' }, entered, (a, d) => {
      const message = d.outcome === 'holdout' || d.outcome === 'entered' ? null : d.message;
      a.appendVarchar(d.sendId);
      a.appendVarchar(org);
      a.appendVarchar(flowId);
      a.appendVarchar(d.email);
      a.appendVarchar(d.eventId);
      appendNullable(a, d.variant);
      appendNullable(a, message?.channel ?? null);
      appendNullable(a, message ? JSON.stringify(message) : null);
      a.appendVarchar(triggerHash);
      a.appendVarchar(d.outcome === 'sent' ? 'pending' : d.outcome === 'deferred_quiet_hours' ? 'deferred' : d.outcome);
      a.appendInteger(0);
      a.appendNull();
      a.appendTimestampTZ(at);
      a.appendNull();
      a.appendBoolean(flow.transactional);
      if (d.outcome === 'deferred_quiet_hours') a.appendTimestampTZ(tsParam(d.dueAt));
      else a.appendNull();
    });
  }

  /** Decision rows of steps that sent nothing (flow-steps.ts), in the pass's transaction `c`. */
  async recordStepDecisions(c: Sql, org: string, decisions: readonly StepDecision[], now: number): Promise<void> {
    const at = tsParam(now);
    await c.appendRows({ table: 'flow_decisions' }, decisions, (a, d) => {
      a.appendVarchar(org);
      a.appendVarchar(d.flowId);
      a.appendVarchar(d.email);
      a.appendVarchar(d.email);
      a.appendVarchar('email');
      a.appendVarchar(d.eventId);
      a.appendVarchar(d.outcome);
      appendNullable(a, d.variant);
      appendNullable(a, d.sendId);
      a.appendVarchar(d.triggerHash);
      appendNullable(a, d.reason);
      a.appendTimestampTZ(at);
    });
  }

  /** Deferred sends of the org due by `now` (their quiet hours over), oldest first. */
  async dueDeferred(org: string, now: number): Promise<Array<PendingSend & { transactional: boolean }>> {
    const rows = await this.orgs.org(org).all<{ send_id: string; flow_id: string; email: string; event_id: string; variant: string | null; content: string; transactional: boolean }>(
      "SELECT send_id, flow_id, email, event_id, variant, content, transactional FROM flow_sends WHERE status = 'deferred' AND due_at <= $1 ORDER BY due_at, send_id",
      [tsParam(now)],
    );
    return rows.map((r) => ({ sendId: r.send_id, org, flowId: r.flow_id, email: r.email, eventId: r.event_id, variant: r.variant, message: JSON.parse(r.content) as RenderedMessage, transactional: r.transactional }));
  }

  /** When the org's next deferred send is due (epoch ms), or null when none waits. */
  async nextDeferred(org: string): Promise<number | null> {
    const [row] = await this.orgs.org(org).all<{ due: bigint | null }>("SELECT epoch_ms(min(due_at)) AS due FROM flow_sends WHERE status = 'deferred'");
    return row?.due == null ? null : Number(row.due);
  }

  /**
   * Deferred sends at the end of their quiet hours, in one transaction: each becomes pending (to send) or
   * cancelled (with why), and gets a decision row saying so. Only rows still deferred change, so a
   * release repeated after a crash changes nothing twice. Returns the send ids that became pending.
   */
  async releaseDeferred(org: string, released: ReadonlyArray<{ sendId: string; outcome: string; reason: string | null }>, now: number): Promise<Set<string>> {
    if (released.length === 0) return new Set();
    const params = [listValue(released.map((r) => r.sendId)), listValue(released.map((r) => r.outcome)), listValue(released.map((r) => r.reason)), tsParam(now)];
    const changed = await this.orgs.org(org).transaction(async (c) => {
      const rows = await c.all<{ send_id: string; status: string }>(
        `UPDATE flow_sends AS s SET status = CASE WHEN u.outcome = 'sent' THEN 'pending' ELSE 'cancelled' END, last_error = u.reason
           FROM (SELECT unnest($1::VARCHAR[]) AS send_id, unnest($2::VARCHAR[]) AS outcome, unnest($3::VARCHAR[]) AS reason) AS u
          WHERE s.send_id = u.send_id AND s.status = 'deferred'
          RETURNING s.send_id, s.status`,
        params.slice(0, 3),
      );
      await c.run(
        `INSERT INTO flow_decisions
         SELECT s.org, s.flow_id, s.email, s.email, 'email', s.event_id, u.outcome, s.variant, s.send_id, s.trigger_hash, u.reason, $4
           FROM flow_sends s JOIN (SELECT unnest($1::VARCHAR[]) AS send_id, unnest($2::VARCHAR[]) AS outcome, unnest($3::VARCHAR[]) AS reason) AS u
             ON s.send_id = u.send_id
          WHERE s.send_id IN (SELECT unnest($5::VARCHAR[]))`,
        [...params, listValue(rows.map((r) => r.send_id))],
      );
      return rows;
    });
    return new Set(changed.filter((r) => r.status === 'pending').map((r) => r.send_id));
  }

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
   * outcome. A decision of a step (flow-steps.ts: event id `<entry's event id>#<step>`, for an entry the
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

  /** For the trigger versions page: how many decisions each trigger version (by hash) led to, and how many sends. */
  async firedByTrigger(org: string, hashes: string[]): Promise<Map<string, { decided: bigint; sent: bigint }>> {
    const counts = await this.orgs.org(org).all<{ hash: string; decided: bigint; sent: bigint }>(
      `SELECT trigger_hash AS hash, count(*) AS decided, count(*) FILTER (outcome = 'sent') AS sent
         FROM flow_decisions WHERE trigger_hash IN (SELECT unnest($1::VARCHAR[])) GROUP BY trigger_hash`,
      [listValue([...new Set(hashes)])],
    );
    return new Map(counts.map((c) => [c.hash, c]));
  }

  /** The org's sends still to deliver, oldest first (an earlier process crashed or stopped mid-delivery). */
  async pending(org: string): Promise<PendingSend[]> {
    const rows = await this.orgs.org(org).all<{ send_id: string; org: string; flow_id: string; email: string; event_id: string; variant: string | null; content: string }>(
      "SELECT send_id, org, flow_id, email, event_id, variant, content FROM flow_sends WHERE status = 'pending' ORDER BY created_at",
    );
    return rows.map((r) => ({ sendId: r.send_id, org: r.org, flowId: r.flow_id, email: r.email, eventId: r.event_id, variant: r.variant, message: JSON.parse(r.content) as RenderedMessage }));
  }

  /**
   * An erased contact's sends (their rendered content with them) and decisions go, in the erasure's
   * transaction (privacy/erasure.ts); rows that name it only by an identity that never resolved go too.
   */
  static async eraseContact(c: Sql, email: string): Promise<{ sends: number; decisions: number }> {
    const sends = await c.all('DELETE FROM flow_sends WHERE email = $1 RETURNING 1', [email]);
    const decisions = await c.all('DELETE FROM flow_decisions WHERE email = $1 OR lower(identity) = $1 RETURNING 1', [email]);
    return { sends: sends.length, decisions: decisions.length };
  }

  /** How a batch of the org's sends ended (status, attempts, last_error, sent_at): one UPDATE. */
  async recordOutcomes(org: string, batch: readonly SendOutcome[]): Promise<void> {
    const last = batch.at(-1);
    if (!last) return;
    await this.orgs.org(org).run(
      `UPDATE flow_sends AS s
          SET status = u.status, attempts = u.attempts, last_error = u.reason,
              sent_at = CASE WHEN u.status = 'delivered' THEN $5 END
         FROM (SELECT unnest($1::VARCHAR[]) AS send_id, unnest($2::VARCHAR[]) AS status,
                      unnest($3::INTEGER[]) AS attempts, unnest($4::VARCHAR[]) AS reason) AS u
        WHERE s.send_id = u.send_id`,
      [
        listValue(batch.map((o) => o.sendId)),
        listValue(batch.map((o) => o.result.kind)),
        listValue(batch.map((o) => o.result.attempts)),
        listValue(batch.map((o) => (o.result.kind === 'delivered' ? null : o.result.reason))),
        tsParam(last.at),
      ],
    );
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
        where: 'org = $1 AND flow_id = $2 AND ($3::VARCHAR IS NULL OR email = $3 OR identity = $4)',
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

function appendNullable(a: { appendVarchar(v: string): void; appendNull(): void }, value: string | null): void {
  if (value === null) a.appendNull();
  else a.appendVarchar(value);
}

/**
 * Retention of the two tables: decisions (the "why (not)" log) decided more than `decisionsDays` ago are
 * deleted; the rendered content of a finished send (delivered, failed, dead) is cleared after
 * `sendsContentDays`. The send row itself stays: it is what makes a send exactly-once, what re-entry rules
 * read, and what campaigns_received and flow_variant_membership count.
 */
export function sendSweeps(policy: { decisionsDays: number; sendsContentDays: number }): Array<Sweep<'flow_decisions' | 'flow_sends'>> {
  return [
    { table: 'flow_decisions', days: policy.decisionsDays, sql: 'DELETE FROM flow_decisions WHERE rowid IN (SELECT rowid FROM flow_decisions WHERE decided_at < $1::TIMESTAMPTZ LIMIT $2) RETURNING 1' },
    {
      table: 'flow_sends',
      days: policy.sendsContentDays,
      sql: `UPDATE flow_sends SET content = NULL WHERE send_id IN (
              SELECT send_id FROM flow_sends
               WHERE created_at < $1::TIMESTAMPTZ AND status IN ('delivered', 'failed', 'dead') AND content IS NOT NULL
               LIMIT $2) RETURNING 1`,
    },
  ];
}
