/**
 * Large reads come back packed (src/db/packed-read.ts): exactly the values, names, order and truncation
 * of a read converted value by value, for generated values of every packed type (separators, the mark,
 * empty strings, NULLs, extreme integers and timestamps), with a fallback where packing cannot be exact.
 */
import t from 'tap';
import fc from 'fast-check';
import { LocalDatabase } from '../../src/db/database.js';
import { PACK_ROWS, packedReadCount } from '../../src/db/packed-read.js';
import type { ColumnPage, Params } from '../../src/db/sql.js';

// Whatever the machine's speed: every large read may be run again packed (the bound has its own test).
const db = await LocalDatabase.open(':memory:', { packRerunMs: Number.POSITIVE_INFINITY });
t.teardown(() => db.close());

/** The reference: every value converted by @duckdb/node-api itself, as `read` did before packing. */
async function plain(sql: string, params: Params, maxRows: number): Promise<ColumnPage> {
  const page = await db.all(`SELECT * FROM (${sql}) LIMIT ${maxRows + 1}`, params);
  const names = Object.keys(page[0] ?? {});
  const rows = page.slice(0, maxRows);
  return { names, columns: names.map((n) => rows.map((r) => r[n])), truncated: page.length > maxRows };
}

async function read(sql: string, params: Params, maxRows: number): Promise<ColumnPage> {
  return db.exclusive((c) => c.read(sql, params, maxRows));
}

const text = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: fc.constantFrom('\u001e', '\u001f', 'a', '', ' ', '\u0000'.replace('\u0000', 'z')), maxLength: 6 }),
  fc.constant(''),
);
const row = fc.record({
  s: fc.option(text, { nil: null }),
  j: fc.option(fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)), { nil: null }),
  b: fc.option(fc.bigInt({ min: -(2n ** 63n) + 1n, max: 2n ** 63n - 1n }), { nil: null }),
  i: fc.option(fc.integer({ min: -(2 ** 31) + 1, max: 2 ** 31 - 1 }), { nil: null }),
  f: fc.option(fc.boolean(), { nil: null }),
  // Micros of every sign, within DuckDB's TIMESTAMPTZ range (and a JS Date's, with a margin either side).
  us: fc.option(fc.bigInt({ min: -62_135_596_800_000_000n, max: 253_402_300_799_000_000n }), { nil: null }),
});

const sqlText = (v: string | null) => (v === null ? 'NULL' : `'${v.replace(/'/g, "''")}'`);

t.test('a large read is packed and gives the values, order and truncation of one read value by value', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(row, { minLength: 1, maxLength: 40 }), fc.integer({ min: PACK_ROWS + 1, max: 2 * PACK_ROWS + 300 }), fc.boolean(), async (sample, count, descending) => {
      await db.run('DROP TABLE IF EXISTS g');
      await db.run('CREATE TABLE g (k INTEGER, s VARCHAR, j JSON, b BIGINT, i INTEGER, f BOOLEAN, t TIMESTAMPTZ)');
      const values = sample.map(
        (r, k) => `(${k}, ${sqlText(r.s)}, ${sqlText(r.j)}, ${r.b ?? 'NULL'}, ${r.i ?? 'NULL'}, ${r.f ?? 'NULL'}, ${r.us === null ? 'NULL' : `make_timestamptz(${r.us})`})`,
      );
      await db.run(`INSERT INTO g VALUES ${values.join(', ')}`);
      // `count` rows: the sample tiled, each with its position (n), in a stated order.
      const sql = `SELECT n, s, j, b, i, f, t, s AS s FROM (SELECT range AS n FROM range(${count})) JOIN g ON g.k = n % ${sample.length} ORDER BY n ${descending ? 'DESC' : ''}`;
      for (const maxRows of [count, count - 1, PACK_ROWS + 1]) {
        const before = packedReadCount();
        const [got, want] = [await read(sql, {}, maxRows), await plain(sql, {}, maxRows)];
        t.same(got.names, ['n', 's', 'j', 'b', 'i', 'f', 't', 's:1']);
        if (JSON.stringify(got.columns, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)) !== JSON.stringify(want.columns, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v))) {
          throw new Error(`columns differ for maxRows ${maxRows}`);
        }
        t.equal(got.truncated, want.truncated);
        // Packed when more rows than one packed string holds were asked for, unless a text value held the
        // separator (then read value by value).
        const separator = sample.some((r) => r.s?.includes('\u001e') || r.j?.includes('\u001e'));
        t.equal(packedReadCount() - before, !separator && maxRows > PACK_ROWS ? 1 : 0, 'packed exactly when no value holds the separator');
      }
    }),
    { numRuns: 12 },
  );
});

t.test('what cannot be packed is read value by value; small reads and named parameters as before', async (t) => {
  const before = packedReadCount();
  const sql = `SELECT range AS n, range / 3 AS d, [range] AS l FROM range(5000) WHERE range >= $from`;
  const [got, want] = [await read(sql, { from: 10 }, 6000), await plain(sql, { from: 10 }, 6000)];
  t.same(got, want);
  t.equal(packedReadCount(), before, 'a DOUBLE and a LIST column: not packed');
  const small = `SELECT range AS n, 'x' AS s FROM range(100)`;
  t.same(await read(small, {}, 10_000), await plain(small, {}, 10_000));
  t.equal(packedReadCount(), before, 'one chunk of rows: not packed');
  const big = `SELECT range AS n, 'x' || range AS s FROM range($n)`;
  t.same(await read(big, { n: 9000 }, 10_000), await plain(big, { n: 9000 }, 10_000));
  t.equal(packedReadCount(), before + 1, 'named parameters reach the packed query');
  for (const at of ["'infinity'", "'-infinity'", "'294247-01-10 04:00:54.775806+00'"]) {
    const huge = `SELECT n, CASE WHEN n = 2500 THEN TIMESTAMPTZ ${at} ELSE now() END AS t FROM range(3000) AS r(n)`;
    await t.rejects(read(huge, {}, 5000), /out of range/, `a timestamp no Date holds (${at}) fails as it did`);
  }
});

t.test('a query whose first rows came later than the bound is read on, not run again', async (t) => {
  const strict = await LocalDatabase.open(':memory:', { packRerunMs: 0 });
  t.teardown(() => strict.close());
  const before = packedReadCount();
  const sql = `SELECT range AS n, md5(range::VARCHAR) AS h FROM range(20000) ORDER BY h DESC`;
  const got = await strict.exclusive((c) => c.read(sql, {}, 10_000));
  t.equal(packedReadCount(), before, 'not packed');
  t.same(got, await plain(sql, {}, 10_000));
  t.equal(got.truncated, true);
});
