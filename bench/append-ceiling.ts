/**
 * The ceiling of storing event rows through DuckDB's client (issue 39's drain row): how many rows per
 * second the service's own append path (`appendEvents` of write-batch.ts, DuckDB's appender, one
 * transaction per batch as compaction commits) stores when it does nothing else — no log to read, no
 * record to decode, no plan, no dedupe — against DuckDB storing rows of the same shape that it generates
 * itself (`INSERT … SELECT … FROM range`, no value crossing from JS), in the same org schema, in turn.
 *
 *   npx tsx bench/append-ceiling.ts [--rows 5000] [--rounds 20]
 *
 * The drain can be no faster than the first figure; DuckDB's `read_json` (bench/drain-bare.ts) is close
 * to the second.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { LocalDatabase } from '../src/db/database.js';
import { appendEvents } from '../src/events/compaction/write-batch.js';
import type { EventRow } from '../src/events/compaction/plan-batch.js';
import { eventFacts } from '../src/events/log/event-facts.js';
import { applyOrgSchema } from '../src/storage/migrate.js';

const { values } = parseArgs({ options: { rows: { type: 'string', default: '5000' }, rounds: { type: 'string', default: '20' } } });
const ROWS = Number(values.rows);
const ROUNDS = Number(values.rounds);
const CONTACTS = 20_000;

/** Rows shaped like the drain's (bench/bodies.ts): a custom event of ~600 B with its facts. */
function eventRows(round: number): EventRow[] {
  const receivedAt = Date.now();
  return Array.from({ length: ROWS }, (_, i) => {
    const n = round * ROWS + i;
    const email = `user-${String(n % CONTACTS).padStart(6, '0')}@example.com`;
    const event = {
      type: 'track', partnerId: 'p1', clientId: `c-${n % CONTACTS}`, messageId: `m-${n}`, sentAt: receivedAt - 20,
      traits: { email },
      context: { library: { name: 'audience-js', version: '1.4.2' }, page: { url: 'https://shop.example.com/checkout/confirmation?ref=newsletter' }, userAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36' },
      properties: { eventName: 'booking_completed', properties: { city: 'Lisbon', nights: (n % 7) + 1 } },
    };
    const entry = { kind: 'event' as const, org: 'bench', environment: 'production' as const, messageId: event.messageId, receivedAt, body: JSON.stringify(event), code: null, errors: null, facts: null };
    return { entry, seq: n, index: 0, facts: eventFacts(event, receivedAt), email };
  });
}

const GENERATED = (round: number) => `
  INSERT INTO events
  SELECT 'bench', 'production', 'g-' || (i + ${round * ROWS}), 'track', 'custom_booking_completed', 'c-' || (i % ${CONTACTS}),
         'user-' || lpad((i % ${CONTACTS})::VARCHAR, 6, '0') || '@example.com', NULL, now(), now(), now(),
         '{"city":"Lisbon","nights":' || (i % 7 + 1) || '}',
         '{"type":"track","partnerId":"p1","clientId":"c-' || (i % ${CONTACTS}) || '","messageId":"g-' || i || '","sentAt":1764430000000,' ||
           '"traits":{"email":"user-' || lpad((i % ${CONTACTS})::VARCHAR, 6, '0') || '@example.com"},"context":{"library":{"name":"audience-js","version":"1.4.2"},' ||
           '"page":{"url":"https://shop.example.com/checkout/confirmation?ref=newsletter"},"userAgent":"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 ' ||
           '(KHTML, like Gecko) Chrome/126.0 Safari/537.36"},"properties":{"eventName":"booking_completed","properties":{"city":"Lisbon","nights":' || (i % 7 + 1) || '}}}',
         i + ${round * ROWS}, NULL
    FROM range(${ROWS}) t(i)`;

const dir = mkdtempSync(join(tmpdir(), 'append-ceiling-'));
const db = await LocalDatabase.open(join(dir, 'bench.duckdb'));
try {
  await applyOrgSchema(db);
  const times = { appender: [] as number[], generated: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    const rows = eventRows(round);
    const visibleAt = BigInt(Date.now()) * 1000n;
    let started = performance.now();
    await db.transaction((c) => appendEvents(c, rows, visibleAt));
    times.appender.push(performance.now() - started);
    started = performance.now();
    await db.transaction((c) => c.run(GENERATED(round)));
    times.generated.push(performance.now() - started);
  }
  const n = (await db.all<{ n: bigint }>('SELECT count(*) AS n FROM events'))[0]?.n;
  if (Number(n) !== 2 * ROWS * ROUNDS) throw new Error(`stored ${n} rows, expected ${2 * ROWS * ROUNDS}`);
  const perSecond = (ms: number[]) => Math.round((ROWS * ms.length) / (ms.reduce((a, b) => a + b, 0) / 1000));
  const result = { rowsPerTransaction: ROWS, rounds: ROUNDS, appenderRowsPerSec: perSecond(times.appender), generatedRowsPerSec: perSecond(times.generated) };
  console.log(JSON.stringify(result));
} finally {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
}
