/**
 * The scenario of test/crash/log-behind.test.ts and log-lost.test.ts: the real service (a child process)
 * takes events of two orgs, goes down, its log is damaged, and it starts again; every event acknowledged
 * after the restart must be in its org's database, and one error line must say the log was behind.
 */
import { readdir, readFile, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import type { Test } from 'tap';
import { LocalDatabase } from '../../src/db/database.js';
import { type Credential, type ServerProcess, createOrgOverHttp, spawnServer, waitForCompaction } from './server-process.js';

const SLUGS = ['behind_a', 'behind_b'] as const;
/** Records before the damage and events after it: enough that, numbered from the kept part again, every new record would sit at or below both orgs' positions. */
const BEFORE = 40;
const AFTER = 30;

type Creds = Record<(typeof SLUGS)[number], Credential>;

/** One event per request, sent one after another: one log record each. Returns the ids answered 200. */
async function send(server: ServerProcess, creds: Creds, prefix: string, count: number): Promise<string[]> {
  const acked: string[] = [];
  for (let i = 0; i < count; i++) {
    const slug = SLUGS[i % SLUGS.length]!;
    const messageId = `${prefix}-${slug}-${i}`;
    const res = await fetch(`${server.url}/http/v1/collect`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        ...creds[slug],
        clientId: `c-${i}`,
        sentAt: Date.now(),
        type: 'track',
        event: 'custom',
        messageId,
        properties: { eventName: 'booked', properties: { n: i } },
        traits: { email: `u${i}@example.com` },
      }),
    });
    await res.arrayBuffer();
    if (res.status === 200) acked.push(messageId);
  }
  return acked;
}

/** Waits for both orgs' sentinels; says whether they arrived (a skipped sentinel never does). */
async function drained(server: ServerProcess, creds: Creds, timeoutMs: number): Promise<boolean> {
  try {
    for (const slug of SLUGS) await waitForCompaction(server.url, slug, creds[slug], timeoutMs);
    return true;
  } catch {
    return false;
  }
}

/** The ids with `prefix` stored in each org's database (the service stopped). */
async function stored(dataDir: string, prefix: string): Promise<Set<string>> {
  const ids = new Set<string>();
  for (const slug of SLUGS) {
    const db = await LocalDatabase.open(join(dataDir, 'orgs', `${slug}.duckdb`));
    const rows = await db.all<{ message_id: string }>('SELECT message_id FROM events WHERE starts_with(message_id, $1)', [`${prefix}-${slug}-`]);
    await db.close();
    for (const row of rows) ids.add(row.message_id);
  }
  return ids;
}

/** Cuts the embedded log's last segment back to its first `keep` records. */
export async function cutTail(logDir: string, keep: number): Promise<void> {
  const file = join(logDir, (await readdir(logDir)).filter((name) => name.endsWith('.log')).sort().at(-1)!);
  const bytes = await readFile(file);
  let offset = 0;
  for (let i = 0; i < keep; i++) offset += bytes.readUInt32LE(offset);
  await truncate(file, offset);
}

export interface Scenario {
  env?: Record<string, string>;
  /** How the service goes down before the damage. */
  down: 'stop' | 'kill9';
  /** Runs while the service is up, after the first events (e.g. to keep a copy of the log). */
  midway?: (server: ServerProcess, dataDir: string) => Promise<ServerProcess>;
  damage: (dataDir: string) => Promise<void>;
  /** The log line the restarted service writes. */
  line: RegExp;
}

export async function lostRecords(t: Test, dataDir: string, scenario: Scenario): Promise<void> {
  const env = { DATA_DIR: dataDir, ...scenario.env };
  let server = await spawnServer(t, env);
  const creds = {} as Creds;
  for (const slug of SLUGS) creds[slug] = await createOrgOverHttp(server.url, slug);
  t.equal((await send(server, creds, 'early', BEFORE / 2)).length, BEFORE / 2);
  t.ok(await drained(server, creds, 30_000), 'compacted before the damage');
  if (scenario.midway) server = await scenario.midway(server, dataDir);
  t.equal((await send(server, creds, 'late', BEFORE / 2)).length, BEFORE / 2);
  t.ok(await drained(server, creds, 30_000), 'compacted before the damage');
  await (scenario.down === 'stop' ? server.stop() : server.kill9());

  await scenario.damage(dataDir);
  server = await spawnServer(t, env);
  const acked = await send(server, creds, 'after', AFTER);
  t.equal(acked.length, AFTER, 'every event after the restart acknowledged');
  // Only bounds a hang: a start listens while compaction loads its state, and a loaded machine took over 10 s.
  const caughtUp = await drained(server, creds, 60_000);
  const log = server.stderr();
  await server.stop();

  const have = await stored(dataDir, 'after');
  const missing = acked.filter((id) => !have.has(id));
  t.same(missing, [], `every event acknowledged after the restart is compacted (${acked.length - missing.length} of ${acked.length})`);
  t.ok(caughtUp, 'and compaction caught up with the sentinels');
  t.match(log, scenario.line, 'one error line says the log was behind and how many positions were skipped');
}

export const behindLine = (log: string, head: string) =>
  new RegExp(`"level":50.*${log}[^"]* was behind the org databases: it ends at position ${head} but they may hold up to \\d+ .*skipping \\d+ positions`);
