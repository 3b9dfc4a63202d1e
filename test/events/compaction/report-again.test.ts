/**
 * A compactor started after another ended tells again the commits made at or after the last report the
 * service received: a storage process killed between a commit and its report left those contacts with
 * their old profiles, and a read-your-writes lookup of a new contact answered 404 (the CI of stop 51,
 * freshness.test.ts). Told before `holds` answers, so a lookup that waits for the refresh after a true
 * answer waits for theirs. Real embedded log, real DuckDB files.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { testCompactor } from '../../helpers/test-compactor.js';
import type { CommitReport } from '../../../src/events/compaction/compaction.js';
import { OrgDatabases } from '../../../src/storage/org-databases.js';
import { LocalOrgStorage } from '../../../src/storage/org-storage.js';
import { EmbeddedLog } from '../../../src/events/log/embedded-log.js';
import { encodeRecord } from '../../../src/events/log/record-codec.js';
import type { LogEntry } from '../../../src/events/log/types.js';

const entry = (org: string, email: string, environment: 'production' | 'staging' = 'production'): LogEntry => {
  const messageId = `${org}-${email}-${environment}`;
  const body = { clientId: `c-${email}`, type: 'track', event: 'custom', messageId, traits: { email }, properties: { eventName: 'x' } };
  return { kind: 'event', org, environment, messageId, receivedAt: Date.now(), body: JSON.stringify(body), code: null, errors: null, facts: null };
};

async function setUp(t: Test) {
  const dir = mkdtempSync(join(tmpdir(), 'report-again-'));
  const log = await EmbeddedLog.open(join(dir, 'log'));
  const pool = new OrgDatabases(join(dir, 'orgs'), { maxOpen: 4, memoryLimit: '256MB', threads: 1, idleCloseMs: 60_000 });
  const orgs = new LocalOrgStorage(pool);
  t.teardown(async () => {
    await log.close();
    await pool.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const compactor = (afterCommit: (report: CommitReport) => void) =>
    testCompactor(join(dir, 'orgs'), {
      orgs,
      log,
      logger: { error: (details, message) => t.fail(`compactor error: ${message} ${String((details as { err?: unknown }).err)}`) },
      afterCommit: async (report) => afterCommit(report),
    });
  // Three batches: early's event; alpha's; then bravo's (one production, one not) and alpha's again, whose reports are lost.
  const reports: CommitReport[] = [];
  const first = compactor((report) => reports.push(report));
  await first.start();
  const batches = [[entry('early', 'c1@example.com')], [entry('alpha', 'a1@example.com')], [entry('bravo', 'b1@example.com'), entry('bravo', 'b2@example.com', 'staging'), entry('alpha', 'a2@example.com')]];
  for (const [i, batch] of batches.entries()) {
    await log.write(`record-${i}`, encodeRecord(batch));
    await first.whenCompacted(i + 1);
  }
  await first.stop();
  t.same(reports.map((r) => r.orgs.join()), ['early', 'alpha', 'bravo', 'alpha'], 'the first compactor reported each commit');
  // The service received the first two: it knows the second's commit time.
  return { compactor, reportedSince: reports[1]!.committedAt };
}

t.test('the commits at or after the last report received are told again, before holds answers', async (t) => {
  const { compactor, reportedSince } = await setUp(t);
  const seen: string[] = [];
  const again: CommitReport[] = [];
  const next = compactor((report) => {
    again.push(report);
    seen.push(`reported ${report.orgs.join()}`);
  });
  await next.start({ reportedSince });
  t.teardown(() => next.stop());
  const held = await next.holds('bravo', 'bravo-b1@example.com-production');
  seen.push(`holds ${held}`);
  t.same(seen.slice(-1), ['holds true'], 'the lost event is held');
  t.same(seen.slice(0, -1).sort(), ['reported alpha', 'reported bravo'], 'alpha and bravo told again before the answer; early, committed before, not');
  const touched = (org: string) => again.filter((r) => r.orgs[0] === org).flatMap((r) => r.touched.map((k) => k.email)).sort();
  t.same(touched('bravo'), ['b1@example.com'], "bravo's production contact (not the staging one)");
  t.same(touched('alpha'), ['a1@example.com', 'a2@example.com'], "alpha's commits at or after the last report: that one again, and the lost one");
  for (const r of again) t.ok(r.newest.length === 1 && r.newest[0]![1] > 0 && r.committedAt >= reportedSince, `${r.orgs} has its newest receipt and commit time`);
});

t.test('started without reportedSince (one process: nothing lost between commit and report), nothing is told again', async (t) => {
  const { compactor } = await setUp(t);
  const again: CommitReport[] = [];
  const next = compactor((report) => again.push(report));
  await next.start();
  t.teardown(() => next.stop());
  t.equal(await next.holds('bravo', 'bravo-b1@example.com-production'), true);
  t.same(again, [], 'no report');
});
