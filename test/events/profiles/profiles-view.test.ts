/**
 * Imported custom columns are columns of `profiles` in trigger and segment SQL (issue 41): `WHERE tier =
 * 'platinum'` is checked and runs after a CSV import with a `tier` column, for generated column names
 * and values (SQL keywords among the names, quotes and unicode among the values); a name that is a
 * profile column already keeps the profile's; one org's columns are not another's; a database from
 * before the columns were kept, and a restart, keep them.
 */
import fc from 'fast-check';
import t from 'tap';
import { importContacts, startTestApp, type TestApp } from '../../helpers/app.js';

async function segment(h: TestApp, sql: string, org = 'acme') {
  return h.admin('PUT', `/admin/v1/orgs/${org}/segments/chosen`, { sql });
}

async function members(h: TestApp, org = 'acme'): Promise<string[]> {
  const res = await h.admin('POST', `/admin/v1/orgs/${org}/segments/chosen/preview`, { limit: 1000 });
  if (res.statusCode !== 200) throw new Error(`preview: ${res.statusCode} ${res.body}`);
  return (res.json().rows as Array<{ email: string }>).map((r) => r.email).sort();
}

t.test('WHERE tier = \'platinum\' after an import with a tier column; refused before it', async (t) => {
  const dataDir = t.testdir();
  let h = await startTestApp(t, { dataDir });
  await h.createOrg('acme');
  await h.createOrg('beta');
  const before = await segment(h, "SELECT email_address AS email FROM profiles WHERE tier = 'platinum'");
  t.equal(before.statusCode, 422, 'no tier yet');
  t.match(before.json().detail, /tier/, 'the reason names the column');

  const csv = 'email_address,first_name,tier,order_count,select\nada@example.com,Ada,platinum,99,x\ngrace@example.com,Grace,gold,,y\nlinus@example.com,Linus,platinum,,\n';
  t.equal((await importContacts(h, 'text/csv', csv)).statusCode, 200);
  t.equal((await importContacts(h, 'text/csv', 'email_address,secret_col\nmallory@example.com,s3cr3t\n', 'beta')).statusCode, 200);
  const saved = await segment(h, "SELECT email_address AS email FROM profiles WHERE tier = 'platinum'");
  t.equal(saved.statusCode, 200, saved.body);
  t.same(await members(h), ['ada@example.com', 'linus@example.com']);

  t.equal((await segment(h, 'SELECT email_address AS email FROM profiles WHERE "select" = \'y\'')).statusCode, 200, 'a keyword as a column name, quoted');
  t.same(await members(h), ['grace@example.com']);
  t.equal((await segment(h, 'SELECT email_address AS email FROM profiles WHERE order_count = 0')).statusCode, 200, "a name that is a profile column keeps the profile's");
  t.same(await members(h), ['ada@example.com', 'grace@example.com', 'linus@example.com'], 'order_count is the number of orders (none), not the imported 99');
  const other = await segment(h, "SELECT email_address AS email FROM profiles WHERE secret_col = 's3cr3t'");
  t.equal(other.statusCode, 422, "another org's column is not acme's");
  t.equal((await segment(h, "SELECT email_address AS email FROM profiles WHERE secret_col = 's3cr3t'", 'beta')).statusCode, 200, "but beta's");
  t.same(await members(h, 'beta'), ['mallory@example.com']);

  // A restart opens the databases again; a database from before the columns were kept learns them from its contacts.
  await h.close();
  h = await startTestApp(t, { dataDir });
  t.equal((await segment(h, "SELECT email_address AS email FROM profiles WHERE tier = 'gold'")).statusCode, 200, 'after a restart');
  t.same(await members(h), ['grace@example.com']);
  await h.db().run('DELETE FROM profile_columns');
  await h.close();
  h = await startTestApp(t, { dataDir });
  t.equal((await segment(h, "SELECT email_address AS email FROM profiles WHERE tier = 'platinum'")).statusCode, 200, 'seeded from the contacts');
  t.same(await members(h), ['ada@example.com', 'linus@example.com']);
});

t.test('generated names and values: each column reads back what was imported, as text', async (t) => {
  const h = await startTestApp(t);
  await h.createOrg('acme');
  const name = fc.stringMatching(/^[a-z][a-z0-9_]{0,63}$/).filter((n) => !['email_address', 'first_name', 'last_name', 'user_id', 'address_city', 'address_state', 'address_country'].includes(n));
  const value = fc.oneof(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }), fc.integer().map(String), fc.constantFrom("O'Brien", '"quoted"', 'a,b', '\\', '$.x'));
  let checked = 0;
  await fc.assert(
    fc.asyncProperty(fc.uniqueArray(name, { minLength: 1, maxLength: 4 }), fc.array(value, { minLength: 4, maxLength: 4 }), async (names, values) => {
      const email = `c${checked}@example.com`;
      const row: Record<string, string> = { email_address: email };
      names.forEach((n, i) => (row[n] = values[i]!));
      const imported = await importContacts(h, 'application/x-ndjson', `${JSON.stringify(row)}\n`);
      if (imported.statusCode !== 200) throw new Error(imported.body);
      for (const n of names) {
        // The profile's own column wins where the name is one (order_count, timezone, …): those are skipped.
        const own = await h.db().all<{ n: bigint }>(`SELECT count(*) AS n FROM (DESCRIBE SELECT * FROM profiles_for(NULL::VARCHAR, NULL::VARCHAR[], NULL::TIMESTAMPTZ)) WHERE column_name = $1`, [n]);
        if (own[0]!.n > 0n) continue;
        const literal = `'${row[n]!.replaceAll("'", "''")}'`;
        const res = await segment(h, `SELECT email_address AS email FROM profiles WHERE "${n}" = ${literal} AND email_address = '${email}'`);
        if (res.statusCode !== 200) throw new Error(`${n}: ${res.statusCode} ${res.body}`);
        const found = await members(h);
        if (found.length !== 1 || found[0] !== email) throw new Error(`${n} = ${literal}: ${JSON.stringify(found)}`);
      }
      checked++;
    }),
    { numRuns: Number(process.env.RUNS ?? 8) },
  );
  t.ok(checked > 0, `${checked} imports, each column read back`);
});
