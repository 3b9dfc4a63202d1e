/**
 * What reading trigger SQL as Snowflake SQL adds to a check (issue 25: under 5 ms). Over the corpus
 * (test/fixtures/snowflake/corpus.json), on one in-memory database with an org's relations, as a checker
 * process has them: per query, the median time of the translation alone, and of the whole check
 * (checkSql) of the Snowflake source against the check of the DuckDB SQL it translates to.
 * Prints JSON. `npx tsx bench/snowflake-translate.ts [repetitions]`
 */
import { readFileSync } from 'node:fs';
import { LocalDatabase } from '../src/db/database.js';
import { orgSchemaSql } from '../src/storage/migrate.js';
import { checkSql, type QueryKind } from '../src/reactions/triggers/sql-guard.js';
import { translateSnowflake } from '../src/reactions/triggers/snowflake/translate.js';

const REPS = Number(process.argv[2] ?? 30);
const corpus = JSON.parse(readFileSync(new URL('../test/fixtures/snowflake/corpus.json', import.meta.url), 'utf8')) as {
  queries: Array<{ name: string; kind: QueryKind; sql: string; refused?: string; alternative?: string }>;
};

const db = await LocalDatabase.open(':memory:', { threads: 1 });
await db.exclusive(async (c) => {
  await c.run(`ATTACH ':memory:' AS acme`);
  await c.run('USE acme');
  for (const sql of orgSchemaSql()) await c.run(sql);
});

async function median(work: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < REPS; i++) {
    const start = process.hrtime.bigint();
    await work();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
}

const rows: Array<{ name: string; translateMs: number; checkSnowflakeMs: number; checkDuckdbMs: number; addedMs: number }> = [];
for (const q of corpus.queries) {
  const source = q.alternative ?? q.sql;
  await db.exclusive(async (c) => {
    const duckdb = (await checkSql(c, source, 'acme', q.kind)).sql;
    const translateMs = await median(() => translateSnowflake(c, source));
    const checkSnowflakeMs = await median(() => checkSql(c, source, 'acme', q.kind));
    const checkDuckdbMs = await median(() => checkSql(c, duckdb, 'acme', q.kind));
    rows.push({ name: q.name, translateMs, checkSnowflakeMs, checkDuckdbMs, addedMs: checkSnowflakeMs - checkDuckdbMs });
  });
}
await db.close();
const sorted = (key: 'translateMs' | 'addedMs') => rows.map((r) => r[key]).sort((a, b) => a - b);
const pick = (list: number[], p: number) => Number(list[Math.min(list.length - 1, Math.floor(list.length * p))]!.toFixed(3));
console.log(
  JSON.stringify(
    {
      queries: rows.length,
      repetitions: REPS,
      translateMs: { p50: pick(sorted('translateMs'), 0.5), p95: pick(sorted('translateMs'), 0.95), max: pick(sorted('translateMs'), 1) },
      addedToCheckMs: { p50: pick(sorted('addedMs'), 0.5), p95: pick(sorted('addedMs'), 0.95), max: pick(sorted('addedMs'), 1) },
      perQuery: rows.map((r) => ({ ...r, translateMs: Number(r.translateMs.toFixed(3)), checkSnowflakeMs: Number(r.checkSnowflakeMs.toFixed(3)), checkDuckdbMs: Number(r.checkDuckdbMs.toFixed(3)), addedMs: Number(r.addedMs.toFixed(3)) })),
    },
    null,
    1,
  ),
);
