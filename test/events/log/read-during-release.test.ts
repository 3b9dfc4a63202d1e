/**
 * A release of compacted segments that lands while a read of later segments waits on the disk. The read
 * used to loop over the live segment array, which the release splices: the loop then stepped over the
 * segment after the one it was reading, the reader moved its position past those records anyway, and
 * the compactor committed past them; the next release deleted them (issue 37: 4,600 of 15,802 acknowledged
 * events lost in a loaded run). The window is opened deterministically here: the release is made while
 * the read is suspended at its first await.
 */
import t, { type Test } from 'tap';
import { EmbeddedLog } from '../../../src/events/log/embedded-log.js';
import { EmbeddedTail } from '../../../src/events/log/embedded-tail.js';
import type { LayoutChange } from '../../../src/events/log/segments.js';
import type { LogReader } from '../../../src/events/log/types.js';

const SEGMENT_BYTES = 1024;
const payload = (i: number): Buffer => Buffer.from(`record ${i} `.repeat(10));

async function segmentedLog(t: Test, count: number): Promise<{ log: EmbeddedLog; starts: number[] }> {
  const log = await EmbeddedLog.open(t.testdir(), { segmentBytes: SEGMENT_BYTES, retentionMs: 0 });
  t.teardown(() => log.close());
  for (let i = 1; i <= count; i++) await log.write(`id-${i}`, payload(i));
  const starts = log.layout().map((segment) => segment.firstSeq);
  t.ok(starts.length >= 5, `${starts.length} segments`);
  return { log, starts };
}

function seqs(records: Array<{ seq: number }>): number[] {
  return records.map((r) => r.seq);
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

async function readAll(reader: LogReader): Promise<number[]> {
  const all: number[] = [];
  for (let batch = await reader.read(1000, 0); batch.length > 0; batch = await reader.read(1000, 0)) all.push(...seqs(batch));
  return all;
}

t.test("the owner's reader: a release during a read of later segments loses none of them", async (t) => {
  const { log, starts } = await segmentedLog(t, 60);
  // Everything in the first segment is read (and compacted); the reader goes on from the second.
  const reader = await log.openReader(starts[1]! - 1);
  const reading = reader.read(1000, 0);
  t.equal(await log.release(starts[1]! - 1), 1, 'the first segment is deleted while the read waits on the disk');
  const records = await reading;
  t.same(seqs(records), range(starts[1]!, 60), 'every record after the position, none skipped');
  t.equal(reader.position, 60);
  t.same(reader.skipped, [], 'nothing passed without a record');
});

t.test("a tailing reader (the storage process's): the same window", async (t) => {
  const { log, starts } = await segmentedLog(t, 60);
  const changes: LayoutChange[] = [];
  const tail = new EmbeddedTail(log.share((change) => changes.push(change)));
  t.teardown(() => tail.close());
  const reader = await tail.openReader(starts[2]! - 1);
  const reading = reader.read(1000, 0);
  // Two segments released at once: the loop would have stepped over two.
  tail.changed({ kind: 'released', firstSeq: starts[2]! });
  const records = await reading;
  t.same(seqs(records), range(starts[2]!, 60), 'every record after the position');
  t.equal(reader.position, 60);
});

t.test('a reader never moves past a record it did not return, whatever the releases', async (t) => {
  const { log, starts } = await segmentedLog(t, 120);
  const changes: LayoutChange[] = [];
  const tail = new EmbeddedTail(log.share((change) => changes.push(change)));
  t.teardown(() => tail.close());
  const reader = await tail.openReader(0);
  const got: number[] = [];
  // Small reads, and after each a release up to what was read: as the compactor and the release task do.
  for (let batch = await reader.read(7, 0); batch.length > 0; batch = await reader.read(7, 0)) {
    got.push(...seqs(batch));
    const reading = reader.read(7, 0);
    const keep = starts.filter((start) => start <= reader.position + 1).at(-1)!;
    tail.changed({ kind: 'released', firstSeq: keep });
    const next = await reading;
    got.push(...seqs(next));
    if (next.length === 0) break;
  }
  t.same(got, range(1, 120), 'every record once, in order');
});

t.test('a reader below the oldest segment kept says which positions were released', async (t) => {
  const { log, starts } = await segmentedLog(t, 60);
  await log.release(starts[2]! - 1);
  const reader = await log.openReader(0);
  const records = await reader.read(1000, 0);
  t.same(reader.skipped, [{ from: 1, to: starts[2]! - 1, kind: 'released' }], 'released positions are named, not passed in silence');
  t.same(seqs(records), range(starts[2]!, 60));
  t.same(await readAll(reader), []);
});

t.test('positions where numbering resumed above a lost tail are a gap, not a release', async (t) => {
  const dir = t.testdir();
  const first = await EmbeddedLog.open(dir);
  for (let i = 1; i <= 5; i++) await first.write(`id-${i}`, payload(i));
  await first.close();
  const log = await EmbeddedLog.open(dir, { highWater: 9, onBehind: () => {} });
  t.teardown(() => log.close());
  for (let i = 10; i <= 12; i++) await log.write(`id-${i}`, payload(i));
  const reader = await log.openReader(3);
  t.same(seqs(await reader.read(100, 0)), [4, 5], 'a read stops where the run of records ends');
  t.same(reader.skipped, []);
  t.same(seqs(await reader.read(100, 0)), [10, 11, 12]);
  t.same(reader.skipped, [{ from: 6, to: 9, kind: 'gap' }]);

  // Reopened: the resumed segment is known as such from the files alone.
  await log.close();
  const again = await EmbeddedLog.open(dir, { highWater: 12 });
  t.teardown(() => again.close());
  const late = await again.openReader(5);
  t.same(seqs(await late.read(100, 0)), [10, 11, 12]);
  t.same(late.skipped, [{ from: 6, to: 9, kind: 'gap' }]);
});
