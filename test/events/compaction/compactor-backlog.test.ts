/**
 * The compactor tells the service when a batch came from a backlog (more records were already
 * waiting), so the profile refresher can leave DuckDB to draining it (profile-refresher.ts).
 * Real embedded log, real DuckDB file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { testCompactor } from '../../helpers/test-compactor.js';
import type { CommitReport } from '../../../src/events/compaction/compaction.js';
import { OrgDatabases } from '../../../src/storage/org-databases.js';
import { LocalOrgStorage } from '../../../src/storage/org-storage.js';
import { EmbeddedLog } from '../../../src/events/log/embedded-log.js';
import { encodeRecord } from '../../../src/events/log/record-codec.js';
import type { LogEntry } from '../../../src/events/log/types.js';

const RECORDS = 30;
const EVENTS_PER_RECORD = 10;

function entry(n: number): LogEntry {
  const messageId = `m-${n}`;
  const body = {
    clientId: `c-${n}`,
    type: 'track',
    event: 'custom',
    messageId,
    traits: { email: `u${n}@example.com` },
    properties: { eventName: 'x' },
  };
  return {
    kind: 'event',
    org: 'acme',
    environment: 'production',
    messageId,
    receivedAt: Date.now(),
    body: JSON.stringify(body),
    code: null,
    errors: null,
    facts: null,
  };
}

t.test('batches read from a backlog are reported as such; the one that catches up is not', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'compactor-backlog-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const log = await EmbeddedLog.open(join(dir, 'log'));
  for (let r = 0; r < RECORDS; r++) {
    const entries = Array.from({ length: EVENTS_PER_RECORD }, (_, i) => entry(r * EVENTS_PER_RECORD + i));
    await log.write(`record-${r}`, encodeRecord(entries));
  }
  const pool = new OrgDatabases(join(dir, 'orgs'), { maxOpen: 4, memoryLimit: '256MB', threads: 1, idleCloseMs: 60_000 });
  const reports: CommitReport[] = [];
  const compactor = testCompactor(join(dir, 'orgs'), {
    orgs: new LocalOrgStorage(pool),
    log,
    logger: { error: (details) => t.fail(`compactor error ${JSON.stringify(details)}`) },
    afterCommit: async (report) => {
      reports.push(report);
    },
  });
  await compactor.start();
  await compactor.whenCompacted(RECORDS);
  await compactor.stop();
  await log.close();
  await pool.close();

  t.ok(reports.length >= 2, `${reports.length} commits`);
  t.equal(reports[0]!.backlog, true, 'the first batch left records waiting');
  t.equal(reports.at(-1)!.backlog, false, 'the last batch caught up');
  const touched = reports.flatMap((r) => r.touched.map((k) => k.email));
  t.equal(new Set(touched).size, RECORDS * EVENTS_PER_RECORD, 'every contact reported once');
});
