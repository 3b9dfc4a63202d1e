/**
 * The outbox (flow_sends) and the decision log (flow_decisions) of flows: every write of the two tables, and
 * every read a decision depends on, goes through here, their retention sweeps included (`sendSweeps`, run by src/roles/retention.ts).
 * Who calls what, and in which transaction:
 * - the decision pipeline (run/decision-pipeline.ts) writes decisions and outbox rows (`record`) in its
 *   source's transaction (a run's: the one that advances its cursor, FlowStore.advance), so a window's rows
 *   are written once or not at all;
 * - the dispatcher reads what is pending at start (`pending`) and writes how each send ended
 *   (`recordOutcomes`, batched by send-outcomes.ts);
 * - what the admin API reads of them (pages, results, activity) is reports/send-reports.ts, which writes nothing;
 * - an erasure deletes a contact's rows of both (`eraseContact`).
 * A decision about a contact erased with suppress names it by its e-mail hash only (`named`): it is the
 * record that the contact was not messaged, and must not store the address again.
 */
import { listValue } from '@duckdb/node-api';
import type { ChannelName, DeliveryResult, RenderedMessage } from '../../channels/types.js';
import { emailHash } from '../../../core/domain.js';
import { tsParam } from '../../../db/database.js';
import type { Sql } from '../../../db/sql.js';
import type { OrgStorage } from '../../../db/org-storage.js';
import { sendKey } from '../rules/decide.js';
import { type Deferred, type EnteredSteps, type Holdout, type RenderedDecision, type Sent } from '../rules/decision.js';
import type { PastSend } from '../rules/frequency-caps.js';

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

/** What a step of an entry came to (run/step-entries.ts): the entry's exit, or why its message step sent nothing. */
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
    await c.appendRows({ table: 'flow_decisions' }, decisions.map(named), (a, d) => {
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

  /** Decision rows of steps that sent nothing (run/step-entries.ts), in the pass's transaction `c`. */
  async recordStepDecisions(c: Sql, org: string, decisions: readonly StepDecision[], now: number): Promise<void> {
    const at = tsParam(now);
    const rows = decisions.map((d) => ({ ...d, ...named({ ...d, identity: d.email, identityType: 'email' }) }));
    await c.appendRows({ table: 'flow_decisions' }, rows, (a, d) => {
      a.appendVarchar(org);
      a.appendVarchar(d.flowId);
      appendNullable(a, d.email);
      appendNullable(a, d.identity);
      appendNullable(a, d.identityType);
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
  async releaseDeferred(org: string, released: ReadonlyArray<{ sendId: string; outcome: string; reason: string | null; dueAt?: number }>, now: number): Promise<Set<string>> {
    if (released.length === 0) return new Set();
    const params = [listValue(released.map((r) => r.sendId)), listValue(released.map((r) => r.outcome)), listValue(released.map((r) => r.reason)), tsParam(now)];
    const changed = await this.orgs.org(org).transaction(async (c) => {
      // deferred_quiet_hours: still inside quiet hours (in the zone the contact names now), deferred again to their end.
      const rows = await c.all<{ send_id: string; status: string }>(
        `UPDATE flow_sends AS s SET status = CASE WHEN u.outcome = 'sent' THEN 'pending' WHEN u.outcome = 'deferred_quiet_hours' THEN 'deferred' ELSE 'cancelled' END,
                last_error = u.reason, due_at = CASE WHEN u.outcome = 'deferred_quiet_hours' THEN make_timestamptz(u.due_ms * 1000) ELSE s.due_at END
           FROM (SELECT unnest($1::VARCHAR[]) AS send_id, unnest($2::VARCHAR[]) AS outcome, unnest($3::VARCHAR[]) AS reason, unnest($4::BIGINT[]) AS due_ms) AS u
          WHERE s.send_id = u.send_id AND s.status = 'deferred'
          RETURNING s.send_id, s.status`,
        [...params.slice(0, 3), listValue(released.map((r) => (r.dueAt === undefined ? null : BigInt(r.dueAt))))],
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
   * An archived flow's sends not yet handed to a channel (pending, or deferred by quiet hours) are
   * cancelled, in the archive's transaction (FlowStore.archive); the dispatcher drops those it queued.
   */
  static async cancelFlow(c: Sql, flowId: string): Promise<number> {
    const cancelled = await c.all(
      "UPDATE flow_sends SET status = 'cancelled', last_error = 'the flow was archived before this was sent' WHERE flow_id = $1 AND status IN ('pending', 'deferred') RETURNING 1",
      [flowId],
    );
    return cancelled.length;
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

}

/** Who a decision row names: as decided, or, for a suppressed contact, only its e-mail hash (no address, no send id derived from it). */
function named<T extends { outcome: string; email: string | null; identity: string | null; identityType: string | null; sendId: string | null }>(d: T): T {
  if (d.outcome !== 'suppressed' || d.email === null) return d;
  return { ...d, email: null, identity: emailHash(d.email), identityType: 'email-hash', sendId: null };
}

function appendNullable(a: { appendVarchar(v: string): void; appendNull(): void }, value: string | null): void {
  if (value === null) a.appendNull();
  else a.appendVarchar(value);
}
