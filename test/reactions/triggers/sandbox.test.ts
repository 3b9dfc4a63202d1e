/**
 * The trigger SQL sandbox (SPEC 7): each refusal on its own, the escapes hostile SQL tried (CTE shadowing,
 * statements in FROM, catalog functions), constructs DuckDB reads differently from what was meant, the
 * reference SQL, cross-org reads, result and time limits.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { timestampTZValue } from '@duckdb/node-api';
import { bindPlaceholders } from '../../../src/reactions/triggers/placeholders.js';
import { QueryFailed, runSandboxed, withSandbox } from '../../../src/reactions/triggers/sandbox.js';
import { type QueryKind, SqlRefused } from '../../../src/reactions/triggers/sql-guard.js';
import { customEvent, startTestApp, type TestApp, STORAGE_PROCESS } from '../../helpers/app.js';
import { asClientRetries } from '../../helpers/capacity.js';
import { scaled, waitFor } from '../../helpers/deadline.js';

const REFERENCE = `SELECT identity, identity_type, ts, event_type, event_id, event_raw
FROM acme.event_triggers
WHERE event_type = 'custom_booking_completed'
  AND ts > {cursor_start_time} AND ts <= {cursor_end_time};`;
const WINDOW = 'ts > {cursor_start_time} AND ts <= {cursor_end_time}';
const SIX = 'identity, identity_type, ts, event_type, event_id, event_raw';

async function setup(t: Test, config: Record<string, unknown> = {}): Promise<TestApp> {
  const h = await startTestApp(t, { config: { ...STORAGE_PROCESS, ...config } });
  const acme = await h.createOrg('acme');
  const beta = await h.createOrg('beta');
  t.equal((await h.collect(customEvent(acme.production))).statusCode, 200);
  t.equal((await h.collect(customEvent(acme.staging, { traits: { email: 'staging@example.com' } }))).statusCode, 200);
  t.equal((await h.collect(customEvent(beta.production, { traits: { email: 'beta-secret@example.com' } }))).statusCode, 200);
  await h.compacted();
  return h;
}

/**
 * One app (and storage process) for the subtests that only read acme's two events and beta's one, and
 * write nothing another of them reads: a storage process takes seconds to start under tsx. Subtests
 * with their own TRIGGER_TIMEOUT_MS, or that add events, start their own.
 */
let shared!: TestApp;
t.before(async () => {
  shared = await setup(t);
});

const check = (h: TestApp, sql: string, kind: QueryKind = 'trigger', org = 'acme') => h.app.storageRole!.triggers.check(sql, org, kind);

async function refusal(h: TestApp, sql: string, kind: QueryKind = 'trigger'): Promise<string> {
  try {
    await check(h, sql, kind);
  } catch (error) {
    if (error instanceof SqlRefused) return error.reason;
    throw error;
  }
  throw new Error(`not refused: ${sql}`);
}

const window = { cursor_start_time: timestampTZValue(0n), cursor_end_time: timestampTZValue(BigInt(Date.now() + 60_000) * 1000n) };

async function run(h: TestApp, sql: string, options: { maxRows?: number; timeoutMs?: number; org?: string } = {}) {
  const checked = await check(h, sql, 'trigger', options.org ?? 'acme');
  return withSandbox(h.db(options.org ?? 'acme'), options.timeoutMs ?? 5000, (c) => runSandboxed(c, checked, window, options.maxRows ?? 1000));
}

t.test('placeholders are bound outside literals and comments only', async (t) => {
  t.equal(
    bindPlaceholders("SELECT '{cursor_start_time}' -- {cursor_end_time}\nWHERE ts > {cursor_start_time} AND ts <= {cursor_end_time}"),
    "SELECT '{cursor_start_time}' -- {cursor_end_time}\nWHERE ts > $cursor_start_time AND ts <= $cursor_end_time",
  );
  t.equal(bindPlaceholders('SELECT "{cursor_end_time}", $$ {cursor_end_time} $$, /* {cursor_end_time} */ 1'), 'SELECT "{cursor_end_time}", $$ {cursor_end_time} $$, /* {cursor_end_time} */ 1');
});

t.test('the reference trigger SQL runs unchanged, sees production events of its org only', async (t) => {
  const h = shared;
  const checked = await check(h, REFERENCE);
  t.same(checked.parameters.sort(), ['cursor_end_time', 'cursor_start_time']);
  const { rows } = await run(h, REFERENCE);
  t.equal(rows.length, 1);
  t.match(rows[0], { identity: 'ada@example.com', identity_type: 'email', event_type: 'custom_booking_completed' });
  t.match(JSON.parse(rows[0]!.event_raw as string), { properties: { eventName: 'booking_completed' } });
  const again = await run(h, REFERENCE.replace('acme.event_triggers', 'event_triggers'));
  t.same(again.rows.map((r) => r.event_id), rows.map((r) => r.event_id), 'unqualified event_triggers is the same org view');
  const empty = await withSandbox(h.db(), 5000, (c) =>
    runSandboxed(c, checked, { cursor_start_time: window.cursor_end_time, cursor_end_time: window.cursor_end_time }, 10),
  );
  t.equal(empty.rows.length, 0, 'the window bounds the rows');
  t.same(await h.db().all('SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal'), [], 'no temporary view outlives a run');
});

t.test('each forbidden construct is refused before anything runs', async (t) => {
  const h = shared;
  const cases: [string, string, RegExp][] = [
    ['multi-statement', `${REFERENCE} SELECT 1;`, /exactly one SELECT statement is allowed, found 2/],
    ['DML', "DELETE FROM events WHERE org = 'acme'", /only a plain SELECT statement/],
    ['DDL', 'CREATE TABLE x AS SELECT 1', /only a plain SELECT statement/],
    ['SET', "SET memory_limit = '64GB'", /only a plain SELECT statement|does not parse/],
    ['PRAGMA', 'PRAGMA database_list', /only a plain SELECT statement|does not parse/],
    ['ATTACH', "ATTACH '/tmp/x.duckdb' AS x", /only a plain SELECT statement|does not parse/],
    ['COPY', "COPY (SELECT 1) TO '/tmp/out.csv'", /only a plain SELECT statement|does not parse/],
    ['INSTALL', 'INSTALL httpfs', /only a plain SELECT statement|does not parse/],
    ['LOAD', 'LOAD httpfs', /only a plain SELECT statement|does not parse/],
    ['read_csv', "SELECT * FROM read_csv('/etc/passwd')", /table function read_csv is not allowed/],
    ['read_text', "SELECT * FROM read_text('/etc/passwd')", /table function read_text is not allowed/],
    ['read_parquet', "SELECT * FROM read_parquet('https://example.com/x.parquet')", /table function read_parquet/],
    ['glob', "SELECT * FROM glob('/*')", /table function glob is not allowed/],
    ['query()', "SELECT * FROM query('SELECT * FROM orgs')", /table function query is not allowed/],
    ['duckdb_settings', 'SELECT * FROM duckdb_settings()', /table function duckdb_settings is not allowed/],
    ['replacement scan', "SELECT * FROM '/etc/passwd'", /relation \/etc\/passwd is not readable/],
    ['org database file', "SELECT * FROM 'data/audience.duckdb'", /is not readable/],
    ['getenv', `SELECT identity, identity_type, ts, event_type, event_id, getenv('HOME') AS event_raw FROM event_triggers WHERE ${WINDOW}`, /function getenv is not allowed/],
    ['current_setting', "SELECT current_setting('memory_limit')", /function current_setting is not allowed/],
    ['service table', 'SELECT * FROM partner_credentials', /relation partner_credentials is not readable/],
    ['main.events', 'SELECT * FROM main.events', /relation main.events is not readable/],
    ['temp-qualified view', `SELECT ${SIX} FROM temp.main.event_triggers WHERE ${WINDOW}`, /is not readable/],
    ['other org', `SELECT ${SIX} FROM beta.event_triggers WHERE ${WINDOW}`, /belongs to another org/],
    ['other org profiles', 'SELECT * FROM beta.profiles', /belongs to another org/],
    ['other org in a subquery', 'SELECT * FROM event_triggers WHERE identity IN (SELECT identity FROM beta.event_triggers)', /belongs to another org/],
    ['catalog-qualified', 'SELECT * FROM audience.main.events', /not readable/],
    ['CTE out of scope', 'SELECT * FROM (WITH events AS (SELECT 1) SELECT * FROM events), events', /relation events is not readable/],
    // The reproduction: a CTE named like a service table reads the table inside its own body.
    ['CTE shadowing a secret table', "WITH partner_credentials AS (SELECT * FROM partner_credentials) SELECT partner_id AS identity, org AS identity_type, created_at AS ts, environment AS event_type, secret_hash AS event_id, '{}' AS event_raw FROM partner_credentials", /relation partner_credentials is not readable/],
    ['CTE shadowing events', `WITH events AS (SELECT * FROM events) SELECT * FROM events`, /relation events is not readable/],
    ['CTE shadowing tokens', 'WITH audience_tokens AS (SELECT * FROM audience_tokens) SELECT * FROM audience_tokens', /relation audience_tokens is not readable/],
    ['CTE shadowing orgs, nested', 'WITH a AS (WITH orgs AS (SELECT * FROM orgs) SELECT * FROM orgs) SELECT * FROM a', /relation orgs is not readable/],
    ['CTE reading a later CTE', 'WITH a AS (SELECT * FROM b), b AS (SELECT 1 AS x) SELECT * FROM a', /relation b is not readable/],
    ['recursive CTE base reading itself', 'WITH RECURSIVE events AS (SELECT * FROM events UNION ALL SELECT * FROM events) SELECT * FROM events', /relation events is not readable/],
    ['SHOW ALL TABLES in FROM', 'SELECT * FROM (SHOW ALL TABLES)', /SHOW, DESCRIBE and SUMMARIZE is not allowed/],
    ['SHOW TABLES', 'SELECT * FROM (SHOW TABLES)', /SHOW, DESCRIBE and SUMMARIZE is not allowed/],
    ['DESCRIBE in FROM', 'SELECT * FROM (DESCRIBE partner_credentials)', /SHOW, DESCRIBE and SUMMARIZE is not allowed/],
    ['SUMMARIZE in FROM', 'SELECT * FROM (SUMMARIZE event_triggers)', /SHOW, DESCRIBE and SUMMARIZE is not allowed/],
    ['PIVOT', 'SELECT * FROM (PIVOT event_triggers ON event_type USING count(*))', /only a plain SELECT|not allowed/],
    ['information_schema', 'SELECT * FROM information_schema.tables', /not readable/],
    ['duckdb_tables()', 'SELECT * FROM duckdb_tables()', /table function duckdb_tables is not allowed/],
    ['duckdb_databases()', 'SELECT * FROM duckdb_databases()', /table function duckdb_databases is not allowed/],
    ['pg_catalog macro', "SELECT pg_get_viewdef(0)", /function pg_get_viewdef is not allowed|function .* is not allowed/],
    ['qualified function', "SELECT pg_catalog.pg_typeof(1)", /call functions unqualified|not allowed/],
    ['service macro', 'SELECT folded_through()', /function folded_through is not allowed/],
    ['service table macro', 'SELECT * FROM profiles_for(NULL, NULL, NULL)', /table function profiles_for is not allowed/],
    ['lateral to a service table', 'SELECT * FROM event_triggers e, LATERAL (SELECT * FROM orgs) o', /relation orgs is not readable/],
    ['set operation', `SELECT ${SIX} FROM event_triggers WHERE ${WINDOW} UNION ALL SELECT partner_id, org, created_at, environment, secret_hash, '{}' FROM partner_credentials`, /relation partner_credentials is not readable/],
    ['scalar subquery', "SELECT (SELECT max(secret_hash) FROM partner_credentials)", /relation partner_credentials is not readable/],
    ['EXISTS', 'SELECT 1 WHERE EXISTS (SELECT 1 FROM audience_tokens)', /relation audience_tokens is not readable/],
    ['unknown parameter', `SELECT ${SIX} FROM event_triggers WHERE ts > $since`, /parameter \$since is unknown/],
    ['wrong columns', 'SELECT identity, ts FROM event_triggers WHERE ' + WINDOW, /returns identity, identity_type, ts, event_type, event_id, event_raw first/],
    ['unknown column', `SELECT identity, identity_type, ts, event_type, event_id, nope AS event_raw FROM event_triggers WHERE ${WINDOW}`, /does not bind/],
    ['syntax', 'SELEC 1', /does not parse/],
  ];
  for (const [label, sql, reason] of cases) t.match(await refusal(h, sql), reason, label);
  t.match(await refusal(h, 'SELECT identity FROM event_triggers', 'segment'), /segment returns a column named email/);
  t.ok(await check(h, 'SELECT email_address AS email FROM profiles WHERE total_lifetime_value > 100', 'segment'));
  t.ok(await check(h, `WITH e AS (SELECT * FROM event_triggers WHERE ${WINDOW}) SELECT ${SIX}, e.properties FROM e`), 'CTEs and extra columns are fine');
  t.ok(await check(h, `WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT ${SIX} FROM event_triggers, r WHERE ${WINDOW}`), 'a recursive CTE reads itself in its recursive part');
  t.ok(await check(h, `WITH event_triggers AS (SELECT * FROM event_triggers WHERE ${WINDOW}) SELECT ${SIX} FROM event_triggers`), 'a CTE named like the org view reads the org view');
  t.ok(await check(h, `SELECT ${SIX} FROM event_triggers WHERE ${WINDOW} AND identity IN (SELECT email_address FROM profiles) AND event_id IN (SELECT * FROM (VALUES ('a'), ('b')))`), 'subqueries and VALUES are fine');
  const [row] = await h.db().all<{ n: bigint }>("SELECT count(*) AS n FROM events WHERE org = 'acme'");
  t.equal(row!.n, 2n, 'nothing was deleted by the refused DML');
});

t.test('the issue reproduction: no PUT, file or preview of hostile SQL reaches another org or a service table', async (t) => {
  const h = shared;
  const leak =
    "WITH partner_credentials AS (SELECT * FROM partner_credentials) SELECT partner_id AS identity, org AS identity_type, created_at AS ts, environment AS event_type, secret_hash AS event_id, '{}' AS event_raw FROM partner_credentials";
  const put = await h.admin('PUT', '/admin/v1/orgs/acme/triggers/leak', { sql: leak });
  t.equal(put.statusCode, 422);
  t.match(put.json(), { code: 'invalid_trigger', reason: /partner_credentials is not readable/ });
  const preview = await h.admin('POST', '/admin/v1/orgs/acme/triggers/leak/preview', { sql: 'SELECT * FROM (SHOW ALL TABLES)' });
  t.equal(preview.statusCode, 422);
  t.notMatch(preview.body, /beta|secret_hash|partner_credentials \(/);
  const dir = join(h.dataDir, 'queries', 'acme');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'leak2.sql'), leak.replaceAll('partner_credentials', 'audience_tokens').replace('partner_id', 'id').replace('secret_hash', 'token_hash').replace('environment', 'last3'));
  await h.app.storageRole!.triggers.scan();
  t.equal(h.app.storageRole!.triggers.live('acme', 'trigger', 'leak2'), undefined, 'a committed file is refused too');
});

t.test('constructs DuckDB reads differently are refused with the DuckDB way, or mean what they say', async (t) => {
  const h = shared;
  const advice = await refusal(h, `-- dialect: duckdb\nSELECT identity, identity_type, ts, event_type, event_id, event_raw:properties FROM event_triggers WHERE ${WINDOW}`);
  t.match(advice, /prefix alias.*\(event_raw->>'\$\.properties\.city'\) = 'Lisbon'/, 'Snowflake path syntax read as DuckDB SQL');
  const advised = /e\.g\. (\(event_raw->>'\$\.properties\.city'\) = 'Lisbon')/.exec(advice)![1]!;
  t.ok(await check(h, `SELECT ${SIX} FROM event_triggers WHERE event_type = 'custom_booking_completed' AND ${advised} AND ${WINDOW}`), 'the advised form is accepted');
  t.match(await refusal(h, `-- dialect: duckdb\nSELECT ${SIX}, e:properties FROM event_triggers WHERE ${WINDOW}`), /prefix alias/);
  t.match(await refusal(h, `SELECT ${SIX}, e: properties FROM event_triggers WHERE ${WINDOW}`), /prefix alias/, 'a colon and a space is no path: still a prefix alias');
  const snowflake = await check(h, `SELECT ${SIX} FROM event_triggers WHERE event_raw:properties.properties.city = 'Lisbon' AND ${WINDOW}`);
  t.equal(snowflake.dialect, 'snowflake', 'without a directive a colon path is Snowflake SQL');
  t.match(
    await refusal(h, `SELECT ${SIX} FROM event_triggers WHERE event_type = 'custom_booking_completed' AND event_raw->'properties'->>'eventName' = 'booking_completed' AND ${WINDOW}`),
    /bind more loosely than AND.*\(j->'k'->>'c'\) = 'y'/,
  );
  t.match(await refusal(h, `SELECT ${SIX} FROM event_triggers WHERE ts > {cursor_start_time}`), /add \{cursor_end_time\}/);
  t.match(await refusal(h, `SELECT ${SIX} FROM event_triggers`), /add \{cursor_start_time\} and \{cursor_end_time\}/);
  t.ok(await check(h, 'SELECT email_address AS email FROM profiles', 'segment'), 'a segment needs no window');

  // Colons that are not prefix aliases, and JSON access written the DuckDB way.
  const fine = `SELECT ${SIX}, list_transform([1, 2], lambda x: x + 1) AS l, [1, 2, 3][1:2] AS s, {'a': 1} AS st, ts::VARCHAR AS t,
    event_raw->>'$.properties.properties.city' AS city
    FROM event_triggers WHERE (event_raw->'properties'->>'eventName') = 'booking_completed' AND ${WINDOW}`;
  const { rows } = await run(h, fine);
  t.equal(rows.length, 1);
  t.equal(rows[0]!.city, 'Lisbon');

  const upper = await run(h, `SELECT identity AS IDENTITY, identity_type AS Identity_Type, ts, event_type, event_id, event_raw FROM event_triggers WHERE ${WINDOW}`);
  t.equal(upper.rows[0]!.identity, 'ada@example.com', 'column names compare case-insensitively and rows carry the canonical names');
});

t.test('a result over the row limit is cut, streamed, and the process stays up', async (t) => {
  const h = shared;
  const huge = `SELECT ${SIX} FROM event_triggers, range(20000000) WHERE ${WINDOW}`;
  const page = await run(h, huge, { maxRows: 1000, timeoutMs: 20_000 });
  t.equal(page.rows.length, 1000);
  t.equal(page.truncated, true);
  await h.admin('PUT', '/admin/v1/orgs/acme/triggers/huge', { sql: huge });
  const preview = await h.admin('POST', '/admin/v1/orgs/acme/triggers/huge/preview', { limit: 50 });
  t.equal(preview.statusCode, 200);
  t.match(preview.json(), { count: 50, truncated: true });
  t.equal(preview.json().rows.length, 50);
  t.equal((await h.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200, 'DuckDB still answers');
});

t.test('a runaway query is interrupted with a clear error and the next one runs', async (t) => {
  const h = shared;
  // Cheap on the check's sample row (one range value), a runaway on real rows: the check passes it, the run stops it.
  const slow = `SELECT ${SIX} FROM event_triggers, range(CASE WHEN event_type = 'custom_sample_event' THEN 1 ELSE 100000000000 END) r WHERE r.range < 0 AND ${WINDOW}`;
  const error = await run(h, slow, { timeoutMs: 200 }).catch((e: unknown) => e);
  t.ok(error instanceof QueryFailed);
  t.match((error as Error).message, /longer than 200 ms and was interrupted/);
  t.equal((await run(h, REFERENCE)).rows.length, 1);
});

/**
 * A first check starts the org's checker process; on a loaded machine that start alone can outlast the
 * deadline: a 503 (sandbox_busy) while waiting for capacity, or a refusal as an overrun (the checker is then
 * replaced). A valid query saved first, tried again until it is taken, leaves a warm checker for what follows.
 */
async function warmChecker(t: Test, h: TestApp): Promise<void> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const res = await h.admin('PUT', '/admin/v1/orgs/acme/segments/warm', { sql: 'SELECT email_address AS email FROM profiles' });
    if (res.statusCode === 200) return;
    t.ok(res.statusCode === 503 || /checking the query took longer than/.test(res.json().reason ?? ''), `busy or over the deadline, not refused for what it says: ${res.body}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  t.fail('the checker never took a valid query');
}

t.test('a check that cannot be interrupted answers at its deadline and does not hold compaction', async (t) => {
  // A deadline a warm checker meets under load, and a call of ~2.5 s on a quiet machine that overruns it.
  const h = await setup(t, { triggerTimeoutMs: 1000 });
  await warmChecker(t, h);
  // Preparing folds this constant (a query without parameters is planned at once): one levenshtein call
  // that DuckDB cannot interrupt, seconds of work.
  const slow = "levenshtein(repeat('a', 40000), repeat('b', 40000))";
  // The overrun replaces the checker; under load its replacement may still be starting (503 sandbox_busy): asked again then.
  const put = await asClientRetries(() => h.admin('PUT', '/admin/v1/orgs/acme/segments/slow_check', { sql: `SELECT email_address AS email, ${slow} AS d FROM profiles` }));
  t.equal(put.statusCode, 422, put.body);
  t.match(put.json().reason, /checking the query took longer than 1000 ms \(TRIGGER_TIMEOUT_MS\)/);
  // A trigger with its placeholders is planned when it runs; the check runs it once on a sample row, so
  // it is refused there, at its deadline, before the org's database is touched.
  const preview = await asClientRetries(() => h.admin('POST', '/admin/v1/orgs/acme/triggers/x/preview', { sql: `SELECT ${SIX}, ${slow} AS d FROM event_triggers WHERE ${WINDOW}` }));
  t.equal(preview.statusCode, 422, preview.body);
  t.match(preview.json(), { code: 'query_budget_exceeded', budget: 'time', reason: /checking the query took longer than 1000 ms/ });
  // The abandoned check is still running on its own connection: compaction and reads go on meanwhile.
  const cred = (await h.admin('POST', '/admin/v1/orgs/acme/credentials/production/rotate')).json().credentials;
  t.equal((await h.collect(customEvent(cred, { messageId: 'during-check' }))).statusCode, 200);
  await h.compacted();
  const samples = (await h.admin('GET', '/admin/v1/orgs/acme/events/samples?env=production')).json().events;
  t.ok(samples.some((e: { messageId: string }) => e.messageId === 'during-check'), 'compacted while the check still ran');
});

t.test('a check its deadline cut short is never an acceptance', async (t) => {
  const h = await setup(t, { triggerTimeoutMs: 300 });
  // Slow on the sample row too: the interrupt ends the sample run with an error, and an error on the
  // sample row alone would pass a query. After the deadline it is an overrun: refused, or busy.
  const put = await h.admin('PUT', '/admin/v1/orgs/acme/triggers/endless', { sql: `SELECT ${SIX} FROM event_triggers, range(100000000000) r WHERE r.range < 0 AND ${WINDOW}` });
  t.ok(put.statusCode === 422 || put.statusCode === 503, `refused or busy, not saved: ${put.statusCode}`);
  if (put.statusCode === 422) t.match(put.json().reason, /checking the query took longer than 300 ms/);
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/triggers/endless')).json().liveVersion ?? null, null, 'no live version');
});

t.test('the instance refuses file access and configuration changes even outside the guard', async (t) => {
  const h = shared;
  await t.rejects(h.db().all("SELECT * FROM read_text('/etc/passwd')"), /file system operations are disabled|Permission/);
  await t.rejects(h.db().run('SET enable_external_access = true'), /configuration has been locked|Cannot change/);
});

t.test("a preview reads on its own connection: the org's, held by a compaction batch, does not hold it up", async (t) => {
  const h = shared;
  t.equal((await h.admin('PUT', '/admin/v1/orgs/acme/triggers/held', { sql: REFERENCE })).statusCode, 200);
  // The org's connection held, as a compaction batch holds it (after a storage restart, one after another
  // for seconds): the preview's window and rows come from its own session, at once.
  let release!: () => void;
  let held = false;
  const holding = h.db().exclusive(() => new Promise<void>((resolve) => ((held = true), (release = resolve))));
  await waitFor(() => held, { what: "the org's connection held" });
  // Released after 30 s at the latest, so a preview that waits for it (as before) fails rather than hangs.
  let releasedForIt = false;
  const safety = setTimeout(() => ((releasedForIt = true), release()), scaled(30_000));
  try {
    const preview = await h.admin('POST', '/admin/v1/orgs/acme/triggers/held/preview', {});
    t.equal(preview.statusCode, 200, preview.body.slice(0, 300));
    t.equal(preview.json().count, 1, 'the org event, in a window ending at its newest visible event');
    const diff = await h.admin('POST', '/admin/v1/orgs/acme/triggers/held/diff', { sql: REFERENCE });
    t.equal(diff.statusCode, 200, diff.body.slice(0, 300));
  } finally {
    clearTimeout(safety);
    release();
    await holding;
  }
  t.notOk(releasedForIt, "answered while the org's connection was still held");
});
