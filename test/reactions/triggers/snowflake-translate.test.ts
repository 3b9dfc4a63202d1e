/**
 * Issue 25, part 4: the Snowflake dialect. How a query's dialect is chosen (and that DuckDB SQL keeps its
 * meaning), what the translation makes of each construct, and hostile Snowflake SQL: a construct used to
 * smuggle what the guard denies is refused or translated harmlessly, never past the guard.
 */
import t from 'tap';
import { LocalDatabase } from '../../../src/db/database.js';
import { dialectOf, SNOWFLAKE_ONLY } from '../../../src/reactions/triggers/snowflake/dialect.js';
import { translateSnowflake } from '../../../src/reactions/triggers/snowflake/translate.js';
import { runSandboxed, withSandbox } from '../../../src/reactions/triggers/sandbox.js';
import { SqlRefused } from '../../../src/reactions/triggers/sql-guard.js';
import { timestampTZValue } from '@duckdb/node-api';
import { customEvent, startTestApp, type TestApp } from '../../helpers/app.js';

const SIX = 'identity, identity_type, ts, event_type, event_id, event_raw';
const WINDOW = 'ts > {cursor_start_time} AND ts <= {cursor_end_time}';

let db!: LocalDatabase;
t.before(async () => {
  db = await LocalDatabase.open(':memory:');
});
t.teardown(() => db.close());
const translate = (sql: string) => db.exclusive((c) => translateSnowflake(c, sql));
const refusedWith = async (sql: string) => {
  const error = await translate(sql).catch((e: unknown) => e);
  if (!(error instanceof SqlRefused)) throw new Error(`not refused: ${sql}`);
  return error.reason;
};

t.test('the dialect: a directive, or a construct only Snowflake SQL has; valid DuckDB SQL stays DuckDB SQL', async (t) => {
  t.equal(dialectOf('-- dialect: snowflake\nSELECT 1'), 'snowflake');
  t.equal(dialectOf('-- a note\n-- Dialect: Snowflake\nSELECT 1'), 'snowflake');
  t.equal(dialectOf('-- dialect: duckdb\nSELECT event_raw:properties FROM event_triggers'), 'duckdb');
  t.equal(dialectOf('SELECT 1 -- dialect: snowflake'), 'duckdb', 'only before the query');
  for (const sql of [
    'SELECT event_raw:properties.city FROM event_triggers',
    "SELECT IFF(a, 1, 2) FROM t",
    'SELECT CURRENT_TIMESTAMP() FROM t',
    'SELECT DATEDIFF(day, a, b) FROM t',
    'SELECT x::number FROM t',
    'SELECT f.value FROM t, LATERAL FLATTEN(input => t.v) f',
    'SELECT f.value FROM t, TABLE(FLATTEN(input => t.v)) f',
    "SELECT properties['city'] FROM event_triggers",
  ]) t.equal(dialectOf(sql), 'snowflake', sql);
  for (const sql of [
    `SELECT ${SIX} FROM event_triggers WHERE event_type = 'x' AND ${WINDOW}`,
    "SELECT (event_raw->>'$.properties.city') AS c, list_transform([1, 2], lambda x: x + 1), [1, 2, 3][1:2], {'a': 1}, ts::VARCHAR FROM event_triggers",
    "SELECT datediff('day', a, b), flatten([[1]]), 'event_raw:properties', \"a:b\" FROM t -- x:y",
    "SELECT $$ v:a $$, array_contains([1], 1), decode(b) FROM t /* IFF(a) */",
  ]) t.equal(dialectOf(sql), 'duckdb', sql);
});

t.test('no function that makes a query Snowflake SQL exists in DuckDB: valid DuckDB SQL is never read as Snowflake', async (t) => {
  const rows = await db.all<{ name: string }>('SELECT DISTINCT lower(function_name) AS name FROM duckdb_functions()');
  const duck = new Set(rows.map((r) => r.name));
  t.same([...SNOWFLAKE_ONLY].filter((name) => duck.has(name)), []);
  t.notOk(duck.has('current_timestamp'), 'CURRENT_TIMESTAMP() is no DuckDB function either');
});

t.test('what the translation makes of each construct', async (t) => {
  const cases: Array<[string, string | RegExp]> = [
    ['SELECT v:a.b::string', "SELECT json_extract_string(v, '$.a.b')"],
    ['SELECT v:a:b[0]."c d"::string', `SELECT json_extract_string(v, '$.a.b[0]."c d"')`],
    ["SELECT v['a']['b']::varchar", "SELECT json_extract_string(v, '$.a.b')"],
    ['SELECT v:"First Name"::string', `SELECT json_extract_string(v, '$."First Name"')`],
    ['SELECT v:a', "SELECT json_extract(v, '$.a')"],
    ["SELECT 1 WHERE properties:city = 'Lisbon'", "(json_extract_string(properties, '$.city') = 'Lisbon')"],
    ['SELECT 1 WHERE properties:n > 3', "(CAST(json_extract(properties, '$.n') AS DOUBLE) > 3)"],
    ['SELECT v:n::number', "CAST(json_extract(v, '$.n') AS DECIMAL(38,0))"],
    ['SELECT v:n::decimal', 'DECIMAL(38,0)'],
    ['SELECT v:n::number(10,2)', 'DECIMAL(10,2)'],
    ['SELECT v:n::int', 'DECIMAL(38,0)'],
    ["SELECT 'x'::variant", "to_json('x')"],
    ['SELECT IFF(a, 1, 2)', /CASE\s+WHEN \(?a\)? THEN \(?1\)? ELSE 2 END/],
    ['SELECT NVL(a, b), NVL2(a, b, c), ZEROIFNULL(a)', /COALESCE\(a, b\).*a IS NOT NULL.*COALESCE\(a, 0\)/],
    ['SELECT DATEADD(day, -7, CURRENT_TIMESTAMP())', '(now() + to_days(-7))'],
    ["SELECT DATEDIFF('hour', a, b), TIMESTAMPDIFF(minute, a, b)", "date_diff('hour', a, b), date_diff('minute', a, b)"],
    ['SELECT DATEDIFF(week, a, b)', "date_diff('week', date_trunc('week', a), date_trunc('week', b))"],
    ["SELECT TO_CHAR(ts, 'YYYY-MM-DD HH24:MI:SS'), TO_VARCHAR(ts, 'MON DD')", "strftime(ts, '%Y-%m-%d %H:%M:%S'), strftime(ts, '%b %d')"],
    ["SELECT TO_DATE('2026-01-02'), TO_TIMESTAMP_NTZ(s)", /CAST\(CAST\('2026-01-02' AS TIMESTAMP\) AS DATE\).*CAST\(s AS TIMESTAMP\)/],
    ['SELECT TRY_TO_NUMBER(s), TRY_TO_NUMBER(s, 10, 2)', 'TRY_CAST(s AS DECIMAL(38,0)), TRY_CAST(s AS DECIMAL(10,2))'],
    ['SELECT PARSE_JSON(s):a, TRY_PARSE_JSON(s)', /json_extract\(CAST\(s AS "?JSON"?\), '\$\.a'\), TRY_CAST\(s AS "?JSON"?\)/],
    ['SELECT ARRAY_SIZE(v:items)', "json_array_length(json_extract(v, '$.items'))"],
    ["SELECT ARRAY_CONTAINS('x'::variant, v:tags)", "list_contains(json_transform(json_extract(v, '$.tags'), '[\"JSON\"]'), to_json('x'))"],
    ["SELECT GET_PATH(v, 'a.b[1]')", "json_extract(v, '$.a.b[1]')"],
    ["SELECT REGEXP_LIKE(s, 'a.*', 'i')", "regexp_full_match(s, 'a.*', 'i')"],
    ['SELECT EQUAL_NULL(a, b)', '(a IS NOT DISTINCT FROM b)'],
    ["SELECT DECODE(a, 1, 'one', NULL, 'none', 'other')", /WHEN \(\(a IS NOT DISTINCT FROM 1\)\) THEN \('one'\) WHEN \(\(a IS NOT DISTINCT FROM NULL\)\) THEN \('none'\) ELSE 'other'/],
    ["SELECT CONVERT_TIMEZONE('UTC', 'Europe/Lisbon', t), CONVERT_TIMEZONE('Europe/Lisbon', t)", "timezone('Europe/Lisbon', timezone('UTC', CAST(t AS TIMESTAMP))), timezone('Europe/Lisbon', CAST(t AS TIMESTAMP WITH TIME ZONE))"],
    ['SELECT 1 FROM t QUALIFY row_number() OVER (ORDER BY a) = 1', 'QUALIFY'],
    ["SELECT REGEXP_LIKE(s, '\\\\d+\\\\.\\\\d')", "regexp_full_match(s, '\\d+\\.\\d')"],
    ["SELECT 'it\\'s', 'a''b', $$c:d$$", "SELECT 'it''s', 'a''b', 'c:d'"],
  ];
  for (const [sql, expected] of cases) {
    const out = await translate(sql);
    if (typeof expected === 'string') t.ok(out.includes(expected), `${sql}\n  → ${out}`);
    else t.match(out, expected, sql);
  }
});

t.test('constructs it cannot run are refused, naming them and a form that works', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['SELECT 1 FROM t ORDER BY v:a', /cannot be sorted.*v:price::number/],
    ['SELECT MAX(v:a) FROM t', /MAX of a variant.*cast it/],
    ['SELECT 1 WHERE v:a < v:b', /comparing two variants.*cast it/],
    ["SELECT 1 WHERE s RLIKE 'a'", /RLIKE.*REGEXP_LIKE\(a, pattern\)/],
    ["SELECT 1 WHERE s ILIKE ANY ('a%', 'b%')", /ILIKE ANY.*OR/],
    ['SELECT DATEADD(nanosecond, 1, ts)', /unit nanosecond.*microsecond/],
    ["SELECT TO_CHAR(x, '999.99')", /number format.*printf/],
    ["SELECT TO_CHAR(ts, 'YYYY-WW')", /format element at "WW"/],
    ['SELECT ADD_MONTHS(d, 1)', /DATEADD\(month, n, d\)/],
    ['SELECT TYPEOF(v:a)', /json_type/],
    ['SELECT f.value FROM t, LATERAL FLATTEN(input => t.v, recursive => true) f', /recursive.*FLATTEN\(input => v:a\.b\)/],
    ['SELECT v:a[-1]', /index must be 0 or more/],
    ['SELECT v[x]', /constant key or index/],
    ['SELECT v: a FROM t', /not a path: write the path with no spaces/],
    ['SELECT 1 /* a /* b */ c */', /block comment inside a block comment/],
    ['SELECT x::geography', /type geography is not translated/],
    ['SELECT TOP 5 a FROM t', /LIMIT 5|LIMIT n/],
  ];
  for (const [sql, reason] of cases) t.match(await refusedWith(sql), reason, sql);
});

t.test('hostile Snowflake SQL: refused or harmless, never past the guard', async (t) => {
  const h: TestApp = await startTestApp(t);
  const acme = await h.createOrg('acme');
  await h.createOrg('beta');
  t.equal((await h.collect(customEvent(acme.production))).statusCode, 200);
  await h.compacted();
  const check = (sql: string) => h.app.storageRole!.triggers.check(sql, 'acme', 'trigger');
  const refusal = async (sql: string) => {
    const error = await check(sql).catch((e: unknown) => e);
    t.ok(error instanceof SqlRefused, `refused: ${sql}`);
    return (error as Error).message;
  };
  const window = { cursor_start_time: timestampTZValue(0n), cursor_end_time: timestampTZValue(BigInt(Date.now() + 60_000) * 1000n) };
  const run = async (sql: string) => {
    const checked = await check(sql);
    t.equal(checked.dialect, 'snowflake');
    return (await withSandbox(h.db('acme'), 5000, (c) => runSandboxed(c, checked, window, 10))).rows;
  };

  // A key is a key, whatever it holds: quotes, a statement, a comment, a placeholder.
  const keys = await run(`SELECT ${SIX}, event_raw:"a'); SELECT * FROM partner_credentials --"::string AS k, properties:"x""y"::string AS q,
    properties['{cursor_end_time}']::string AS p, properties:"b"".c"::string AS d FROM event_triggers WHERE ${WINDOW}`);
  t.same(keys.map((r) => [r.k, r.q, r.p, r.d]), [[null, null, null, null]], 'keys looked up, nothing run');
  const strings = await run(`-- dialect: snowflake\nSELECT ${SIX}, 'event_raw:properties' AS a, $$ v:x IFF( $$ AS b, 'it\\'s; SELECT 1 --' AS c, '\\\\' AS d FROM event_triggers WHERE ${WINDOW}`);
  t.same(strings.map((r) => [r.a, r.b, r.c, r.d]), [['event_raw:properties', ' v:x IFF( ', "it's; SELECT 1 --", '\\']], 'strings are values, never translated or ended early');
  t.match(await refusal(`SELECT ${SIX} FROM event_triggers WHERE ${WINDOW} /* /* */ ; SELECT * FROM partner_credentials */ AND IFF(TRUE, 1, 0) = 1`), /block comment inside a block comment/);
  t.match(await refusal(`SELECT ${SIX}, IFF(TRUE, getenv('HOME'), 'x') AS h FROM event_triggers WHERE ${WINDOW}`), /function getenv is not allowed/);
  t.match(await refusal(`SELECT ${SIX}, NVL(current_setting('memory_limit'), 'x') AS h FROM event_triggers WHERE ${WINDOW}`), /function current_setting is not allowed/);
  t.match(await refusal(`SELECT e.identity, e.identity_type, e.ts, e.event_type, e.event_id, e.event_raw FROM event_triggers e, LATERAL FLATTEN(input => (SELECT to_json(list(secret_hash)) FROM partner_credentials)) f WHERE e.ts > {cursor_start_time} AND e.ts <= {cursor_end_time}`), /partner_credentials is not readable/);
  t.match(await refusal(`SELECT ${SIX} FROM event_triggers, TABLE(read_csv('/etc/passwd')) WHERE ${WINDOW} AND IFF(TRUE, 1, 0) = 1`), /table function read_csv is not allowed/);
  t.match(await refusal(`SELECT ${SIX} FROM beta.event_triggers WHERE properties:x = 'y' AND ${WINDOW}`), /belongs to another org/);
  t.match(await refusal(`-- dialect: snowflake\nDELETE FROM events`), /only a plain SELECT/);
  t.match(await refusal(`-- dialect: snowflake\nSELECT ${SIX} FROM event_triggers WHERE ${WINDOW}; SELECT 1`), /exactly one SELECT statement/);
  t.match(await refusal(`SELECT ${SIX}, GET_PATH(event_raw, 'a"); select 1 --') AS g FROM event_triggers WHERE ${WINDOW}`), /path .* is not understood/);
  t.match(await refusal(`-- dialect: snowflake\nSELECT ${SIX} FROM event_triggers WHERE ts > {cursor_start_time}`), /add \{cursor_end_time\}/, 'the window is still required');
  t.equal((await h.db('acme').all<{ n: bigint }>("SELECT count(*) AS n FROM events"))[0]!.n, 1n, 'nothing was deleted');
});
