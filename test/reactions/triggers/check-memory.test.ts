/**
 * Issue 22, finding 3: `len(range(50000000))` in trigger or segment SQL was folded while the query was
 * checked, outside DuckDB's memory limit: 2.5 GB of the service for `range(2e7)`, the OOM killer for
 * `5e7`, and, as a file in QUERIES_DIR, again at every start. Checks now run in checker processes whose
 * address space is the org's memory share: whatever the SQL, this process's memory does not move, the
 * check ends (refused or not) within its deadline, and a start with such files in QUERIES_DIR starts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { startTestApp, STORAGE_PROCESS } from '../../helpers/app.js';
import { scaled } from '../../helpers/deadline.js';

const SIX = 'identity, identity_type, ts, event_type, event_id, event_raw';
const WINDOW = 'ts > {cursor_start_time} AND ts <= {cursor_end_time}';
/** Constants DuckDB folds while preparing, each far over an org's share when folded. */
const HUGE = [
  'len(range(50000000))',
  'len(range(20000000))',
  "length(repeat('x', 2000000000))",
  "len(string_split(repeat('a,', 300000000), ','))",
  'len(list_concat(range(30000000), range(30000000)))',
];

/** Several GB each, whatever the share. */
const OVER_ANY_SHARE = ['len(range(50000000))', "length(repeat('x', 2000000000))", "len(string_split(repeat('a,', 300000000), ','))"];

const rssMb = () => Math.round(process.memoryUsage().rss / 2 ** 20);

t.test('constant expressions of any size: this process keeps its memory, each check answers, other orgs check meanwhile', { timeout: scaled(300_000) }, async (t) => {
  const h = await startTestApp(t, { config: { ...STORAGE_PROCESS, triggerTimeoutMs: 5000, duckdbMemoryLimit: '2GB', orgDatabasesMaxOpen: 8 } });
  await h.createOrg('noisy');
  await h.createOrg('quiet');
  const before = rssMb();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb())), 20);
  t.teardown(() => clearInterval(sampler));

  const answers = await Promise.all(
    HUGE.flatMap((expression, i) => [
      h.admin('PUT', `/admin/v1/orgs/noisy/triggers/huge_${i}`, { sql: `SELECT ${SIX}, ${expression} AS n FROM event_triggers WHERE ${WINDOW}` }),
      h.admin('PUT', `/admin/v1/orgs/noisy/segments/huge_${i}`, { sql: `SELECT email_address AS email FROM profiles WHERE ${expression} > 0` }),
    ]),
  );
  const quiet = await h.admin('PUT', '/admin/v1/orgs/quiet/triggers/fine', { sql: `SELECT ${SIX} FROM event_triggers WHERE ${WINDOW}` });
  clearInterval(sampler);

  answers.forEach((res, i) => {
    t.ok([200, 422, 503].includes(res.statusCode), `answered ${res.statusCode}, never 500: ${res.body.slice(0, 200)}`);
    if (res.statusCode === 503) t.ok(res.headers['retry-after'], 'a 503 says when to retry');
    // Far over the org's share: refused (by memory or by time), unless there was no capacity to check.
    if (OVER_ANY_SHARE.includes(HUGE[Math.floor(i / 2)]!) && res.statusCode !== 503) {
      t.equal(res.statusCode, 422, `${HUGE[Math.floor(i / 2)]} is refused: ${res.body.slice(0, 300)}`);
      t.match(res.json().reason, /memory than its org's share|took longer than/);
    }
  });
  t.ok(
    [200, 503].includes(quiet.statusCode),
    `another org's valid trigger is saved or asked to retry, never refused because of the first org: ${quiet.statusCode} ${quiet.body.slice(0, 200)}`,
  );
  if (quiet.statusCode === 503) {
    const again = await h.admin('PUT', '/admin/v1/orgs/quiet/triggers/fine', { sql: `SELECT ${SIX} FROM event_triggers WHERE ${WINDOW}` });
    t.equal(again.statusCode, 200, 'and saved when tried again');
  }
  t.ok(peak - before < 300, `this process's memory stayed put: ${before} MB before, ${peak} MB at most`);
  t.equal((await h.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
});

t.test('such files in QUERIES_DIR: the service starts, and each is reported on its trigger or segment', { timeout: scaled(300_000) }, async (t) => {
  const dataDir = t.testdir();
  // This app only creates the org (its database, as in any mode); the start under test is the next one.
  const first = await startTestApp(t, { dataDir });
  await first.createOrg('noisy');
  await first.close();
  const dir = join(dataDir, 'queries', 'noisy');
  mkdirSync(join(dir, 'segments'), { recursive: true });
  // The forms far over any share (the first test has every form): each file is checked at the start.
  const files = HUGE.map((expression, i) => [expression, i] as const).filter(([expression]) => OVER_ANY_SHARE.includes(expression));
  for (const [expression, i] of files) {
    writeFileSync(join(dir, `huge_${i}.sql`), `SELECT ${SIX}, ${expression} AS n FROM event_triggers WHERE ${WINDOW}`);
    writeFileSync(join(dir, 'segments', `huge_${i}.sql`), `SELECT email_address AS email FROM profiles WHERE ${expression} > 0`);
  }
  const before = rssMb();
  const h = await startTestApp(t, { dataDir, config: { ...STORAGE_PROCESS, triggerTimeoutMs: 5000 } });
  t.ok(rssMb() - before < 300, `started without this process's memory moving (${before} → ${rssMb()} MB)`);
  let triggers = (await h.admin('GET', '/admin/v1/orgs/noisy/triggers')).json().triggers as Array<{ name: string; status: string }>;
  let segments = (await h.admin('GET', '/admin/v1/orgs/noisy/segments')).json().segments as Array<{ name: string; status: string }>;
  // A file whose check found no free checker is checked again by the next scan (each listing scans).
  for (let tries = 0; triggers.length + segments.length < 2 * files.length && tries < 20; tries++) {
    await new Promise((r) => setTimeout(r, 1000));
    triggers = (await h.admin('GET', '/admin/v1/orgs/noisy/triggers')).json().triggers;
    segments = (await h.admin('GET', '/admin/v1/orgs/noisy/segments')).json().segments;
  }
  t.equal(triggers.length + segments.length, 2 * files.length, `every file is listed: ${JSON.stringify([...triggers, ...segments].map((q) => [q.name, q.status]))}`);
  for (const q of [...triggers, ...segments].filter((q) => OVER_ANY_SHARE.some((e) => HUGE.indexOf(e) === Number(q.name.split('_')[1])))) {
    t.equal(q.status, 'invalid', `${q.name} is reported refused`);
  }
  t.equal((await h.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
});
