/**
 * Issue 26, part 6: a shifted window (`ts > {cursor_start_time} - INTERVAL 1 HOUR`) was refused as
 * "this one returns unknown" (DuckDB cannot type a parameter inside an operator, so the query prepared as
 * one column of that name). The refusal now names the problem and the forms that replace it.
 */
import t from 'tap';
import { LocalDatabase } from '../../../src/db/database.js';
import { orgSchemaSql } from '../../../src/storage/migrate.js';
import { checkSql, SqlRefused } from '../../../src/reactions/triggers/sql-guard.js';

const SIX = 'SELECT identity, identity_type, ts, event_type, event_id, event_raw FROM event_triggers';

let db!: LocalDatabase;
t.before(async () => {
  db = await LocalDatabase.open(':memory:');
  await db.exclusive(async (c) => {
    await c.run(`ATTACH ':memory:' AS acme`);
    await c.run('USE acme');
    for (const sql of orgSchemaSql()) await c.run(sql);
  });
});
t.teardown(() => db.close());

const check = (sql: string) => db.exclusive((c) => checkSql(c, sql, 'acme', 'trigger'));
const reasonOf = async (sql: string) => {
  const error = await check(sql).catch((e: unknown) => e);
  if (!(error instanceof SqlRefused)) throw new Error(`not refused: ${sql}`);
  return error.reason;
};

t.test('arithmetic or a function on a window placeholder is refused with the reason and the forms that work', async (t) => {
  const cases: Array<[string, string, string]> = [
    [`${SIX} WHERE ts > {cursor_start_time} - INTERVAL 1 HOUR AND ts <= {cursor_end_time}`, 'cursor_start_time', 'arithmetic (-)'],
    [`${SIX} WHERE ts > {cursor_start_time} AND ts <= {cursor_end_time} + INTERVAL '1 hour'`, 'cursor_end_time', 'arithmetic (+)'],
    [`${SIX} WHERE ts > {cursor_start_time}::TIMESTAMPTZ - INTERVAL 1 HOUR AND ts <= {cursor_end_time}`, 'cursor_start_time', 'arithmetic (-)'],
    [`${SIX} WHERE ts > date_add({cursor_start_time}, INTERVAL 1 HOUR) AND ts <= {cursor_end_time}`, 'cursor_start_time', 'a function (date_add)'],
    // Snowflake's DATEADD becomes `+` in the translation: the same refusal.
    [`${SIX} WHERE ts > DATEADD(hour, -1, {cursor_start_time}) AND ts <= {cursor_end_time}`, 'cursor_start_time', 'arithmetic (+)'],
  ];
  for (const [sql, placeholder, what] of cases) {
    const reason = await reasonOf(sql);
    t.ok(reason.startsWith(`{${placeholder}} is ${what} on a window placeholder`), reason);
    t.match(reason, /TIMESTAMPTZ values bound as parameters/);
    t.match(reason, /arithmetic and functions on them are not supported/);
    t.match(reason, '{ "wait": { "seconds": 3600 } }', 'the flow step that replaces a delay');
    t.match(reason, /subquery without shifting the window/);
    t.notMatch(reason, /unknown/);
  }
});

t.test('the forms the message shows pass the guard', async (t) => {
  const lookBack =
    `${SIX} WHERE ts > {cursor_start_time} AND ts <= {cursor_end_time} AND EXISTS (SELECT 1 FROM event_triggers e ` +
    'WHERE e.identity = event_triggers.identity AND e.ts > event_triggers.ts - INTERVAL 1 HOUR AND e.ts < event_triggers.ts)';
  t.ok(await check(lookBack));
  t.ok(await check(`${SIX} WHERE ts > {cursor_start_time} AND ts <= {cursor_end_time}`));
  // Arithmetic on ts itself is the query's own business, not the window's.
  t.ok(await check(`${SIX} WHERE ts - INTERVAL 1 HOUR > {cursor_start_time} AND ts <= {cursor_end_time}`));
});
