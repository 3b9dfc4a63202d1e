/** The retention of flow_sends and flow_decisions (run by src/roles/retention.ts); send-store.ts is their writer. */
import type { Sweep } from '../../../db/sweep.js';

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
