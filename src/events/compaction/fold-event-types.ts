/**
 * Folds the events made visible since the last fold into event_types (one row per environment and
 * event type: count, last seen, property keys and their JSON types) and moves its position, inside the
 * caller's transaction. GET …/events/types reads these rows plus the events not folded yet, so it
 * reads a page of types and seconds of events, never every event: at 10 M stored events the scan it
 * replaces took 5–7 s (GROUP BY 0.27 s, property inference 4.8–7.0 s) on the org's one connection.
 */
import { type DuckDBValue, listValue } from '@duckdb/node-api';
import { microsParam } from '../../db/database.js';
import type { Sql } from '../../db/sql.js';
import {
  MAX_PROPERTY_KEY_LENGTH,
  MAX_PROPERTY_KEYS,
  type PropertyKeyRow,
  type PropertyTypes,
  addPropertyKey,
  keysByType,
  parsePropertyTypes,
  propertyTypesJson,
  typeId,
} from './property-types.js';

/** Distinct keys per type read at once: enough to fill the cap whatever the names of the known ones. */
const KEYS_PER_TYPE = MAX_PROPERTY_KEYS * 10;
/**
 * Property keys are read from a sample of the events: the newest of each type first, then the second
 * newest of each, and so on, at most this many (the newest 1,000 of each type were the sample before
 * types were folded). Reading every event's keys grows with what partners send: for 10,000 events of
 * 2,500 keys each it spilled 9 GB of temporary files before it was stopped.
 */
const SAMPLE_EVENTS = 500;
/**
 * Members read of each sampled event, in the order sent: one more than the cap, so an event with more
 * keys than a type may list still marks its type truncated.
 */
const KEYS_PER_EVENT = MAX_PROPERTY_KEYS + 1;
/** Types rewritten per statement (a few ms each, whatever their size). */
const ROWS_PER_STATEMENT = 500;

/** Where the fold stands (epoch µs; null before the first). Read it in the transaction of the query using it. */
export async function eventTypesFoldedThrough(c: Sql): Promise<bigint | null> {
  const [row] = await c.all<{ us: bigint | null }>('SELECT epoch_us(max(through)) AS us FROM event_types_folded');
  return row?.us ?? null;
}

/** `visible_at` after the fold position, as SQL over parameter `$n` (none when nothing is folded). */
export function unfoldedSince(folded: bigint | null, n: number): { sql: string; params: ReturnType<typeof microsParam>[] } {
  return folded === null ? { sql: 'true', params: [] } : { sql: `visible_at > $${n}`, params: [microsParam(folded)] };
}

export async function foldEventTypes(c: Sql): Promise<void> {
  const folded = await eventTypesFoldedThrough(c);
  const [head] = await c.all<{ us: bigint | null }>('SELECT epoch_us(max(visible_at)) AS us FROM events');
  const through = head?.us ?? null;
  if (through === null || (folded !== null && through <= folded)) return;
  const since = unfoldedSince(folded, 2);
  const window = `${since.sql} AND visible_at <= $1`;
  const params = [microsParam(through), ...since.params];

  await c.run(
    `INSERT OR REPLACE INTO event_types
     SELECT n.environment, n.event_name, coalesce(t.events, 0) + n.events, greatest(t.last_seen_at, n.last_seen_at),
            coalesce(t.properties, '{}'), coalesce(t.properties_truncated, false)
       FROM (SELECT environment, event_name, count(*) AS events, max(received_at) AS last_seen_at
               FROM events WHERE ${window} GROUP BY ALL) n
       LEFT JOIN event_types t USING (environment, event_name)`,
    params,
  );
  await foldPropertyKeys(c, await sampledPropertyKeys(c, window, params));
  await c.run('DELETE FROM event_types_folded');
  await c.run('INSERT INTO event_types_folded VALUES ($1)', [microsParam(through)]);
}

/**
 * The distinct (environment, event_name, key, type) of a sample of the events `where` selects (over
 * `params`), at most KEYS_PER_TYPE keys per type, the first by name (a type cut short has more than the
 * cap anyway); keys over the length limit come back as one NULL key. The sample is chosen from the
 * events' type and time alone, then only its events' properties are read.
 */
export async function sampledPropertyKeys(c: Sql, where: string, params: DuckDBValue[]): Promise<PropertyKeyRow[]> {
  const sample = await c.all<{ row: bigint }>(
    `SELECT row FROM (SELECT rowid AS row, visible_at, row_number() OVER (PARTITION BY environment, event_name ORDER BY visible_at DESC, rowid) AS nth
                        FROM events WHERE ${where})
      ORDER BY nth, visible_at DESC, row LIMIT ${SAMPLE_EVENTS}`,
    params,
  );
  if (sample.length === 0) return [];
  // Each object as a MAP of its members: json_each took 13.7 s for 113 events of 2,500 keys, this 0.2 s.
  return c.all<PropertyKeyRow>(
    `SELECT environment, event_name, key, type FROM (
       SELECT DISTINCT environment, event_name, CASE WHEN length(k) <= ${MAX_PROPERTY_KEY_LENGTH} THEN k END AS key, coalesce(json_type(v), 'NULL') AS type
         FROM (SELECT environment, event_name,
                      unnest(list_slice(map_keys(m), 1, ${KEYS_PER_EVENT})) AS k, unnest(list_slice(map_values(m), 1, ${KEYS_PER_EVENT})) AS v
                 FROM (SELECT environment, event_name, json_transform(properties, '"MAP(VARCHAR, JSON)"') AS m
                         FROM events WHERE rowid IN (SELECT unnest($1::BIGINT[])) AND json_type(properties) = 'OBJECT')))
     QUALIFY dense_rank() OVER (PARTITION BY environment, event_name ORDER BY key NULLS FIRST) <= ${KEYS_PER_TYPE}`,
    [listValue(sample.map((s) => s.row))],
  );
}

/** Merges the keys seen into the stored ones of their types; writes only the types that changed. */
async function foldPropertyKeys(c: Sql, seen: PropertyKeyRow[]): Promise<void> {
  if (seen.length === 0) return;
  const byType = keysByType(seen);
  const types = [...byType.values()].map((rows) => rows[0]!);
  const stored = await c.all<{ environment: string; event_name: string; properties: string; properties_truncated: boolean }>(
    `SELECT t.environment, t.event_name, t.properties, t.properties_truncated
       FROM event_types t
       JOIN (SELECT unnest($1::VARCHAR[]) AS environment, unnest($2::VARCHAR[]) AS event_name) s USING (environment, event_name)`,
    [listValue(types.map((t) => t.environment)), listValue(types.map((t) => t.event_name))],
  );
  const changed: Array<{ environment: string; eventName: string; types: PropertyTypes }> = [];
  for (const row of stored) {
    const merged = parsePropertyTypes(row.properties, row.properties_truncated);
    let dirty = false;
    for (const key of byType.get(typeId(row.environment, row.event_name)) ?? []) dirty = addPropertyKey(merged, key) || dirty;
    if (dirty) changed.push({ environment: row.environment, eventName: row.event_name, types: merged });
  }
  for (let start = 0; start < changed.length; start += ROWS_PER_STATEMENT) {
    const chunk = changed.slice(start, start + ROWS_PER_STATEMENT);
    await c.run(
      `UPDATE event_types AS t SET properties = s.properties, properties_truncated = s.truncated
         FROM (SELECT unnest($1::VARCHAR[]) AS environment, unnest($2::VARCHAR[]) AS event_name,
                      unnest($3::VARCHAR[]) AS properties, unnest($4::BOOLEAN[]) AS truncated) s
        WHERE t.environment = s.environment AND t.event_name = s.event_name`,
      [
        listValue(chunk.map((t) => t.environment)),
        listValue(chunk.map((t) => t.eventName)),
        listValue(chunk.map((t) => propertyTypesJson(t.types))),
        listValue(chunk.map((t) => t.types.truncated)),
      ],
    );
  }
}

/** Retention deleted these (folded) events: their types count fewer, and a type with none left goes. */
export async function forgetEvents(c: Sql, deleted: ReadonlyArray<{ environment: string; event_name: string }>): Promise<void> {
  if (deleted.length === 0) return;
  const counts = new Map<string, { environment: string; eventName: string; n: number }>();
  for (const row of deleted) {
    const id = typeId(row.environment, row.event_name);
    const entry = counts.get(id) ?? { environment: row.environment, eventName: row.event_name, n: 0 };
    entry.n++;
    counts.set(id, entry);
  }
  const types = [...counts.values()];
  await c.run(
    `UPDATE event_types AS t SET events = t.events - s.n
       FROM (SELECT unnest($1::VARCHAR[]) AS environment, unnest($2::VARCHAR[]) AS event_name, unnest($3::BIGINT[]) AS n) s
      WHERE t.environment = s.environment AND t.event_name = s.event_name`,
    [listValue(types.map((t) => t.environment)), listValue(types.map((t) => t.eventName)), listValue(types.map((t) => t.n))],
  );
  await c.run('DELETE FROM event_types WHERE events <= 0');
}
