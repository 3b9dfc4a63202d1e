/**
 * Each org of a batch is reported as soon as its own commit ends: an org's real-time flows, profile
 * refresh and read-your-writes lookups do not wait for another org's commit in the same batch, which
 * waits for whatever that org's database is answering (its flows' statements: flow-fairness.test.ts).
 * Real embedded log, real DuckDB files.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { testCompactor } from '../../helpers/test-compactor.js';
import { OrgDatabases } from '../../../src/storage/org-databases.js';
import { LocalOrgStorage } from '../../../src/storage/org-storage.js';
import { EmbeddedLog } from '../../../src/events/log/embedded-log.js';
import { encodeRecord } from '../../../src/events/log/record-codec.js';
import type { LogEntry } from '../../../src/events/log/types.js';

const entry = (org: string, n: number): LogEntry => {
  const messageId = `${org}-${n}`;
  const body = { clientId: `c-${n}`, type: 'track', event: 'custom', messageId, traits: { email: `u${n}@example.com` }, properties: { eventName: 'x' } };
  return { kind: 'event', org, environment: 'production', messageId, receivedAt: Date.now(), body: JSON.stringify(body), code: null, errors: null, facts: null };
};

t.test("an org's commit is reported before the next org's of the same batch ends", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'report-per-org-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const log = await EmbeddedLog.open(join(dir, 'log'));
  // One record, so one batch: the quiet org's event, then the busy org's.
  await log.write('record-0', encodeRecord([entry('quiet', 0), entry('busy', 0)]));
  const pool = new OrgDatabases(join(dir, 'orgs'), { maxOpen: 4, memoryLimit: '256MB', threads: 1, idleCloseMs: 60_000 });
  const orgs = new LocalOrgStorage(pool);
  const seen: string[] = [];
  // The busy org's database answers a statement that holds it until the quiet org is reported (or 30 s).
  let quietReported: () => void = () => {};
  const reported = new Promise<void>((resolve) => (quietReported = resolve));
  let holdLimit: NodeJS.Timeout | undefined;
  t.teardown(() => clearTimeout(holdLimit));
  const busyDb = orgs.org('busy');
  const realTransaction = busyDb.transaction.bind(busyDb);
  busyDb.transaction = (async (work: Parameters<typeof realTransaction>[0]) => {
    seen.push('busy commit starts');
    await Promise.race([reported, new Promise((r) => (holdLimit = setTimeout(r, 30_000)))]);
    const result = await realTransaction(work);
    seen.push('busy committed');
    return result;
  }) as typeof busyDb.transaction;
  const compactor = testCompactor(join(dir, 'orgs'), {
    orgs,
    log,
    logger: { error: (details) => t.fail(`compactor error ${JSON.stringify(details)}`) },
    afterCommit: async (report) => {
      seen.push(`reported ${report.orgs.join()}`);
      if (report.orgs.includes('quiet')) quietReported();
    },
  });
  await compactor.start();
  await compactor.whenCompacted(1);
  await compactor.stop();
  await log.close();
  await pool.close();
  t.same(seen, ['reported quiet', 'busy commit starts', 'busy committed', 'reported busy'], 'the quiet org was told before the busy org committed');
});
