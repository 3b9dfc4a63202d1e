/**
 * Issue 25, part 5: Simon-style trigger and segment queries written in Snowflake SQL
 * (test/fixtures/snowflake/corpus.json), each checked through the real path (a checker process,
 * checkSql) and run over a fixture event set in a real org database: every query either returns exactly
 * its rows, or is refused with the reason given and its working alternative returns exactly the rows.
 * Rows are compared on every column but the times that move with the clock (ts, event_raw, event_time,
 * received_at): identity and event_id, the extra columns in order, and identity_type and event_type
 * against the fixture.
 */
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import t from 'tap';
import { timestampTZValue } from '@duckdb/node-api';
import { jsonRow } from '../../../src/reactions/triggers/json-row.js';
import { runSandboxed, withSandbox } from '../../../src/reactions/triggers/sandbox.js';
import { type CheckedSql, type QueryKind, SqlRefused } from '../../../src/reactions/triggers/sql-guard.js';
import { customEvent, startTestApp } from '../../helpers/app.js';
import { ROOT } from '../../helpers/paths.js';

interface FixtureEvent {
  messageId: string;
  email: string | null;
  event: string;
  hoursAgo: number;
  properties: Record<string, unknown>;
}
interface CorpusQuery {
  name: string;
  kind: QueryKind;
  sql: string;
  refused?: string;
  alternative?: string;
  extras: string[];
  rows: unknown[][];
}
const corpus = JSON.parse(readFileSync(join(ROOT, 'test/fixtures/snowflake/corpus.json'), 'utf8')) as { events: FixtureEvent[]; queries: CorpusQuery[] };
const MOVING = new Set(['ts', 'event_raw', 'event_time', 'received_at']);
const HOUR = 3_600_000;

/** `$date(+3)`: the UTC date three days from now, as a booking's check-in. */
function withDates(value: unknown, now: number): unknown {
  if (typeof value === 'string') {
    const m = /^\$date\(([+-]\d+)\)$/.exec(value);
    return m ? new Date(now + Number(m[1]) * 24 * HOUR).toISOString().slice(0, 10) : value;
  }
  if (Array.isArray(value)) return value.map((v) => withDates(v, now));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withDates(v, now)]));
  return value;
}

t.test('the Snowflake corpus: every query accepted and exact, or refused with a working alternative', async (t) => {
  t.ok(corpus.queries.length >= 60, `${corpus.queries.length} queries`);
  const h = await startTestApp(t);
  const acme = await h.createOrg('acme');
  const now = Date.now();
  const eventTypes = new Map<string, string>();
  for (const e of corpus.events) {
    eventTypes.set(e.messageId, `custom_${e.event}`);
    const res = await h.collect(
      customEvent(acme.production, {
        messageId: e.messageId,
        clientId: `client-${e.email ?? e.messageId}`,
        sentAt: now,
        timestamp: new Date(now - e.hoursAgo * HOUR).toISOString(),
        properties: { eventName: e.event, ...(e.email ? {} : { requiresIdentity: false }), properties: withDates(e.properties, now) },
        traits: e.email ? { email: e.email } : {},
      }),
    );
    t.equal(res.statusCode, 200, `event ${e.messageId} stored: ${res.body}`);
  }
  await h.compacted();
  const window = { cursor_start_time: timestampTZValue(0n), cursor_end_time: timestampTZValue(BigInt(Date.now() + 60_000) * 1000n) };
  const check = (sql: string, kind: QueryKind) => h.app.storageRole!.triggers.check(sql, 'acme', kind);
  const run = async (checked: CheckedSql) => (await withSandbox(h.db('acme'), 10_000, (c) => runSandboxed(c, checked, window, 1000))).rows.map(jsonRow);

  async function exact(q: CorpusQuery, sql: string): Promise<void> {
    const checked = await check(sql, q.kind);
    // A query with nothing only Snowflake has (QUALIFY, a window) means the same read as DuckDB SQL.
    dialects[checked.dialect]++;
    const rows = await run(checked);
    const compared = checked.columns.filter((c) => !MOVING.has(c.toLowerCase()));
    const keyed = q.kind === 'segment' ? ['email'] : ['identity', 'event_id'];
    t.same(compared, q.kind === 'segment' ? ['email'] : ['identity', 'identity_type', 'event_type', 'event_id', ...q.extras], `${q.name}: the columns`);
    const actual = rows.map((row) => [...keyed, ...q.extras].map((c) => row[c] ?? null));
    for (const row of rows) {
      if (q.kind !== 'trigger') continue;
      t.equal(row.identity_type, row.identity === null ? null : 'email', `${q.name}: identity_type of ${String(row.event_id)}`);
      t.equal(row.event_type, eventTypes.get(String(row.event_id)), `${q.name}: event_type of ${String(row.event_id)}`);
    }
    const sorted = (list: unknown[][]) => list.map((r) => JSON.stringify(r)).sort();
    t.same(sorted(actual), sorted(q.rows), `${q.name}: the rows`);
  }

  const dialects = { snowflake: 0, duckdb: 0 };
  let accepted = 0;
  let refused = 0;
  for (const q of corpus.queries) {
    if (q.refused === undefined) {
      await exact(q, q.sql);
      accepted++;
      continue;
    }
    const error = await check(q.sql, q.kind).catch((e: unknown) => e);
    t.ok(error instanceof SqlRefused, `${q.name}: refused`);
    t.match((error as Error).message, new RegExp(q.refused), `${q.name}: the reason names the construct`);
    await exact(q, q.alternative!);
    refused++;
  }
  t.comment(`${accepted} accepted and exact, ${refused} refused with a working alternative; read as Snowflake SQL ${dialects.snowflake}, as DuckDB SQL ${dialects.duckdb}`);
});
