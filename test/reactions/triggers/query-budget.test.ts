/**
 * Issue 37, finding 4's converse: a query that uses up its own budget gets a verdict naming the budget
 * (422 query_budget_exceeded, `budget` time or memory), the same every time it is sent, never "busy, try
 * again". `len(range(20000000))` in a preview answered 503 sandbox_busy every time: its check, one long
 * native call, overran its deadline, and a checker at nice 15 on a busy machine had not used half of it
 * in CPU, which was read as a lack of capacity. The constant here is far over the budget on any machine:
 * `len(range(20000000))` folds in 0.5–15 s depending on the kernel's page faults, and where it fit in the
 * check it ran in the storage process instead (a verdict still, but another one, from another place). Real checker processes, a real storage process.
 */
import t from 'tap';
import { customEvent, startTestApp, STORAGE_PROCESS } from '../../helpers/app.js';
import { asClientRetries } from '../../helpers/capacity.js';

const SIX = 'identity, identity_type, ts, event_type, event_id, event_raw';
const WINDOW = 'ts > {cursor_start_time} AND ts <= {cursor_end_time}';
const TIMEOUT_MS = 1000;
/** Folded while the check prepares it: one native call (~20 s of CPU here, 200 KB) that no interrupt stops. */
const HUGE_CONSTANT = `SELECT ${SIX}, levenshtein(repeat('ab', 50000), repeat('ba', 50000)) AS d FROM event_triggers WHERE ${WINDOW}`;
/** A 2 GB string: far over any org's memory share (here 4GB / 16). */
const HUGE_STRING = `SELECT email_address AS email FROM profiles WHERE length(repeat('x', 2000000000)) > 0`;
/** Cheap on the check's sample row, endless on the org's rows: stopped in the storage process at its deadline. */
const RUNAWAY = `SELECT ${SIX} FROM event_triggers, range(CASE WHEN event_type = 'custom_sample_event' THEN 1 ELSE 100000000000 END) r WHERE r.range < 0 AND ${WINDOW}`;

t.test('a query over its time or memory budget answers 422 query_budget_exceeded naming it, every time', async (t) => {
  const h = await startTestApp(t, { config: { ...STORAGE_PROCESS, triggerTimeoutMs: TIMEOUT_MS } });
  const acme = await h.createOrg('acme');
  t.equal((await h.collect(customEvent(acme.production))).statusCode, 200);
  await h.compacted();
  const cases = [
    { label: 'a huge constant, in the check', kind: 'triggers', sql: HUGE_CONSTANT, budget: 'time', reason: /checking the query took longer than 1000 ms \(TRIGGER_TIMEOUT_MS\)/ },
    { label: 'a 2 GB string, in the check', kind: 'segments', sql: HUGE_STRING, budget: 'memory', reason: /memory than its org's share/ },
    { label: 'a runaway over real rows, in the run', kind: 'triggers', sql: RUNAWAY, budget: 'time', reason: /ran longer than 1000 ms and was interrupted \(TRIGGER_TIMEOUT_MS\)/ },
  ];
  for (const { label, kind, sql, budget, reason } of cases) {
    for (let attempt = 1; attempt <= 3; attempt++) {
      // A checker the machine starves (not the query: too little CPU in its time) answers 503 sandbox_busy
      // with Retry-After; a client sends again, and the verdict must come then. The bug this file guards
      // answered busy every time: that still fails, at the scaled deadline.
      const res = await asClientRetries(() => h.admin('POST', `/admin/v1/orgs/acme/${kind}/x/preview`, { sql }));
      t.equal(res.statusCode, 422, `${label}, try ${attempt}: ${res.body.slice(0, 300)}`);
      t.match(res.json(), { code: 'query_budget_exceeded', budget, reason }, `${label}, try ${attempt}: the budget is named`);
      t.notOk(res.headers['retry-after'], 'a verdict is not asked again');
    }
  }
  const fine = await h.admin('POST', '/admin/v1/orgs/acme/triggers/x/preview', { sql: `SELECT ${SIX} FROM event_triggers WHERE ${WINDOW}` });
  t.equal(fine.statusCode, 200, `the org's next cheap query runs: ${fine.body.slice(0, 200)}`);
});
