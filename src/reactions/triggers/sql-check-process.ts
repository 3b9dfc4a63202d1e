/**
 * A checker process (sql-checker.ts starts and supervises it): checks one trigger or segment SQL at a
 * time (sql-guard.ts) against an org's relations in an in-memory database, where nothing of any org's
 * data exists, then runs it once over one sample row (pipelines/check_sample.sql). Checking parses and
 * prepares the SQL, preparing folds constant expressions, and a row may cost what the SQL's author likes
 * (`len(range(50000000))` took 2.5 GB and seconds; a levenshtein of two long strings, minutes). Here
 * that cost is bounded by this process's address space (the org's memory share) and by being killed at
 * its deadline, and it fails only this check: the storage process, and every other org, never see it.
 * The sample run judges cost only: a query that fails on the sample row for any other reason (a cast
 * the sample's values do not fit) passes, as it may well run on real rows.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalDatabase, tsParam } from '../../db/database.js';
import { pipelinesDir } from '../../core/paths.js';
import { orgSchemaSql } from '../../storage/migrate.js';
import { makeProfilesView, type ProfileColumn } from '../../events/profiles/profiles-view.js';
import type { Sql } from '../../db/sql.js';
import { OUT_OF_MEMORY, QueryFailed, runSandboxed, windowOf } from './sandbox.js';
import { type CheckedSql, checkSql, SqlRefused } from './sql-guard.js';
import type { CheckerReply, CheckerRequest } from './sql-checker-protocol.js';
import { liveWithParent } from '../../core/spawn-process.js';

/** Orgs whose relations stay attached between checks (each is a few tables of one row, and views). */
const ORGS_KEPT = 32;
const SAMPLE_ROWS = readFileSync(join(pipelinesDir, 'check_sample.sql'), 'utf8')
  .split(/;\s*\n/)
  .filter((statement) => /\bINSERT\b/.test(statement));
/** The sample run's window: every visible_at there is. */
const EVERYTHING = windowOf(0n, BigInt(Date.UTC(2100, 0, 1)) * 1000n);
/** Where the connection rests between checks: not an org slug (those start with a letter), so every org, `memory` included, gets a catalog of its own. */
const HOME_CATALOG = '_checker';

let db: LocalDatabase | undefined;
/** The connection of the check running now, for an interrupt. */
let current: Sql | undefined;
/** Attached orgs, least recently used first. */
const attached: string[] = [];

const post = (reply: CheckerReply): void => void process.send!(reply);

async function checkFor(request: Extract<CheckerRequest, { type: 'check' }>): Promise<CheckerReply> {
  const { id, org, kind, source, columns } = request;
  try {
    const checked = await db!.exclusive(async (c) => {
      current = c;
      try {
        await useOrg(c, org, columns);
        const checked = await checkSql(c, source, org, kind);
        await runOnSample(c, checked);
        return checked;
      } finally {
        current = undefined;
      }
    });
    return { type: 'checked', id, checked };
  } catch (error) {
    if (error instanceof SqlRefused) return { type: 'refused', id, reason: error.reason, ...(error.budget ? { budget: error.budget } : {}) };
    return { type: 'failed', id, message: (error as Error).message.split('\n')[0]! };
  }
}

/** One run over the sample rows: refused only for what it costs (see above). */
async function runOnSample(c: Sql, checked: CheckedSql): Promise<void> {
  try {
    await runSandboxed(c, checked, EVERYTHING, 1);
  } catch (error) {
    if (error instanceof QueryFailed && OUT_OF_MEMORY.test(error.reason)) {
      throw new SqlRefused(`running the query once, on one sample row, needs more memory than its org's share: ${error.reason}`, 'memory');
    }
  }
}

/**
 * Makes the org's relations (sample rows only) the connection's default catalog, named after the org as
 * in its own database, its `profiles` with the org's custom columns.
 */
async function useOrg(c: Sql, org: string, columns: readonly ProfileColumn[]): Promise<void> {
  const at = attached.indexOf(org);
  if (at !== -1) {
    attached.splice(at, 1);
    attached.push(org);
    await c.run(`USE ${quoted(org)}`);
    await withColumns(c, org, columns);
    return;
  }
  if (attached.length >= ORGS_KEPT) await detach(c, attached.shift()!);
  try {
    await c.run(`ATTACH ':memory:' AS ${quoted(org)}`);
    await c.run(`USE ${quoted(org)}`);
    for (const sql of orgSchemaSql()) await c.run(sql);
    const now = tsParam(Date.now());
    for (const sql of SAMPLE_ROWS) await c.run(sql, sql.includes('$now') ? { org, now } : { org });
    await withColumns(c, org, columns);
  } catch (error) {
    // Half made (out of memory, say): gone, so the next check of this org starts clean.
    await detach(c, org).catch(() => undefined);
    throw error;
  }
  attached.push(org);
}

/** The custom columns each attached org's `profiles` has now. */
const columnsOf = new Map<string, string>();

async function withColumns(c: Sql, org: string, columns: readonly ProfileColumn[]): Promise<void> {
  const key = JSON.stringify(columns);
  if ((columnsOf.get(org) ?? '[]') === key) return;
  await makeProfilesView(c, columns);
  columnsOf.set(org, key);
}

async function detach(c: Sql, org: string): Promise<void> {
  columnsOf.delete(org);
  await c.run(`USE ${quoted(HOME_CATALOG)}`);
  await c.run(`DETACH DATABASE IF EXISTS ${quoted(org)}`);
}

/** The in-memory database's own catalog is named `memory`, a valid slug: it makes way for a home catalog. */
async function openDatabase(memoryLimit: string): Promise<LocalDatabase> {
  const opened = await LocalDatabase.open(':memory:', { memoryLimit, threads: 1 });
  await opened.exclusive(async (c) => {
    await c.run(`ATTACH ':memory:' AS ${quoted(HOME_CATALOG)}`);
    await c.run(`USE ${quoted(HOME_CATALOG)}`);
    await c.run('DETACH DATABASE memory');
  });
  return opened;
}

/** Org slugs are `[a-z][a-z0-9_]*` (checked when an org is created); quoted all the same. */
function quoted(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

// An exit without DuckDB's close is safe: its WAL is replayed at the next open.
liveWithParent();

process.on('message', (message: CheckerRequest) => {
  switch (message.type) {
    case 'init':
      openDatabase(message.memoryLimit).then(
        (opened) => {
          db = opened;
          post({ type: 'ready' });
        },
        (error: Error) => process.send!({ type: 'failed', id: 0, message: error.message } satisfies CheckerReply, () => process.exit(1)),
      );
      return;
    case 'check':
      void checkFor(message).then(post);
      return;
    case 'interrupt':
      current?.interrupt();
      return;
  }
});
