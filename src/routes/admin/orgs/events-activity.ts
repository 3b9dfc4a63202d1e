/**
 * GET …/events/activity: what arrived over time, for the console's charts and `audiencectl events activity`.
 * Per bucket of `[from, to)` (time-buckets.ts): events stored per type (the TOP_TYPES most frequent in the
 * range; the rest summed as `otherTypes`), all events stored, and events quarantined, by the time they were
 * received. Events retention deleted are not counted. Work: one scan of the range of the org's events and
 * quarantine, grouped in DuckDB; the answer is at most (TOP_TYPES + 3) × MAX_BUCKETS numbers.
 */
import type { Database } from '../../../db/sql.js';
import { tsParam } from '../../../db/database.js';
import { type TimeRange, rangeAnswer, rangeSchemaParts, series, seriesBy } from '../../../db/time-buckets.js';
import { object } from '../../../openapi/route-schema.js';

export const TOP_TYPES = 8;

/** The schema of a CountSeries (time-buckets.ts), with the members that name it. */
export const countSeries = (extra: Record<string, unknown> = {}) =>
  object({ ...extra, total: { type: 'integer', minimum: 0 }, counts: { type: 'array', items: { type: 'integer', minimum: 0 } } });

export const eventsActivitySchema = object({
  ...rangeSchemaParts,
  environment: { type: ['string', 'null'], enum: ['staging', 'production', null], description: 'null: both' },
  types: { type: 'array', description: `the ${TOP_TYPES} event types stored most in the range, most first`, items: countSeries({ eventType: { type: 'string' } }) },
  otherTypes: countSeries({ types: { type: 'integer', minimum: 0, description: 'how many other event types the sums hold' } }),
  stored: countSeries(),
  quarantined: countSeries(),
});

interface Row {
  kind: 'type' | 'types' | 'quarantined';
  name: string | null;
  bucket: bigint | null;
  n: bigint;
}

export async function eventsActivity(db: Database, org: string, env: string | null, range: TimeRange) {
  const rows = await db.all<Row>(
    `WITH r AS (
       SELECT event_name, epoch_ms(received_at) // $5 AS bucket FROM events
        WHERE org = $1 AND received_at >= $2 AND received_at < $3 AND ($4::VARCHAR IS NULL OR environment = $4)
     ),
     top AS (SELECT event_name FROM r GROUP BY event_name ORDER BY count(*) DESC, event_name LIMIT ${TOP_TYPES})
     SELECT 'type' AS kind, top.event_name AS name, bucket, count(*) AS n FROM r LEFT JOIN top ON top.event_name = r.event_name GROUP BY ALL
     UNION ALL
     SELECT 'types', NULL, NULL, count(DISTINCT event_name) FROM r
     UNION ALL
     SELECT 'quarantined', NULL, epoch_ms(received_at) // $5, count(*) FROM quarantine
      WHERE org = $1 AND received_at >= $2 AND received_at < $3 AND ($4::VARCHAR IS NULL OR environment = $4) GROUP BY ALL`,
    [org, tsParam(range.fromMs), tsParam(range.toMs), env, BigInt(range.bucketMs)],
  );
  const stored = rows.filter((row) => row.kind === 'type');
  const byType = seriesBy(range, stored, (row) => row.name);
  const types = [...byType]
    .flatMap(([eventType, counted]) => (eventType === null ? [] : [{ eventType, ...counted }]))
    .sort((a, b) => b.total - a.total || a.eventType.localeCompare(b.eventType));
  const distinct = Number(rows.find((row) => row.kind === 'types')?.n ?? 0);
  return {
    ...rangeAnswer(range),
    environment: env,
    types,
    otherTypes: { types: Math.max(0, distinct - types.length), ...(byType.get(null) ?? series(range, [])) },
    stored: series(range, stored),
    quarantined: series(range, rows.filter((row) => row.kind === 'quarantined')),
  };
}
