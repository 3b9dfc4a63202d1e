/**
 * A page of GET …/events/types: the folded event_types rows (pipelines/storage.sql) combined with the
 * events not folded yet, ordered by event type then environment (a type's place never moves, so paging
 * is stable while events arrive). Work: the event_types rows after the cursor, and seconds of events.
 */
import { listValue } from '@duckdb/node-api';
import type { Database } from '../../../db/sql.js';
import { eventTypesFoldedThrough, sampledPropertyKeys, unfoldedSince } from '../../../events/compaction/fold-event-types.js';
import { type Keyset, type PageRequest, pageOf, readPageIn } from '../../../db/paging.js';
import { addPropertyKey, keysByType, parsePropertyTypes, propertiesAnswer, typeId } from '../../../events/compaction/property-types.js';

export const EVENT_TYPES_KEYSET: Keyset = {
  columns: [
    { sql: 'event_name', kind: 'text', desc: false },
    { sql: 'environment', kind: 'text', desc: false },
  ],
};

interface TypeRow {
  environment: string;
  event_name: string;
  events: bigint;
  last_seen_at: Date;
  properties: string | null;
  properties_truncated: boolean;
}

export async function eventTypesPage(db: Database, env: string | null, page: PageRequest) {
  // One session: the fold position and the rows it splits are read with no fold in between.
  return db.exclusive(async (c) => {
    const since = unfoldedSince(await eventTypesFoldedThrough(c), 1);
    // Each query's own parameter comes after the fold position's (when there is one).
    const own = `$${since.params.length + 1}`;
    const rows = await readPageIn<TypeRow>(
      c,
      {
        select: 'environment, event_name, events, last_seen_at, properties, properties_truncated',
        from: `(SELECT environment, event_name, sum(events) AS events, max(last_seen_at) AS last_seen_at,
                       max(properties) AS properties, bool_or(properties_truncated) AS properties_truncated
                  FROM (SELECT environment, event_name, events, last_seen_at, properties, properties_truncated FROM event_types
                        UNION ALL
                        SELECT environment, event_name, count(*), max(received_at), NULL, false
                          FROM events WHERE ${since.sql} GROUP BY environment, event_name)
                 GROUP BY environment, event_name)`,
        where: `(${own}::VARCHAR IS NULL OR environment = ${own})`,
        params: [...since.params, env],
        keyset: EVENT_TYPES_KEYSET,
      },
      page,
    );
    const shown = rows.slice(0, page.limit);
    const names = [...new Set(shown.map((r) => r.event_name))];
    const unfoldedKeys =
      names.length === 0 ? [] : await sampledPropertyKeys(c, `${since.sql} AND event_name IN (SELECT unnest(${own}::VARCHAR[]))`, [...since.params, listValue(names)]);
    const keysOf = keysByType(unfoldedKeys);
    const violations = new Map(
      names.length === 0
        ? []
        : (await c.all<{ environment: string; event_name: string; n: bigint }>('SELECT environment, event_name, count(*) AS n FROM plan_violations WHERE event_name IN (SELECT unnest($1::VARCHAR[])) GROUP BY ALL', [listValue(names)])).map(
            (v) => [typeId(v.environment, v.event_name), Number(v.n)],
          ),
    );
    return pageOf(
      rows,
      page,
      (r) => {
        const properties = parsePropertyTypes(r.properties, r.properties_truncated);
        for (const key of keysOf.get(typeId(r.environment, r.event_name)) ?? []) addPropertyKey(properties, key);
        return {
          eventType: r.event_name,
          environment: r.environment,
          count: Number(r.events),
          lastSeenAt: r.last_seen_at.toISOString(),
          properties: propertiesAnswer(properties),
          propertiesTruncated: properties.truncated,
          violations: violations.get(typeId(r.environment, r.event_name)) ?? 0,
        };
      },
      EVENT_TYPES_KEYSET,
    );
  });
}
