/**
 * How long the erasure of one contact takes on a large org (not part of `npm run bench`; run it alone):
 *
 *   npx tsx bench/erasure.ts [--events 1000000] [--contacts 20000] [--reps 3]
 *
 * Builds the service on a new DATA_DIR, creates the org `acme`, stops it and bulk-inserts (DuckDB, the
 * service's own schema) `--events` events over `--contacts` contacts, and as many sends and decisions;
 * then starts the service as in production (org storage in its storage process) and times, for `--reps`
 * contacts one after the other, `POST …/contacts/erase` until its receipt says done (polled every 10 ms).
 * Prints a JSON line and writes bench/results/erasure.json.
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
    events: { type: 'string', default: '1000000' },
    contacts: { type: 'string', default: '20000' },
    reps: { type: 'string', default: '3' },
  },
});
const EVENTS = Number(values.events);
const CONTACTS = Number(values.contacts);
const REPS = Number(values.reps);
const ADMIN_KEY = 'bench-admin-key-0123456789abcdef';
const headers = { authorization: `Bearer ${ADMIN_KEY}` };

const dataDir = mkdtempSync(join(tmpdir(), 'audience-erasure-'));
const config = { ...readConfig({}), port: 0, dataDir, queriesDir: join(dataDir, 'queries'), logLevel: 'silent' as const, adminKey: ADMIN_KEY };

async function seed(): Promise<void> {
  const instance = await DuckDBInstance.create(join(dataDir, 'orgs', 'acme.duckdb'));
  const c = await instance.connect();
  const email = `'user-' || (i % ${CONTACTS}) || '@example.com'`;
  await c.run(`
    INSERT INTO events
    SELECT 'acme', 'production', 'hist-' || i, 'track', 'custom_booking', 'c-' || (i % ${CONTACTS}), ${email}, NULL,
           base + to_microseconds(i * 1000), base + to_microseconds(i * 1000), base + to_microseconds((i // 1000 + 1) * 1000000),
           '{"city":"Lisbon"}',
           '{"clientId":"c-' || (i % ${CONTACTS}) || '","type":"track","event":"custom","messageId":"hist-' || i || '","traits":{"email":"user-' || (i % ${CONTACTS}) || '@example.com"},"properties":{"eventName":"booking"}}',
           i // 100, NULL
      FROM range(${EVENTS}) t(i), (SELECT now() - INTERVAL 20 DAY AS base)`);
  await c.run(`
    INSERT INTO flow_sends
    SELECT 'msg_' || i, 'acme', 'f1', ${email}, 'hist-' || i, NULL, 'outbox', '{"channel":"outbox"}', 'h1', 'delivered', 1, NULL,
           base + to_microseconds(i * 1000), NULL, false, NULL
      FROM range(${EVENTS} // 10) t(i), (SELECT now() - INTERVAL 20 DAY AS base)`);
  await c.run(`
    INSERT INTO flow_decisions
    SELECT 'acme', 'f1', ${email}, ${email}, 'email', 'hist-' || i, 'sent', NULL, 'msg_' || i, 'h1', NULL, base + to_microseconds(i * 1000)
      FROM range(${EVENTS} // 10) t(i), (SELECT now() - INTERVAL 20 DAY AS base)`);
  c.closeSync();
  instance.closeSync();
}

async function main(): Promise<void> {
  let app = await buildApp(config, createContext());
  const created = await app.inject({ method: 'POST', url: '/admin/v1/orgs', headers, payload: { slug: 'acme', name: 'Acme' } });
  if (created.statusCode !== 201) throw new Error(created.body);
  await app.close();
  let started = performance.now();
  await seed();
  const seedMs = Math.round(performance.now() - started);

  app = await buildApp(config, createContext());
  const runs: Array<{ ms: number; removed: Record<string, number> }> = [];
  try {
    for (let rep = 0; rep < REPS; rep++) {
      started = performance.now();
      const res = await app.inject({ method: 'POST', url: '/admin/v1/orgs/acme/contacts/erase', headers, payload: { identity: `email:user-${rep * 7 + 1}@example.com` } });
      if (res.statusCode !== 202) throw new Error(res.body);
      const { id } = res.json() as { id: string };
      for (;;) {
        const receipt = (await app.inject({ url: `/admin/v1/orgs/acme/erasures/${id}`, headers })).json() as { status: string; removed: Record<string, number> };
        if (receipt.status === 'done') {
          runs.push({ ms: Math.round(performance.now() - started), removed: receipt.removed });
          break;
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    }
  } finally {
    await app.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  const result = { events: EVENTS, contacts: CONTACTS, seedMs, erasureMs: runs.map((r) => r.ms), removed: runs[0]?.removed, at: new Date().toISOString() };
  console.log(JSON.stringify(result));
  mkdirSync(join(import.meta.dirname, 'results'), { recursive: true });
  writeFileSync(join(import.meta.dirname, 'results', 'erasure.json'), JSON.stringify(result, null, 2) + '\n');
}

await main();
