import t from 'tap';
import { LocalDatabase } from '../../src/db/database.js';
import { rowsOf } from '../../src/db/sql.js';

t.test('rows come back as objects of JS values, duplicate names apart, pages cut at their limit', async (t) => {
  const db = await LocalDatabase.open(':memory:');
  t.teardown(() => db.close());
  const rows = await db.all(
    `SELECT 1::BIGINT AS n, 'x' AS s, NULL AS nothing, TIMESTAMPTZ '2026-07-01 12:00:00.123456+00' AS at,
            [1, 2]::INTEGER[] AS list, {'k': 'v'} AS struct, 2 AS n
       FROM range(2)`,
  );
  t.same(rows, [
    { n: 1n, s: 'x', nothing: null, at: new Date(Date.UTC(2026, 6, 1, 12, 0, 0, 123)), list: [1, 2], struct: { k: 'v' }, 'n:1': 2 },
    { n: 1n, s: 'x', nothing: null, at: new Date(Date.UTC(2026, 6, 1, 12, 0, 0, 123)), list: [1, 2], struct: { k: 'v' }, 'n:1': 2 },
  ]);
  t.same(await db.all('SELECT 1 AS a WHERE false'), [], 'no rows');
  const page = await db.exclusive((c) => c.read('SELECT range AS i FROM range(5000)', [], 3000));
  const cut = rowsOf<{ i: bigint }>(page);
  t.equal(cut.length, 3000);
  t.equal(page.truncated, true);
  t.same(cut[2999], { i: 2999n });
  const whole = await db.exclusive((c) => c.read('SELECT range AS i FROM range(10)', [], 10));
  t.same([rowsOf(whole).length, whole.truncated], [10, false]);
});
