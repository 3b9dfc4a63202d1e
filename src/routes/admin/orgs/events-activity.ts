/**
 * GET …/events/activity: what arrived over time, for the console's charts and `audiencectl events activity`.
 * Per bucket of `[from, to)` (time-buckets.ts): events stored per type (the TOP_TYPES most frequent in the
 * range; the rest summed as `otherTypes`), all events stored, and events quarantined, by the time they were
 * received. Events retention deleted are not counted. Work: one scan of the range of the org's events and
 * quarantine, grouped in DuckDB; the answer is at most (TOP_TYPES + 3) × MAX_BUCKETS numbers.
 */
import type { Database } from '../../../db/sql.js';
import { tsParam } from '../../../db/database.js';
import { type TimeRange, dense, rangeAnswer, rangeSchemaParts } from '../../../db/time-buckets.js';
import { object } from '../../../openapi/route-schema.js';

export const TOP_TYPES = 8;

const counts = { type: 'array', items: { type: 'integer', minimum: 0 } } as const;
const series = (extra: Record<string, unknown> = {}) => object({ ...extra, total: { type: 'integer', minimum: 0 }, counts });

export const eventsActivitySchema = object({
  ...rangeSchemaParts,
  environment: { type: ['string', 'null'], enum: ['staging', 'production', null], description: 'null: both' },
  types: { type: 'array', description: `the ${TOP_TYPES} event types stored most in the range, most first`, items: series({ eventType: { type: 'string' } }) },
  otherTypes: series({ types: { type: 'integer', minimum: 0, description: 'how many other event types the sums hold' } }),
  stored: series(),
  quarantined: series(),
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
  const byType = new Map<string | null, Array<{ bucket: bigint; n: bigint }>>();
  const quarantined: Array<{ bucket: bigint; n: bigint }> = [];
  let distinct = 0;
  for (const row of rows) {
    if (row.kind === 'types') distinct = Number(row.n);
    else if (row.kind === 'quarantined') quarantined.push({ bucket: row.bucket!, n: row.n });
    else {
      const list = byType.get(row.name) ?? [];
      list.push({ bucket: row.bucket!, n: row.n });
      byType.set(row.name, list);
    }
  }
  const seriesOf = (list: ReadonlyArray<{ bucket: bigint; n: bigint }>) => {
    const c = dense(range, list);
    return { total: c.reduce((a, b) => a + b, 0), counts: c };
  };
  const types = [...byType]
    .filter((entry): entry is [string, Array<{ bucket: bigint; n: bigint }>] => entry[0] !== null)
    .map(([eventType, list]) => ({ eventType, ...seriesOf(list) }))
    .sort((a, b) => b.total - a.total || a.eventType.localeCompare(b.eventType));
  return {
    ...rangeAnswer(range),
    environment: env,
    types,
    otherTypes: { types: Math.max(0, distinct - types.length), ...seriesOf(byType.get(null) ?? []) },
    stored: seriesOf([...byType.values()].flat()),
    quarantined: seriesOf(quarantined),
  };
}
