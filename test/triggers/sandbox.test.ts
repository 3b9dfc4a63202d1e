/** The trigger SQL sandbox (SPEC 7): each refusal on its own, the reference SQL, cross-org reads, limits. */
import t, { type Test } from 'tap';
import { timestampTZValue } from '@duckdb/node-api';
import { bindPlaceholders } from '../../src/triggers/placeholders.js';
import { QueryFailed, runSandboxed } from '../../src/triggers/sandbox.js';
import { checkSql, type QueryKind, SqlRefused } from '../../src/triggers/sql-guard.js';
import { customEvent, startTestApp, type TestApp } from '../helpers/app.js';

const REFERENCE = `SELECT identity, identity_type, ts, event_type, event_id, event_raw
FROM acme.event_triggers
WHERE event_type = 'custom_booking_completed'
  AND ts > {cursor_start_time} AND ts <= {cursor_end_time};`;

async function setup(t: Test): Promise<TestApp> {
  const h = await startTestApp(t);
  const acme = await h.createOrg('acme');
  const beta = await h.createOrg('beta');
  t.equal((await h.collect(customEvent(acme.production))).statusCode, 200);
  t.equal((await h.collect(customEvent(acme.staging, { traits: { email: 'staging@example.com' } }))).statusCode, 200);
  t.equal((await h.collect(customEvent(beta.production, { traits: { email: 'beta-secret@example.com' } }))).statusCode, 200);
  await h.compacted();
  return h;
}

const check = (h: TestApp, sql: string, kind: QueryKind = 'trigger', org = 'acme') =>
  h.app.audience.db.exclusive((c) => checkSql(c, sql, org, kind));

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

t.test('placeholders are bound outside literals and comments only', async (t) => {
  t.equal(
    bindPlaceholders("SELECT '{cursor_start_time}' -- {cursor_end_time}\nWHERE ts > {cursor_start_time} AND ts <= {cursor_end_time}"),
    "SELECT '{cursor_start_time}' -- {cursor_end_time}\nWHERE ts > $cursor_start_time AND ts <= $cursor_end_time",
  );
  t.equal(bindPlaceholders('SELECT "{cursor_end_time}", $$ {cursor_end_time} $$, /* {cursor_end_time} */ 1'), 'SELECT "{cursor_end_time}", $$ {cursor_end_time} $$, /* {cursor_end_time} */ 1');
});

t.test('the reference trigger SQL runs unchanged, sees production events of its org only', async (t) => {
  const h = await setup(t);
  const checked = await check(h, REFERENCE);
  t.same(checked.parameters.sort(), ['cursor_end_time', 'cursor_start_time']);
  const rows = await h.app.audience.db.exclusive((c) => runSandboxed(c, 'acme', checked, window, 5000));
  t.equal(rows.length, 1);
  t.match(rows[0], { identity: 'ada@example.com', identity_type: 'email', event_type: 'custom_booking_completed' });
  t.match(JSON.parse(rows[0]!.event_raw as string), { properties: { eventName: 'booking_completed' } });

  const unqualified = await check(h, REFERENCE.replace('acme.event_triggers', 'event_triggers'));
  const again = await h.app.audience.db.exclusive((c) => runSandboxed(c, 'acme', unqualified, window, 5000));
  t.same(again.map((r) => r.event_id), rows.map((r) => r.event_id), 'unqualified event_triggers is the same org view');

  const empty = await h.app.audience.db.exclusive((c) =>
    runSandboxed(c, 'acme', checked, { cursor_start_time: window.cursor_end_time, cursor_end_time: window.cursor_end_time }, 5000),
  );
  t.equal(empty.length, 0, 'the window bounds the rows');
  t.same(await h.app.audience.db.all("SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal"), [], 'no temporary view outlives a run');
});

t.test('each forbidden construct is refused before anything runs', async (t) => {
  const h = await setup(t);
  const cases: [string, string, RegExp][] = [
    ['multi-statement', `${REFERENCE} SELECT 1;`, /exactly one SELECT statement is allowed, found 2/],
    ['DML', "DELETE FROM events WHERE org = 'acme'", /only a SELECT statement/],
    ['DDL', 'CREATE TABLE x AS SELECT 1', /only a SELECT statement/],
    ['SET', "SET memory_limit = '64GB'", /only a SELECT statement|does not parse/],
    ['PRAGMA', 'PRAGMA database_list', /only a SELECT statement|does not parse/],
    ['ATTACH', "ATTACH '/tmp/x.duckdb' AS x", /only a SELECT statement|does not parse/],
    ['COPY', "COPY (SELECT 1) TO '/tmp/out.csv'", /only a SELECT statement|does not parse/],
    ['INSTALL', 'INSTALL httpfs', /only a SELECT statement|does not parse/],
    ['LOAD', 'LOAD httpfs', /only a SELECT statement|does not parse/],
    ['read_csv', "SELECT * FROM read_csv('/etc/passwd')", /table function read_csv is not allowed/],
    ['read_text', "SELECT * FROM read_text('/etc/passwd')", /table function read_text is not allowed/],
    ['read_parquet', "SELECT * FROM read_parquet('https://example.com/x.parquet')", /table function read_parquet/],
    ['glob', "SELECT * FROM glob('/*')", /table function glob is not allowed/],
    ['sniff_csv', "SELECT * FROM sniff_csv('/etc/passwd')", /table function sniff_csv is not allowed/],
    ['query()', "SELECT * FROM query('SELECT * FROM orgs')", /table function query is not allowed/],
    ['duckdb_settings', 'SELECT * FROM duckdb_settings()', /table function duckdb_settings is not allowed/],
    ['replacement scan', "SELECT * FROM '/etc/passwd'", /relation \/etc\/passwd is not readable/],
    ['getenv', "SELECT identity, identity_type, ts, event_type, event_id, getenv('HOME') AS event_raw FROM event_triggers", /function getenv is not allowed/],
    ['current_setting', "SELECT current_setting('memory_limit')", /function current_setting is not allowed/],
    ['service table', 'SELECT * FROM partner_credentials', /relation partner_credentials is not readable/],
    ['main.events', 'SELECT * FROM main.events', /relation main.events is not readable/],
    ['other org', 'SELECT identity, identity_type, ts, event_type, event_id, event_raw FROM beta.event_triggers', /belongs to another org/],
    ['other org profiles', 'SELECT * FROM beta.profiles', /belongs to another org/],
    ['other org in a subquery', 'SELECT * FROM event_triggers WHERE identity IN (SELECT identity FROM beta.event_triggers)', /belongs to another org/],
    ['catalog-qualified', 'SELECT * FROM audience.main.events', /not readable/],
    ['CTE out of scope', 'SELECT * FROM (WITH events AS (SELECT 1) SELECT * FROM events), events', /relation events is not readable/],
    ['unknown parameter', 'SELECT identity, identity_type, ts, event_type, event_id, event_raw FROM event_triggers WHERE ts > $since', /parameter \$since is unknown/],
    ['wrong columns', 'SELECT identity, ts FROM event_triggers', /returns identity, identity_type, ts, event_type, event_id, event_raw first/],
    ['unknown column', 'SELECT identity, identity_type, ts, event_type, event_id, nope AS event_raw FROM event_triggers', /does not bind/],
    ['syntax', 'SELEC 1', /does not parse/],
  ];
  for (const [label, sql, reason] of cases) t.match(await refusal(h, sql), reason, label);
  t.match(await refusal(h, 'SELECT identity FROM event_triggers', 'segment'), /segment returns a column named email/);
  t.ok(await check(h, 'SELECT email_address AS email FROM profiles WHERE total_lifetime_value > 100', 'segment'));
  t.ok(await check(h, 'WITH e AS (SELECT * FROM event_triggers) SELECT identity, identity_type, ts, event_type, event_id, event_raw, e.properties FROM e', 'trigger'), 'CTEs and extra columns are fine');
  const [row] = await h.app.audience.db.all<{ n: bigint }>("SELECT count(*) AS n FROM events WHERE org = 'acme'");
  t.equal(row!.n, 2n, 'nothing was deleted by the refused DML');
});

t.test('a runaway query is interrupted with a clear error and the next one runs', async (t) => {
  const h = await setup(t);
  const slow = await check(h, 'SELECT identity, identity_type, ts, event_type, event_id, event_raw FROM event_triggers, range(100000000000) r WHERE r.range < 0');
  const error = await h.app.audience.db.exclusive((c) => runSandboxed(c, 'acme', slow, window, 200)).catch((e: unknown) => e);
  t.ok(error instanceof QueryFailed);
  t.match((error as Error).message, /longer than 200 ms and was interrupted/);
  const ok = await check(h, REFERENCE);
  t.equal((await h.app.audience.db.exclusive((c) => runSandboxed(c, 'acme', ok, window, 5000))).length, 1);
});

t.test('the instance refuses file access and configuration changes even outside the guard', async (t) => {
  const h = await setup(t);
  await t.rejects(h.app.audience.db.all("SELECT * FROM read_text('/etc/passwd')"), /file system operations are disabled|Permission/);
  await t.rejects(h.app.audience.db.run("SET enable_external_access = true"), /configuration has been locked|Cannot change/);
});
