/**
 * What one profile refresh costs in a large org: the query a refresh runs (profiles_for, read as JSON) over
 * an org database holding `--contacts` contacts, each with 3 orders, 1 send and 1 trait, for refreshes of
 * 1, 20, 200 and 2,000 contacts, with the org's DuckDB memory share (`--memory`, the default share of
 * DUCKDB_MEMORY_LIMIT 4GB over 16 open orgs). Times the query alone, in this process.
 *
 *   npx tsx bench/profile-refresh.ts [--contacts 1000000] [--memory 256MiB]
 *
 * Each refresh reads the five tables a profile draws on whole (~20 ms per million rows): see bench/README.md
 * "What a profile refresh costs in a large org" for the figures and the index design tried.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { listValue } from '@duckdb/node-api';
import { LocalDatabase } from '../src/db/database.js';
import { foldedThrough } from '../src/events/compaction/fold-contact-activity.js';
import { DESCRIBE_PROFILES, profileJsonSql } from '../src/events/profiles/profile-json.js';
import { PROFILES_OF } from '../src/events/profiles/profile-materializer.js';
import { applyOrgSchema } from '../src/storage/migrate.js';
import { writeLargeOrg } from '../test/helpers/large-org.js';
import { say } from './harness.js';

const { values } = parseArgs({ options: { contacts: { type: 'string', default: '1000000' }, memory: { type: 'string', default: '256MiB' } } });
const CONTACTS = Number(values.contacts);
const ROUNDS = 7;

const dir = mkdtempSync(join(tmpdir(), 'audience-refresh-'));
// Written in one transaction with DuckDB's default memory, then opened again with the org's share.
const file = join(dir, 'big.duckdb');
const writer = await LocalDatabase.open(file, { threads: 2 });
const started = performance.now();
try {
  await applyOrgSchema(writer);
  await writer.transaction((c) => writeLargeOrg(c, 'big', CONTACTS));
} finally {
  await writer.close();
}
say(`${CONTACTS.toLocaleString('en')} contacts written in ${((performance.now() - started) / 1000).toFixed(1)} s`);
const db = await LocalDatabase.open(file, { threads: 2, memoryLimit: values.memory });
try {
  const sql = profileJsonSql(await db.all(DESCRIBE_PROFILES), PROFILES_OF);
  if (sql === undefined) throw new Error('profiles_for has a column without exact JSON');
  const result: Record<string, { p50: number; max: number }> = {};
  for (const size of [1, 20, 200, 2_000]) {
    const times: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Other contacts each round, so no round reads what the one before left in a cache.
      const emails = Array.from({ length: size }, (_, i) => `c${(round * 7_919 + i * 104_729) % CONTACTS}@example.com`);
      const t0 = performance.now();
      await db.exclusive(async (c) => c.all(sql, ['big', listValue(emails), await foldedThrough(c)]));
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    result[size] = { p50: round1(times[ROUNDS >> 1]!), max: round1(times.at(-1)!) };
    say(`refresh of ${size} contacts: p50 ${result[size].p50} ms, max ${result[size].max} ms (${ROUNDS} rounds)`);
  }
  console.log(JSON.stringify({ contacts: CONTACTS, memory: values.memory, refreshMs: result }));
} finally {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
}

function round1(ms: number): number {
  return Math.round(ms * 10) / 10;
}
