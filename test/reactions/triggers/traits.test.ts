/**
 * Traits written in SQL (issue 41): `PUT …/traits/{name}` with a query returning `email, value` makes the
 * value a field of the served profile (a content field once the org serves it) and a typed column of
 * `profiles` in segment and trigger SQL, recomputed after the commits that change it; checked like a
 * segment (the same escapes refused), versioned, previewable. A failing version keeps the last values and
 * says why; a deleted trait leaves no value behind; another org neither sees nor names them. Values and
 * typed columns survive a restart; a file in QUERIES_DIR (Snowflake SQL too) is picked up, a link refused;
 * one org's trait running into its deadline does not hold up another org's.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { book, importContacts, startTestApp, STORAGE_PROCESS, type TestApp, waitFor } from '../../helpers/app.js';

const BOOKINGS = "SELECT identity AS email, count(*) AS value FROM event_triggers WHERE event_type = 'custom_booking_completed' GROUP BY identity";

async function withOrgs(h: TestApp) {
  const creds = {
    acme: await h.createOrg('acme', { audienceApi: true, rateLimit: 100_000 }),
    beta: await h.createOrg('beta', { audienceApi: true, rateLimit: 100_000 }),
  };
  const token = async (slug: string) => {
    const res = await h.admin('POST', `/admin/v1/orgs/${slug}/tokens`, { createdBy: 'ops@example.com' });
    if (res.statusCode !== 201) throw new Error(res.body);
    return res.json().token as string;
  };
  return { creds, acme: await token('acme'), beta: await token('beta') };
}

/** Once the trait has values, the org may serve it: it is a profile field then. */
async function serve(h: TestApp, name: string, org = 'acme'): Promise<void> {
  // A readiness wait, not the freshness promise (bench/freshness-phase.ts measures that): a file is polled,
  // and a first check starts a checker process, which on a loaded machine takes seconds.
  await waitFor(async () => ((await h.admin('GET', `/admin/v1/orgs/${org}/traits/${name}`)).json().values?.contacts ?? 0) > 0, { what: `${name} computed`, timeoutMs: 30_000 });
  const { org: current } = (await h.admin('GET', `/admin/v1/orgs/${org}`)).json();
  const patched = await h.admin('PATCH', `/admin/v1/orgs/${org}`, { contentFields: [...current.contentFields, name] });
  if (patched.statusCode !== 200) throw new Error(patched.body);
}

async function profile(h: TestApp, token: string, email: string): Promise<Record<string, unknown> | undefined> {
  const res = await h.app.inject({ method: 'GET', url: `/audience/v2/contacts?identity=email:${encodeURIComponent(email)}`, headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
  if (res.statusCode === 404) return undefined;
  if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${res.body}`);
  return res.json().contact;
}

async function members(h: TestApp, sql: string, org = 'acme'): Promise<string[]> {
  const res = await h.admin('POST', `/admin/v1/orgs/${org}/segments/chosen/preview`, { sql, limit: 1000 });
  if (res.statusCode !== 200) throw new Error(`preview: ${res.statusCode} ${res.body}`);
  return (res.json().rows as Array<{ email: string }>).map((r) => r.email).sort();
}

t.test('a trait is served, is a typed column of profiles, follows new events, and goes when deleted', async (t) => {
  const h = await startTestApp(t, { config: STORAGE_PROCESS });
  const { creds, acme, beta } = await withOrgs(h);
  const early = await h.admin('PATCH', '/admin/v1/orgs/acme', { contentFields: ['email_address', 'bookings'] });
  t.equal(early.statusCode, 400, 'no such field before the trait has values');
  for (const [email, n] of [['ada@example.com', 3], ['grace@example.com', 1]] as const) {
    for (let i = 0; i < n; i++) t.equal((await book(h, creds.acme.production, email, `${email}-${i}`)).statusCode, 200);
  }
  t.equal((await book(h, creds.beta.production, 'ada@example.com', 'beta-ada')).statusCode, 200);
  await h.compacted();

  const saved = await h.admin('PUT', '/admin/v1/orgs/acme/traits/bookings', { sql: BOOKINGS });
  t.equal(saved.statusCode, 200, saved.body);
  await serve(h, 'bookings');
  await waitFor(async () => (await profile(h, acme, 'ada@example.com'))?.bookings === 3, { what: 'ada has 3 bookings', timeoutMs: 15_000 });
  t.equal((await profile(h, acme, 'grace@example.com'))?.bookings, 1, 'a number, as the query returned it');
  t.notOk('bookings' in ((await profile(h, beta, 'ada@example.com')) ?? {}), "beta's ada has no acme trait");
  t.equal((await h.admin('PATCH', '/admin/v1/orgs/beta', { contentFields: ['email_address', 'bookings'] })).statusCode, 400, "nor may beta serve it");

  // A column of profiles, compared as a number; beta's profiles has no such column.
  t.same(await members(h, 'SELECT email_address AS email FROM profiles WHERE bookings >= 2'), ['ada@example.com']);
  const other = await h.admin('POST', '/admin/v1/orgs/beta/segments/chosen/preview', { sql: 'SELECT email_address AS email FROM profiles WHERE bookings >= 2' });
  t.equal(other.statusCode, 422, "acme's trait is no column of beta's profiles");

  const listed = await h.admin('GET', '/admin/v1/orgs/acme/traits');
  t.equal(listed.statusCode, 200);
  t.match(listed.json().traits, [{ name: 'bookings', status: 'live', liveVersion: 1, values: { version: 1, contacts: 2, tookMs: Number, error: null } }]);

  // New events change it: grace books twice more.
  for (let i = 1; i <= 2; i++) await book(h, creds.acme.production, 'grace@example.com', `grace-more-${i}`);
  await waitFor(async () => (await profile(h, acme, 'grace@example.com'))?.bookings === 3, { what: 'grace has 3 bookings', timeoutMs: 15_000 });
  t.same(await members(h, 'SELECT email_address AS email FROM profiles WHERE bookings >= 2'), ['ada@example.com', 'grace@example.com']);

  // A version that fails at run time keeps the last values and says why.
  const twice = await h.admin('PUT', '/admin/v1/orgs/acme/traits/bookings', { sql: `${BOOKINGS} UNION ALL SELECT 'ada@example.com', 7` });
  t.equal(twice.statusCode, 200, twice.body);
  await waitFor(async () => (await h.admin('GET', '/admin/v1/orgs/acme/traits/bookings')).json().values.error !== null, { what: 'the duplicate reported', timeoutMs: 15_000 });
  const failed = (await h.admin('GET', '/admin/v1/orgs/acme/traits/bookings')).json();
  t.match(failed.values, { version: 1, contacts: 2, error: /ada@example.com more than once/ });
  t.equal((await profile(h, acme, 'ada@example.com'))?.bookings, 3, 'the last values are kept');

  // Text values, and a version that changes the type: the column follows.
  t.equal((await h.admin('PUT', '/admin/v1/orgs/acme/traits/bookings', { sql: "SELECT identity AS email, 'b' || count(*) AS value FROM event_triggers GROUP BY identity" })).statusCode, 200);
  await waitFor(async () => (await profile(h, acme, 'ada@example.com'))?.bookings === 'b3', { what: 'text values', timeoutMs: 15_000 });
  t.same(await members(h, "SELECT email_address AS email FROM profiles WHERE bookings = 'b3'"), ['ada@example.com', 'grace@example.com']);

  const deleted = await h.admin('DELETE', '/admin/v1/orgs/acme/traits/bookings');
  t.equal(deleted.statusCode, 200, deleted.body);
  // A content field the profile lacks is served as null.
  await waitFor(async () => (await profile(h, acme, 'ada@example.com'))?.bookings === null, { what: 'the value gone', timeoutMs: 15_000 });
  t.same(await h.db('acme').all('SELECT * FROM contact_traits'), [], 'no row left');
  const gone = await h.admin('POST', '/admin/v1/orgs/acme/segments/chosen/preview', { sql: 'SELECT email_address AS email FROM profiles WHERE bookings >= 2' });
  t.equal(gone.statusCode, 422, 'no longer a column');
});

t.test('refused as a segment is, and for what a trait must be', async (t) => {
  const h = await startTestApp(t);
  await withOrgs(h);
  const refused: Array<[string, string, RegExp]> = [
    ['one_col', 'SELECT email_address AS email FROM profiles', /two columns, email and value/],
    ['three', 'SELECT email_address AS email, 1 AS value, 2 AS other FROM profiles', /two columns/],
    ['windowed', 'SELECT identity AS email, 1 AS value FROM event_triggers WHERE ts > {cursor_start_time} AND ts <= {cursor_end_time}', /not over a window/],
    ['first_name', "SELECT email_address AS email, 'x' AS value FROM profiles", /field every profile has/],
    ['nested', 'SELECT email_address AS email, [1, 2] AS value FROM profiles', /text, a number, a boolean or a time/],
    ['other_org', 'SELECT email_address AS email, 1 AS value FROM beta.profiles', /./],
    ['file_read', "SELECT 'a@b.c' AS email, content AS value FROM read_text('/etc/passwd')", /./],
    ['control', 'SELECT key AS email, value FROM control_documents', /./],
    ['two', 'SELECT email_address AS email, 1 AS value FROM profiles; DROP TABLE contact_traits', /./],
    ['comment', 'SELECT email_address AS email, 1 AS value FROM profiles -- )) AS x; SELECT 1', /./],
  ];
  for (const [name, sql, reason] of refused) {
    const res = await h.admin('PUT', `/admin/v1/orgs/acme/traits/${name}`, { sql });
    if (name === 'comment') {
      // A trailing comment is fine on its own; what follows the wrapper's parenthesis must not be swallowed.
      t.equal(res.statusCode, 200, `${name}: ${res.body}`);
      continue;
    }
    t.equal(res.statusCode, 422, `${name}: ${res.body}`);
    t.equal(res.json().code, 'invalid_trigger');
    t.match(res.json().reason, reason, name);
  }
  const preview = await h.admin('POST', '/admin/v1/orgs/acme/traits/comment/preview', {});
  t.equal(preview.statusCode, 200, preview.body);
  t.same(await h.db('acme').all('SELECT count(*)::INTEGER AS n FROM control_documents').catch(() => 'absent'), 'absent', 'the org database holds no control plane');
});

t.test('generated values and addresses read back exactly, served and as a column', async (t) => {
  const h = await startTestApp(t);
  const { acme } = await withOrgs(h);
  t.equal((await importContacts(h, 'text/csv', 'email_address\nfirst@example.com\n')).statusCode, 200);
  t.equal((await h.admin('PUT', '/admin/v1/orgs/acme/traits/score', { sql: 'SELECT email_address AS email, 1 AS value FROM profiles' })).statusCode, 200);
  await serve(h, 'score');
  const local = fc.stringMatching(/^[a-z0-9._%+-]{1,64}$/).filter((l) => !l.startsWith('.') && !l.endsWith('.') && !l.includes('..'));
  const value = fc.oneof(
    fc.string({ unit: 'grapheme', minLength: 0, maxLength: 40 }),
    fc.integer({ min: -1_000_000_000, max: 1_000_000_000 }),
    fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e12, max: 1e12 }),
    fc.boolean(),
    fc.constantFrom("O'Brien", '"quoted"', '\\', '$.x', '{}', 'null', '__proto__'),
  );
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(local, fc.integer({ min: 0, max: 180 }), value, async (l, pad, v) => {
      const email = `${l}@${'d'.repeat(Math.max(1, Math.min(pad, 254 - l.length - 6)))}.com`.slice(0, 254);
      const imported = await importContacts(h, 'text/csv', `email_address\n${email}\n`);
      if (imported.statusCode !== 200) return; // an address the import refuses is not this test's subject
      const literal = typeof v === 'string' ? `'${v.replaceAll("'", "''")}'` : typeof v === 'boolean' ? String(v) : `${v}::DOUBLE`;
      const sql = `SELECT email_address AS email, ${literal} AS value FROM profiles WHERE email_address = '${email}'`;
      const saved = await h.admin('PUT', '/admin/v1/orgs/acme/traits/score', { sql });
      if (saved.statusCode !== 200) throw new Error(`${saved.statusCode} ${saved.body}`);
      await waitFor(async () => JSON.stringify((await profile(h, acme, email))?.score) === JSON.stringify(v), { what: `${email} has score ${JSON.stringify(v)}`, timeoutMs: 15_000 });
      const where = typeof v === 'number' ? `score = ${v}::DOUBLE` : typeof v === 'boolean' ? `score = ${v}` : `score = ${literal}`;
      const found = await members(h, `SELECT email_address AS email FROM profiles WHERE ${where}`);
      if (found.length !== 1 || found[0] !== email) throw new Error(`${where}: ${JSON.stringify(found)}`);
      runs++;
    }),
    { numRuns: Number(process.env.RUNS ?? 8), endOnFailure: true },
  );
  t.ok(runs > 0, `${runs} values read back`);
});

t.test('decimals, big integers and times as JSON; values, types and columns survive a restart', async (t) => {
  const dataDir = t.testdir();
  let h = await startTestApp(t, { dataDir });
  const { acme } = await withOrgs(h);
  t.equal((await importContacts(h, 'text/csv', 'email_address\nada@example.com\n')).statusCode, 200);
  const traits: Record<string, [string, unknown]> = {
    price: ['12.50::DECIMAL(10,2)', 12.5],
    big: ['9007199254740993::BIGINT', '9007199254740993'],
    since: ["TIMESTAMPTZ '2026-01-02 03:04:05.678+00'", '2026-01-02T03:04:05.678Z'],
    vip: ['true', true],
  };
  for (const [name, [literal]] of Object.entries(traits)) {
    const res = await h.admin('PUT', `/admin/v1/orgs/acme/traits/${name}`, { sql: `SELECT email_address AS email, ${literal} AS value FROM profiles` });
    t.equal(res.statusCode, 200, `${name}: ${res.body}`);
    await serve(h, name);
  }
  const expected = Object.fromEntries(Object.entries(traits).map(([name, [, value]]) => [name, value]));
  const served = async () => {
    const contact = (await profile(h, acme, 'ada@example.com')) ?? {};
    return Object.fromEntries(Object.keys(traits).map((name) => [name, contact[name]]));
  };
  await waitFor(async () => JSON.stringify(await served()) === JSON.stringify(expected), { what: 'every value served', timeoutMs: 15_000 });
  t.same(await served(), expected, 'a decimal is a number, a BIGINT past 2^53 its digits, a time ISO 8601, a boolean a boolean');
  const where = 'price > 12 AND vip AND since < TIMESTAMPTZ \'2026-06-01\'::VARCHAR';
  t.same(await members(h, `SELECT email_address AS email FROM profiles WHERE ${where}`), ['ada@example.com'], 'typed columns');

  await h.close();
  h = await startTestApp(t, { dataDir });
  const { acme: token } = { acme: (await h.admin('POST', '/admin/v1/orgs/acme/tokens', { createdBy: 'ops@example.com' })).json().token as string };
  const contact = (await profile(h, token, 'ada@example.com')) ?? {};
  t.same(Object.fromEntries(Object.keys(traits).map((name) => [name, contact[name]])), expected, 'served at once after a restart');
  t.same(await members(h, `SELECT email_address AS email FROM profiles WHERE ${where}`), ['ada@example.com'], 'the columns too');
});

t.test("one org's trait running into its deadline does not hold up another org's traits", async (t) => {
  const TIMEOUT_MS = 12_000;
  const h = await startTestApp(t, { config: { triggerTimeoutMs: TIMEOUT_MS } });
  const { creds, beta } = await withOrgs(h);
  t.equal((await book(h, creds.acme.production, 'ada@example.com', 'acme-1')).statusCode, 200);
  t.equal((await book(h, creds.beta.production, 'bob@example.com', 'beta-1')).statusCode, 200);
  await h.compacted();
  // Cheap on the check's sample row, endless on the org's rows: it runs until its deadline.
  const slow = "SELECT identity AS email, count(*) AS value FROM event_triggers, range(CASE WHEN event_type = 'custom_sample_event' THEN 1 ELSE 100000000000 END) r WHERE r.range < 0 GROUP BY identity";
  t.equal((await h.admin('PUT', '/admin/v1/orgs/acme/traits/slow', { sql: slow })).statusCode, 200);
  t.equal((await h.admin('PUT', '/admin/v1/orgs/beta/traits/bookings', { sql: BOOKINGS })).statusCode, 200);
  await serve(h, 'bookings', 'beta');
  await waitFor(async () => (await profile(h, beta, 'bob@example.com'))?.bookings === 1, { what: "beta's value served", timeoutMs: 15_000 });
  const acme = (await h.admin('GET', '/admin/v1/orgs/acme/traits/slow')).json().values;
  t.match(acme, { computedAt: null, error: null }, "served while acme's trait still runs (it reports nothing until its deadline)");
  const deadline = await waitFor(async () => (await h.admin('GET', '/admin/v1/orgs/acme/traits/slow')).json().values?.error ?? undefined, { what: "acme's deadline", timeoutMs: TIMEOUT_MS * 3 });
  t.match(deadline, /longer than 12000 ms/, 'then its deadline, said');
});

t.test('a trait kept as a file in QUERIES_DIR, in Snowflake SQL, is picked up and served; a link in its place is refused', async (t) => {
  const h = await startTestApp(t);
  const { creds, acme } = await withOrgs(h);
  for (let i = 0; i < 3; i++) t.equal((await book(h, creds.acme.production, 'ada@example.com', `file-${i}`)).statusCode, 200);
  await h.compacted();
  const dir = join(h.dataDir, 'queries', 'acme', 'traits');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'stays.sql'), "-- dialect: snowflake\nSELECT identity AS email, IFF(COUNT(*) > 2, 'frequent', 'occasional') AS value\nFROM event_triggers GROUP BY identity\n");
  await serve(h, 'stays');
  await waitFor(async () => (await profile(h, acme, 'ada@example.com'))?.stays === 'frequent', { what: 'the file trait served', timeoutMs: 15_000 });
  t.match((await h.admin('GET', '/admin/v1/orgs/acme/traits/stays')).json(), { status: 'live', liveVersion: 1, values: { contacts: 1 } });
  // A link to a file outside the org's folder is never read.
  const secret = join(h.dataDir, 'secret.sql');
  writeFileSync(secret, 'SELECT 1');
  symlinkSync(secret, join(dir, 'leak.sql'));
  const listed = (await h.admin('GET', '/admin/v1/orgs/acme/traits')).json().traits as Array<{ name: string; status: string; error: string | null }>;
  t.match(listed.find((q) => q.name === 'leak'), { status: 'file_refused', error: /symbolic link/ }, 'the link is refused, with why');
});
