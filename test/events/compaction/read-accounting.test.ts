/**
 * The compactor commits a batch only when the read accounts for every position it passed (a record, or a
 * reason it holds none), and says when released positions held records no org had: generated reads
 * (fast-check) against the accounting, and a real compactor over a real embedded log whose segments are
 * released under it as fast as the release task can, and past its checkpoint.
 */
import { join } from 'node:path';
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { testCompactor } from '../../helpers/test-compactor.js';
import { accountRead, lostAbove } from '../../../src/events/compaction/read-accounting.js';
import { EmbeddedLog } from '../../../src/events/log/embedded-log.js';
import { EmbeddedTail } from '../../../src/events/log/embedded-tail.js';
import { encodeRecord } from '../../../src/events/log/record-codec.js';
import type { EmptyRange, LogEntry } from '../../../src/events/log/types.js';
import { createMetrics } from '../../../src/ops/metrics.js';
import { OrgDatabases } from '../../../src/storage/org-databases.js';
import { LocalOrgStorage } from '../../../src/storage/org-storage.js';
import { scaled } from '../../helpers/deadline.js';

const record = (seq: number) => ({ seq, payload: new Uint8Array() });

t.test('a read that accounts for each position it passed is whole; any other has a hole', async (t) => {
  // A generated read: positions after `from`, each a record, a gap or released, or (the fault) neither.
  const kinds = fc.constantFrom('record', 'gap', 'released', 'missing' as const);
  fc.assert(
    fc.property(fc.nat(1000), fc.array(kinds, { maxLength: 60 }), (from, layout) => {
      const records = layout.flatMap((kind, i) => (kind === 'record' ? [record(from + 1 + i)] : []));
      const skipped: EmptyRange[] = [];
      layout.forEach((kind, i) => {
        if (kind !== 'gap' && kind !== 'released') return;
        const last = skipped.at(-1);
        if (last && last.kind === kind && last.to === from + i) last.to++;
        else skipped.push({ from: from + 1 + i, to: from + 1 + i, kind });
      });
      const account = accountRead(from, records, skipped, from + layout.length);
      const firstMissing = layout.indexOf('missing');
      if (firstMissing === -1) {
        return account.kind === 'whole' && account.released.length === skipped.filter((s) => s.kind === 'released').length;
      }
      return account.kind === 'hole' && account.from === from + 1 + firstMissing;
    }),
    { numRuns: 2000 },
  );
  t.match(accountRead(4, [record(5), record(5)], [], 5), { kind: 'hole', reason: /twice/ }, 'a record returned twice');
  t.match(accountRead(4, [record(5), record(7)], [], 7), { kind: 'hole', from: 6, to: 6 }, 'a record stepped over');
  t.match(accountRead(4, [record(5)], [], 9), { kind: 'hole', from: 6, to: 9 }, 'a position moved past the last record');
  t.same(lostAbove([{ from: 1, to: 10, kind: 'released' }], 4), [{ from: 5, to: 10 }], 'released above the checkpoint: lost');
  t.same(lostAbove([{ from: 1, to: 10, kind: 'released' }], 10), [], 'released up to the checkpoint: every org had them');
});

function entry(n: number): LogEntry {
  const messageId = `m-${n}`;
  const body = { clientId: `c-${n}`, type: 'track', event: 'custom', messageId, traits: { email: `u${n % 40}@example.com` }, properties: { eventName: 'x' } };
  return { kind: 'event', org: 'acme', environment: 'production', messageId, receivedAt: Date.now(), body: JSON.stringify(body), code: null, errors: null, facts: null };
}

async function compactorOver(t: Test, log: EmbeddedLog, tail: EmbeddedTail, dir: string) {
  const pool = new OrgDatabases(join(dir, 'orgs'), { maxOpen: 4, memoryLimit: '256MB', threads: 1, idleCloseMs: 60_000 });
  const orgs = new LocalOrgStorage(pool);
  const errors: Array<{ message: string; details: object }> = [];
  const metrics = createMetrics();
  const compactor = testCompactor(join(dir, 'orgs'), {
    orgs,
    log: tail,
    metrics,
    logger: { error: (details, message) => errors.push({ details, message }) },
  });
  t.teardown(async () => {
    await compactor.stop();
    await tail.close();
    await log.close();
    await pool.close();
  });
  const stored = async () => Number((await orgs.org('acme').all<{ n: bigint }>('SELECT count(DISTINCT message_id) AS n FROM events'))[0]!.n);
  const lost = async () => (await metrics.registry.getSingleMetric('audience_log_records_lost_total')!.get()).values[0]?.value ?? 0;
  return { compactor, errors, stored, lost };
}

async function until(condition: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + scaled(ms);
  while (Date.now() < deadline) {
    if (await condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return condition();
}

t.test('a compactor whose compacted segments are released as it reads stores every record', async (t) => {
  const dir = t.testdir();
  // Segments of a few records, no retention, a release after every append: the window of issue 37.
  const log = await EmbeddedLog.open(join(dir, 'log'), { segmentBytes: 2048, retentionMs: 0 });
  const tail = new EmbeddedTail(log.share((change) => tail.changed(change)));
  const { compactor, errors, stored, lost } = await compactorOver(t, log, tail, dir);
  await compactor.start();
  const total = 2000;
  const began = Date.now();
  let released = 0;
  let writing = true;
  // The release task as fast as it can go, beside the appends.
  const releasing = (async () => {
    const deadline = Date.now() + scaled(120_000);
    while ((writing || compactor.compactedSeq < (await log.headSeq())) && Date.now() < deadline) {
      released += await log.release(compactor.retainFromSeq);
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  for (let n = 0; n < total; n += 5) await log.write(`r-${n}`, encodeRecord([0, 1, 2, 3, 4].map((i) => entry(n + i))));
  writing = false;
  t.comment(`written in ${Date.now() - began} ms`);
  await releasing;
  t.ok(await until(async () => (await stored()) === total, 120_000), 'every event reaches the org database');
  t.equal(await stored(), total, `${total} events stored`);
  t.comment(`compacted in ${Date.now() - began} ms`);
  t.ok(released > 10, `${released} segments released while the compactor read`);
  t.equal(await lost(), 0, 'nothing counted lost');
  t.same(errors, [], 'nothing logged');
});

t.test('records released before compaction read them are counted and logged, never passed in silence', async (t) => {
  const dir = t.testdir();
  const log = await EmbeddedLog.open(join(dir, 'log'), { segmentBytes: 2048, retentionMs: 0 });
  const tail = new EmbeddedTail(log.share((change) => tail.changed(change)));
  const { compactor, errors, stored, lost } = await compactorOver(t, log, tail, dir);
  for (let n = 0; n < 200; n += 5) await log.write(`r-${n}`, encodeRecord([0, 1, 2, 3, 4].map((i) => entry(n + i))));
  // Released past anything compacted (a retention bug, a stream's age limit): the compactor starts after.
  const oldest = log.layout()[2]!.firstSeq;
  await log.release(oldest - 1);
  await compactor.start();
  t.ok(await until(async () => (await lost()) > 0 && (await stored()) === 200 - (oldest - 1) * 5, 30_000), 'the rest is stored and the loss counted');
  t.equal(await lost(), oldest - 1, 'audience_log_records_lost_total counts the released positions');
  t.match(errors, [{ message: /log records were removed before compaction read them/, details: { from: 1, to: oldest - 1, records: oldest - 1 } }], 'one error line names them');
});
