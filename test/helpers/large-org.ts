/**
 * Writes a large org into its database file in one transaction, as DuckDB generates rows: `contacts`
 * imported contacts (c0@example.com, c1@example.com, …) each with folded activity, 3 orders, 1 delivered
 * send of flow `f<i % 50>` and 1 trait written in SQL. For the tests and benchmarks of profile refreshes
 * at sizes no test could send as events.
 */
import type { Sql } from '../../src/db/sql.js';

export async function writeLargeOrg(c: Sql, org: string, contacts: number): Promise<void> {
  const email = (i: string) => `'c' || ${i} || '@example.com'`;
  await c.run('INSERT INTO org_settings VALUES ($1, $2)', [org, '$']);
  await c.run(`INSERT INTO contacts SELECT $1, ${email('i')}, 'F', 'L', NULL, NULL, NULL, NULL, '{"tier":"gold"}', now() FROM range(${contacts}) r(i)`, [org]);
  await c.run(`INSERT INTO contact_activity BY NAME SELECT $1 AS org, ${email('i')} AS email, now() AS first_seen_at, now() AS last_seen_at, 10.0 AS revenue FROM range(${contacts}) r(i)`, [org]);
  await c.run(`INSERT INTO contact_orders SELECT $1, ${email(`(i % ${contacts})`)}, 'o' || i FROM range(${3 * contacts}) r(i)`, [org]);
  await c.run(
    `INSERT INTO flow_sends BY NAME SELECT 's' || i AS send_id, $1 AS org, 'f' || (i % 50) AS flow_id, ${email('i')} AS email, 'e' || i AS event_id,
            'h' AS trigger_hash, 'delivered' AS status, 1 AS attempts, now() AS created_at FROM range(${contacts}) r(i)`,
    [org],
  );
  await c.run(`INSERT INTO contact_traits SELECT $1, ${email('i')}, 'score', '1' FROM range(${contacts}) r(i)`, [org]);
  await c.run('INSERT INTO contact_activity_folded VALUES (now())');
}
