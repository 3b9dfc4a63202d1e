/**
 * A refresh of some contacts extracts the traits of their own unfolded events only (pipelines/profiles.sql,
 * event_activity's `emails`): chosen after the extraction, every unfolded event of the org was parsed for
 * each refresh (40,000 of them under collect for a refresh of a few hundred contacts). Rows are counted from
 * DuckDB's own `EXPLAIN (ANALYZE, FORMAT json)` of activity_of with every event unfolded.
 */
import { listValue } from '@duckdb/node-api';
import t from 'tap';
import { startTestApp } from '../../helpers/app.js';

interface PlanNode {
  operator_name?: string;
  operator_cardinality?: number;
  extra_info?: { Table?: string };
  children?: PlanNode[];
}

const CONTACTS = 300;
const EVENTS_EACH = 3;
/** Above DuckDB's dynamic_or_filter_threshold (50), where a join's keys are not pushed into the scan. */
const ASKED = 80;

const reads = (node: PlanNode, table: string): boolean => node.extra_info?.Table?.endsWith(`.${table}`) === true || (node.children ?? []).some((c) => reads(c, table));

/** Rows out of each projection over the events scan, below its union with contact_activity. */
function eventProjections(node: PlanNode, out: number[] = []): number[] {
  if (node.operator_name === 'PROJECTION' && reads(node, 'events') && !reads(node, 'contact_activity')) out.push(node.operator_cardinality ?? 0);
  for (const child of node.children ?? []) eventProjections(child, out);
  return out;
}

t.test('a refresh of 80 of 300 contacts extracts the traits of their events only', async (t) => {
  const h = await startTestApp(t);
  const cred = (await h.createOrg('acme')).production;
  const emails = Array.from({ length: CONTACTS }, (_, i) => `c${i}@example.com`);
  const batch = emails.flatMap((email, i) =>
    Array.from({ length: EVENTS_EACH }, (_, k) => ({ type: 'identify', clientId: `c${i}`, messageId: `m${i}-${k}`, sentAt: Date.now(), traits: { email, firstName: `F${k}`, address: { city: 'Lisbon' } } })),
  );
  for (let i = 0; i < batch.length; i += 100) {
    const res = await h.batch({ partnerId: cred.partnerId, partnerSecret: cred.partnerSecret, batch: batch.slice(i, i + 100) });
    if (res.statusCode !== 200) throw new Error(`batch ${i / 100}: ${res.statusCode} ${res.body}`);
  }
  await h.compacted();
  const asked = listValue(emails.slice(0, ASKED));
  const [row] = await h.db('acme').all<{ explain_value: string }>('EXPLAIN (ANALYZE, FORMAT json) SELECT * FROM activity_of($1::VARCHAR, $2::VARCHAR[], NULL::TIMESTAMPTZ)', ['acme', asked]);
  const plan = JSON.parse(row!.explain_value) as PlanNode | PlanNode[];
  const counts = eventProjections(Array.isArray(plan) ? plan[0]! : plan);
  t.ok(counts.length > 0, `the plan has projections over the events scan (${counts.join(', ')})`);
  t.ok(Math.max(...counts) <= ASKED * EVENTS_EACH, `each extracts at most the ${ASKED * EVENTS_EACH} events of the ${ASKED} contacts asked for: ${counts.join(', ')}`);
  const profiles = await h.db('acme').all<{ email: string; first_name: string }>('SELECT email, first_name FROM activity_of($1::VARCHAR, $2::VARCHAR[], NULL::TIMESTAMPTZ)', ['acme', asked]);
  t.equal(profiles.length, ASKED, 'and each contact asked for is there');
  // The three events of a contact share one batch and so one receipt time: any of their names is the latest.
  t.ok(profiles.every((p) => /^F[0-2]$/.test(p.first_name)), 'with a first name from its events');
});
