/**
 * `audiencectl trigger test` (issue 26, part 4): a trigger's SQL over fixture events, compared with the
 * rows expected, without a service — so a team keeps trigger tests next to their SQL, in git and CI.
 * The SQL passes the service's own guard (sql-guard.ts) first: a query the service would refuse fails
 * the test. Then it runs over the window (default: every fixture event) with the same binding of the
 * placeholders as a flow run (sandbox.ts).
 */
import { microsToIso } from '../../events/compaction/visible-at.js';
import { compareRows, type Expected, formatDiff } from './expected-rows.js';
import { fixtureOrg } from './fixture-org.js';
import { QueryFailed, runSandboxed, windowOf } from './sandbox.js';
import { checkSql, SqlRefused, TRIGGER_COLUMNS } from './sql-guard.js';

/** Rows read at most: a fixture is tens of events; a query that returns more is a mistake to show. */
const MAX_ROWS = 10_000;

export interface TriggerTest {
  org: string;
  trigger: string;
  sql: string;
  /** JSONL: one event per line, as POSTed to /http/v1/collect. */
  fixture: string;
  expected: Expected;
  /** Window bounds, epoch ms: (from, to]. Default: every fixture event. */
  from?: number;
  to?: number;
}

export interface TriggerTestResult {
  passed: boolean;
  /** What to print: a line saying passed or failed, then the diff or the reason. */
  lines: string[];
}

/** Runs one test. Throws FixtureRefused when the fixture holds what the service would not take. */
export async function runTriggerTest(test: TriggerTest): Promise<TriggerTestResult> {
  const org = await fixtureOrg(test.org, test.fixture);
  try {
    const start = test.from === undefined ? 0n : BigInt(test.from) * 1000n;
    const end = test.to === undefined ? org.lastVisibleAt : BigInt(test.to) * 1000n;
    const name = `${test.org}/${test.trigger}`;
    const loaded = `${org.stored} events stored${org.pending > 0 ? `, ${org.pending} waiting for an identify (not in event_triggers)` : ''}${org.duplicates > 0 ? `, ${org.duplicates} ${org.duplicates === 1 ? 'duplicate' : 'duplicates'} dropped` : ''}`;
    const window = test.from === undefined && test.to === undefined ? 'window: every fixture event' : `window (${microsToIso(start)}, ${microsToIso(end)}]`;
    const failed = (why: string[]): TriggerTestResult => ({ passed: false, lines: [`FAIL ${name}: ${why[0]}`, ...why.slice(1), `  (${loaded}; ${window})`] });
    const outcome = await org.db.exclusive(async (c) => {
      try {
        const checked = await checkSql(c, test.sql, test.org, 'trigger');
        return { checked, page: await runSandboxed(c, checked, windowOf(start, end), MAX_ROWS) };
      } catch (error) {
        if (error instanceof SqlRefused) return { refused: `the service refuses this SQL (422 invalid_trigger): ${error.reason}` };
        if (error instanceof QueryFailed) return { refused: error.reason };
        throw error;
      }
    });
    if ('refused' in outcome) return failed([outcome.refused!]);
    const { checked, page } = outcome;
    // Rows carry the six trigger columns in lower case whatever the SQL wrote (sandbox.ts); others as written.
    const returned = checked.columns.map((c) => ((TRIGGER_COLUMNS as readonly string[]).includes(c.toLowerCase()) ? c.toLowerCase() : c));
    const absent = test.expected.columns.filter((c) => !returned.includes(c));
    if (absent.length > 0) return failed([`expected.json compares ${absent.join(', ')}, which the query does not return (it returns ${checked.columns.join(', ')})`]);
    if (page.truncated) return failed([`the query returned more than ${MAX_ROWS} rows over the fixture`]);
    const diff = compareRows(test.expected, page.rows);
    const compared = `${page.rows.length} ${page.rows.length === 1 ? 'row' : 'rows'} on ${test.expected.columns.join(', ')}${test.expected.ordered ? ', in order' : ''}`;
    if (diff.equal) return { passed: true, lines: [`ok ${name}: ${compared} (${loaded}; ${window})`] };
    const counts = [diff.missing.length > 0 ? `${diff.missing.length} missing` : '', diff.unexpected.length > 0 ? `${diff.unexpected.length} unexpected` : '', diff.order ? 'in another order' : '']
      .filter(Boolean)
      .join(', ');
    return failed([`${compared}: ${counts}`, ...formatDiff(diff)]);
  } finally {
    await org.db.close();
  }
}
