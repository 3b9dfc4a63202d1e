/**
 * What the paged admin reads cost on a large org (not part of `npm run bench`; run it alone):
 *
 *   npx tsx bench/admin-reads.ts [--events 1000000] [--types 30] [--rows 1000000] [--reps 5] [--only types,samples]
 *
 * Builds the service in this process on a new DATA_DIR, creates the org `acme` with a trigger and a
 * flow, stops it and bulk-inserts (DuckDB, the service's own schema) `--events` events over `--types`
 * custom event types (each with a few property keys) and `--rows` quarantine rows, sends, decisions and
 * events held for an identity, then opens it as the service does (timing the folds of every event, as
 * after an upgrade) and times each list's first page and a page three cursors deep, and the counts over
 * time of the charts (events/activity, flows/{id}/activity), through the app (inject), median of `--reps`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { buildApp } from '../src/app.js';
import { readConfig } from '../src/core/config.js';
import { createContext } from '../src/core/context.js';
import { LocalDatabase } from '../src/db/database.js';
import { applyOrgSchema } from '../src/storage/migrate.js';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '1000000' },
    types: { type: 'string', default: '30' },
    rows: { type: 'string', default: '1000000' },
    reps: { type: 'string', default: '5' },
    only: { type: 'string' },
  },
});
const EVENTS = Number(values.events);
const TYPES = Number(values.types);
const ROWS = Number(values.rows);
const REPS = Number(values.reps);
const ADMIN_KEY = 'bench-admin-key-0123456789abcdef';
const headers = { authorization: `Bearer ${ADMIN_KEY}` };

const dataDir = mkdtempSync(join(tmpdir(), 'audience-admin-reads-'));
const config = { ...readConfig({}), port: 0, dataDir, queriesDir: join(dataDir, 'queries'), logLevel: 'silent' as const, adminKey: ADMIN_KEY, webhookAllowPrivate: true };

async function withApp<T>(work: (app: Awaited<ReturnType<typeof buildApp>>) => Promise<T>): Promise<T> {
  const app = await buildApp(config, createContext());
  try {
    return await work(app);
  } finally {
    await app.close();
  }
}

async function seed(): Promise<void> {
  const stepUs = Math.floor((20 * 86_400 * 1e6) / EVENTS);
  const instance = await DuckDBInstance.create(join(dataDir, 'orgs', 'acme.duckdb'));
  const c = await instance.connect();
  await c.run(`
    INSERT INTO events
    SELECT 'acme', CASE WHEN i % 5 = 0 THEN 'staging' ELSE 'production' END, 'hist-' || i, 'track',
           'custom_type_' || (hash(i) % ${TYPES}), 'c-' || (i % 20000), 'user-' || (i % 20000) || '@example.com', NULL,
           base + to_microseconds(i * ${stepUs}), base + to_microseconds(i * ${stepUs} - 1000),
           base + to_microseconds((i // 1000 + 1) * 1000 * ${stepUs}),
           '{"city":"Lisbon","nights":' || (i % 7 + 1) || ',"k' || (i % 13) || '":true}',
           '{"clientId":"c-' || (i % 20000) || '","type":"track","event":"custom","messageId":"hist-' || i ||
             '","context":{"library":{"name":"audience-js","version":"1.4.2"},"page":{"url":"https://shop.example.com/checkout"}},' ||
             '"traits":{"email":"user-' || (i % 20000) || '@example.com"},"properties":{"eventName":"x","properties":{"city":"Lisbon"}}}',
           i // 100, NULL
      FROM range(${EVENTS}) t(i), (SELECT now() - INTERVAL 22 DAY AS base)`);
  await c.run(`
    INSERT INTO quarantine
    SELECT 'q-' || (i // 3), 'acme', 'production', 'schema_violation', '[{"path":"/sentAt","message":"must be epoch milliseconds"}]',
           base + to_microseconds((i // 3) * 1000), base + to_microseconds((i // 300) * 100000), '{"clientId":"c","type":"track","event":"bogus"}'
      FROM range(${ROWS}) t(i), (SELECT now() - INTERVAL 20 DAY AS base)`);
  await c.run(`
    INSERT INTO flow_sends
    SELECT 'msg_' || i, 'acme', 'f1', 'user-' || (i % 20000) || '@example.com', 'hist-' || i, NULL, 'outbox', '{}', 'h1',
           CASE WHEN i % 50 = 0 THEN 'dead' ELSE 'delivered' END, 1, NULL, base + to_microseconds((i // 100) * 1000000), NULL, false, NULL
      FROM range(${ROWS}) t(i), (SELECT now() - INTERVAL 20 DAY AS base)`);
  await c.run(`
    INSERT INTO flow_decisions
    SELECT 'acme', 'f1', 'user-' || (i % 20000) || '@example.com', 'user-' || (i % 20000) || '@example.com', 'email', 'hist-' || i,
           'sent', NULL, 'msg_' || i, (SELECT hash FROM trigger_versions LIMIT 1), NULL, base + to_microseconds((i // 100) * 1000000)
      FROM range(${ROWS}) t(i), (SELECT now() - INTERVAL 20 DAY AS base)`);
  await c.run(`
    INSERT INTO pending_identity
    SELECT 'acme', 'production', 'anon-' || i, 'anon-c-' || (i % 50000), base + to_microseconds(i * 1000), base + to_microseconds(i * 1000) + INTERVAL 7 DAY,
           '{"clientId":"anon-c-' || (i % 50000) || '","type":"track","event":"custom","properties":{"eventName":"page_viewed","properties":{}}}', i
      FROM range(${ROWS}) t(i), (SELECT now() - INTERVAL 1 DAY AS base)`);
  c.closeSync();
  instance.closeSync();
}

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function main(): Promise<void> {
  await withApp(async (app) => {
    const ok = async (method: 'POST' | 'PUT', url: string, body: unknown) => {
      const res = await app.inject({ method, url, headers, payload: body as object });
      if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
    };
    await ok('POST', '/admin/v1/orgs', { slug: 'acme', name: 'Acme' });
    await ok('PUT', '/admin/v1/orgs/acme/triggers/t1', {
      sql: 'SELECT identity, identity_type, ts, event_type, event_id, event_raw FROM event_triggers WHERE ts > {cursor_start_time} AND ts <= {cursor_end_time}',
    });
    await ok('POST', '/admin/v1/orgs/acme/flows', { id: 'f1', name: 'F', category: 'triggered', entry: 'when_contact_triggers_event', trigger: 't1', message: { channel: 'outbox', template: {} } });
  });
  let started = performance.now();
  await seed();
  console.log(`seeded ${EVENTS} events over ${TYPES} types, ${ROWS} quarantine rows, sends and decisions in ${Math.round(performance.now() - started)} ms`);

  // What the service's first open of this file does: the schema, then the folds of every event.
  started = performance.now();
  const db = await LocalDatabase.open(join(dataDir, 'orgs', 'acme.duckdb'), { threads: config.orgDatabaseThreads });
  await applyOrgSchema(db);
  await db.close();
  console.log(`first open, folding every event into contact_activity and event_types: ${Math.round(performance.now() - started)} ms`);

  await withApp(async (app) => {
    const get = (url: string) => app.inject({ method: 'GET', url, headers });
    const monthAgo = new Date(Date.now() - 30 * 86_400_000).toISOString();
    await get('/admin/v1/orgs/acme/flows');
    const lists: Array<[string, string]> = [
      ['types', '/admin/v1/orgs/acme/events/types?limit=100'],
      ['types, production', '/admin/v1/orgs/acme/events/types?env=production&limit=100'],
      ['samples', '/admin/v1/orgs/acme/events/samples?limit=100'],
      ['samples of a type', '/admin/v1/orgs/acme/events/samples?eventType=custom_type_3&limit=100'],
      ['quarantine', '/admin/v1/orgs/acme/quarantine?limit=100'],
      ['sends', '/admin/v1/orgs/acme/flows/f1/sends?limit=100'],
      ['sends, dead', '/admin/v1/orgs/acme/flows/f1/sends?status=dead&limit=100'],
      ['decisions', '/admin/v1/orgs/acme/flows/f1/decisions?limit=100'],
      ['decisions of a contact', '/admin/v1/orgs/acme/flows/f1/decisions?identity=email:user-7@example.com&limit=100'],
      ['trigger versions', '/admin/v1/orgs/acme/triggers/t1/versions?limit=100'],
      ['held for an identity', '/admin/v1/orgs/acme/events/pending?limit=100'],
      ['activity, 24 h by hour', '/admin/v1/orgs/acme/events/activity?bucket=hour'],
      ['activity, 30 d by day', `/admin/v1/orgs/acme/events/activity?bucket=day&from=${monthAgo}`],
      ['activity, 30 d, staging', `/admin/v1/orgs/acme/events/activity?bucket=day&env=staging&from=${monthAgo}`],
      ['flow activity, 24 h', '/admin/v1/orgs/acme/flows/f1/activity?bucket=hour'],
      ['flow activity, 30 d', `/admin/v1/orgs/acme/flows/f1/activity?bucket=day&from=${monthAgo}`],
    ];
    for (const [name, url] of lists.filter(([name]) => !values.only || values.only.split(',').some((only) => name.startsWith(only)))) {
      const first: number[] = [];
      const deep: number[] = [];
      let bytes = 0;
      let items = 0;
      for (let rep = 0; rep < REPS; rep++) {
        let t0 = performance.now();
        let res = await get(url);
        first.push(performance.now() - t0);
        if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
        bytes = res.body.length;
        items = (Object.values(res.json()).find(Array.isArray) as unknown[]).length;
        for (let page = 0; page < 3 && res.json().nextCursor; page++) {
          t0 = performance.now();
          res = await get(`${url}&cursor=${res.json().nextCursor}`);
          if (page === 2) deep.push(performance.now() - t0);
        }
      }
      const deepText = deep.length > 0 ? `, 4th page ${median(deep).toFixed(1)} ms` : '';
      console.log(`${name.padEnd(24)} first page ${median(first).toFixed(1)} ms (${items} items, ${Math.round(bytes / 1024)} KiB)${deepText}`);
    }
  });
}

try {
  await main();
} finally {
  if (process.env.KEEP_DATA_DIR) console.log('kept', dataDir);
  else rmSync(dataDir, { recursive: true, force: true });
}
