/**
 * 1M entries waiting in a flow's steps (issue 26): the memory they cost the service, and the time from a
 * wait's end to its message's send (`npm run bench -- --only waits` runs it, or alone):
 *
 *   npx tsx bench/flow-waits.ts [--waiting 1000000] [--due 10000] [--spread-ms 10000] [--orders 1000]
 *
 * Builds the service on a new DATA_DIR (in-process storage), creates the org `acme`, a trigger and a live
 * flow with steps [waitUntil custom_order_completed for a day (then continue), outbox message], stops it
 * and bulk-inserts (DuckDB, the service's own schema) `--waiting` entries in the wait: all time out in a
 * day except `--due` of them, which time out one after the other over `--spread-ms` from 20 s after the
 * restart. Starts the service again, records its RSS and CPU, waits until the due messages are sent;
 * then collects `--orders` order events (one every 10 ms) for contacts still waiting, each of which ends
 * a wait. Reads from the database, per message, how long after its entry was due (timeouts), or after
 * its order was acknowledged (events: compaction included), the pass recorded it (p50, p99, max). Prints
 * a JSON line and writes bench/results/flow-waits.json (other settings: partial-flow-waits.json.tmp).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { buildApp } from '../src/app.js';
import { readConfig } from '../src/core/config.js';
import { createContext } from '../src/core/context.js';

const { values } = parseArgs({
  options: {
    waiting: { type: 'string', default: '1000000' },
    due: { type: 'string', default: '10000' },
    'spread-ms': { type: 'string', default: '10000' },
    orders: { type: 'string', default: '1000' },
  },
});
const WAITING = Number(values.waiting);
const DUE = Number(values.due);
const SPREAD_MS = Number(values['spread-ms']);
const ORDERS = Number(values.orders);
const ADMIN_KEY = 'bench-admin-key-0123456789abcdef';
const headers = { authorization: `Bearer ${ADMIN_KEY}` };
const TRIGGER = `SELECT identity, identity_type, ts, event_type, event_id, event_raw FROM event_triggers
WHERE event_type = 'custom_cart_updated' AND ts > {cursor_start_time} AND ts <= {cursor_end_time}`;

const dataDir = mkdtempSync(join(tmpdir(), 'audience-waits-'));
const config = { ...readConfig({}), port: 0, dataDir, queriesDir: join(dataDir, 'queries'), logLevel: (process.env.LOG_LEVEL ?? 'silent') as 'silent', adminKey: ADMIN_KEY };
const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);

async function seed(startAt: number): Promise<void> {
  const instance = await DuckDBInstance.create(join(dataDir, 'orgs', 'acme.duckdb'));
  const c = await instance.connect();
  // Entry i < DUE is due at startAt + i * SPREAD_MS / DUE; the others in a day.
  await c.run(`
    INSERT INTO flow_waits
    SELECT 'entry-' || i, 'acme', 'cart', 'user-' || i || '@example.com', 'e-' || i, NULL, 'h1', 0, true, 'custom_order_completed',
           now(), now(), now() - INTERVAL 1 MINUTE, NULL,
           CASE WHEN i < ${DUE} THEN make_timestamptz((${startAt} + i * ${SPREAD_MS} // ${DUE}) * 1000) ELSE now() + INTERVAL 1 DAY END,
           now(), '{"event":{"event_id":"e-' || i || '"},"flow":{"id":"cart","name":"Cart"},"variant":null}'
      FROM range(${WAITING}) t(i)`);
  c.closeSync();
  instance.closeSync();
}

type Delays = { sent: number; p50: number; p99: number; max: number };

/** Per sent message, decided_at minus when it was due (`dueOf`: SQL of the entry number i): timeouts and orders apart. */
async function delays(startAt: number, orderedAt: ReadonlyMap<number, number>): Promise<{ timeouts: Delays; orders: Delays }> {
  const instance = await DuckDBInstance.create(join(dataDir, 'orgs', 'acme.duckdb'));
  const c = await instance.connect();
  const stats = async (where: string, due: string): Promise<Delays> => {
    const reader = await c.runAndReadAll(`
      WITH sent AS (
        SELECT epoch_ms(decided_at) - (${due}) AS delay_ms
          FROM (SELECT decided_at, CAST(split_part(split_part(event_id, '#', 1), '-', 2) AS BIGINT) AS i FROM flow_decisions WHERE flow_id = 'cart' AND outcome = 'sent')
         WHERE ${where})
      SELECT count(*)::INTEGER AS sent, quantile_cont(delay_ms, 0.5) AS p50, quantile_cont(delay_ms, 0.99) AS p99, max(delay_ms)::DOUBLE AS max FROM sent`);
    const [row] = reader.getRowObjectsJS() as Delays[];
    return { sent: row!.sent, p50: Math.round(row!.p50), p99: Math.round(row!.p99), max: Math.round(row!.max) };
  };
  const timeouts = await stats(`i < ${DUE}`, `${startAt} + i * ${SPREAD_MS} // ${DUE}`);
  const at = `map_from_entries([${[...orderedAt].map(([i, ms]) => `(${i}::BIGINT, ${ms}::BIGINT)`).join(',') || '(-1::BIGINT, 0::BIGINT)'}])[i]`;
  const orders = await stats(`i >= ${DUE}`, at);
  c.closeSync();
  instance.closeSync();
  return { timeouts, orders };
}

async function main(): Promise<void> {
  let app = await buildApp(config, createContext());
  const call = async (method: 'POST' | 'PUT', url: string, payload: unknown) => {
    const res = await app.inject({ method, url, headers, payload: payload as Record<string, unknown> });
    if (res.statusCode >= 300) throw new Error(`${url}: ${res.body}`);
    return res.json() as Record<string, unknown>;
  };
  const org = await call('POST', '/admin/v1/orgs', { slug: 'acme', name: 'Acme' });
  const cred = (org.credentials as { production: { partnerId: string; partnerSecret: string } }).production;
  await call('PUT', '/admin/v1/orgs/acme/triggers/cart_updated', { sql: TRIGGER });
  await call('POST', '/admin/v1/orgs/acme/flows', {
    id: 'cart', name: 'Cart', category: 'triggered', entry: 'when_contact_triggers_event', trigger: 'cart_updated', scheduleSeconds: 3600,
    steps: [{ waitUntil: { event: 'custom_order_completed', timeoutSeconds: 86_400 }, then: 'continue' }, { message: { channel: 'outbox', template: { text: 'Your cart', to: '{{ contact.email_address }}' } } }],
  });
  await call('POST', '/admin/v1/orgs/acme/flows/cart/start', {});
  await app.close();

  const startAt = Date.now() + 20_000;
  let started = performance.now();
  await seed(startAt);
  const seedMs = Math.round(performance.now() - started);

  global.gc?.();
  const rssBefore = process.memoryUsage().rss;
  app = await buildApp(config, createContext());
  const cpuBefore = process.cpuUsage();
  await new Promise((r) => setTimeout(r, Math.max(0, startAt - Date.now() - 1000)));
  const rssWaiting = process.memoryUsage().rss;
  started = performance.now();
  const waits = async () => (await app.inject({ url: '/admin/v1/orgs/acme/flows/cart/waits?limit=1', headers })).json() as { total: number };
  let peakRss = rssWaiting;
  for (;;) {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
    if ((await waits()).total <= WAITING - DUE) break;
    if (performance.now() - started > SPREAD_MS + 300_000) throw new Error('the due entries were not all sent within 5 minutes of the last one');
    await new Promise((r) => setTimeout(r, 250));
  }
  await app.flowsRole!.dispatcher.idle();
  // Orders of contacts still waiting: each ends its wait (compaction, then the next pass).
  const orderedAt = new Map<number, number>();
  for (let k = 0; k < ORDERS; k++) {
    const i = DUE + k;
    const res = await app.inject({
      method: 'POST',
      url: '/http/v1/collect',
      payload: { ...cred, clientId: `c-${i}`, sentAt: Date.now(), type: 'track', event: 'custom', messageId: `order-${i}`, properties: { eventName: 'order_completed', properties: {} }, traits: { email: `user-${i}@example.com` } },
    });
    if (res.statusCode !== 200) throw new Error(res.body);
    orderedAt.set(i, Date.now());
    await new Promise((r) => setTimeout(r, 10));
  }
  for (;;) {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
    if ((await waits()).total <= WAITING - DUE - ORDERS) break;
    if (performance.now() - started > SPREAD_MS + 300_000) throw new Error(`the orders did not end their waits within 5 minutes (data left in ${dataDir})`);
    await new Promise((r) => setTimeout(r, 250));
  }
  await app.flowsRole!.dispatcher.idle();
  const cpu = process.cpuUsage(cpuBefore);
  await app.close();
  const measured = await delays(startAt, orderedAt);
  rmSync(dataDir, { recursive: true, force: true });
  const result = {
    waiting: WAITING,
    due: DUE,
    spreadMs: SPREAD_MS,
    seedMs,
    rssMb: { beforeStart: mb(rssBefore), withEntriesWaiting: mb(rssWaiting), peakWhileSending: mb(peakRss) },
    orders: ORDERS,
    timeoutToSendMs: measured.timeouts,
    orderToSendMs: measured.orders,
    cpuMsPerSend: Math.round(((cpu.user + cpu.system) / 1000 / (measured.timeouts.sent + measured.orders.sent)) * 100) / 100,
    at: new Date().toISOString(),
  };
  console.log(JSON.stringify(result));
  mkdirSync(join(import.meta.dirname, 'results'), { recursive: true });
  const defaults = WAITING === 1_000_000 && DUE === 10_000 && SPREAD_MS === 10_000 && ORDERS === 1000;
  writeFileSync(join(import.meta.dirname, 'results', defaults ? 'flow-waits.json' : 'partial-flow-waits.json.tmp'), JSON.stringify(result, null, 2) + '\n');
}

await main();
