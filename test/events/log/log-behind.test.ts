/**
 * A log behind the high-water mark (storage/checkpoint.ts) goes on above it: the embedded log on real
 * files — a cut tail, a removed directory, an older copy put back — and JetStream on a private
 * nats-server (a stream deleted and recreated). Positions an org database may hold are never handed
 * out again, and the skip is reported once.
 */
import { cp, mkdir, readdir, rm, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import t, { type Test } from 'tap';
import { EmbeddedLog, type EmbeddedLogOptions } from '../../../src/events/log/embedded-log.js';
import { EmbeddedTail } from '../../../src/events/log/embedded-tail.js';
import { encodeFrame } from '../../../src/events/log/frame.js';
import { JetStreamLog } from '../../../src/events/log/jetstream-log.js';
import { type LayoutChange, segmentFile } from '../../../src/events/log/segments.js';
import { describeLogBehind, type LogBehind, LogBehindError, type LogReader } from '../../../src/events/log/types.js';
import { hasNatsServerBinary, startNatsServer } from '../../helpers/nats-server.js';

const payload = (i: number): Buffer => Buffer.from(`record ${i} `.repeat(4));

async function openLog(t: Test, dir: string, options: EmbeddedLogOptions = {}): Promise<{ log: EmbeddedLog; reports: LogBehind[] }> {
  const reports: LogBehind[] = [];
  const log = await EmbeddedLog.open(dir, { ...options, onBehind: (behind) => reports.push(behind) });
  t.teardown(() => log.close());
  return { log, reports };
}

/** A closed log of records 1..count in one segment. */
async function writeRecords(t: Test, dir: string, count: number): Promise<void> {
  const { log } = await openLog(t, dir);
  for (let i = 1; i <= count; i++) await log.write(`id-${i}`, payload(i));
  await log.close();
}

/** The positions of everything a reader hands out, read 4 at a time; each record is the one written at its position. */
async function readAll(reader: LogReader): Promise<number[]> {
  const seqs: number[] = [];
  for (;;) {
    const records = await reader.read(4, 0);
    if (records.length === 0) return seqs;
    for (const record of records) seqs.push(Buffer.from(record.payload).equals(payload(record.seq)) ? record.seq : -record.seq);
  }
}

/** Bytes of the first `count` records' frames. */
const framesBytes = (count: number) => range(1, count).reduce((sum, i) => sum + encodeFrame(`id-${i}`, payload(i)).length, 0);

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Each way an embedded log loses records that org databases already hold (high-water mark 30). */
const damages: Array<[string, (dir: string, copy: string) => Promise<void>, number]> = [
  ['its tail cut (the last segment truncated)', (dir) => truncate(segmentFile(dir, 1), framesBytes(10)), 10],
  ['its directory removed', (dir) => rm(dir, { recursive: true }), 0],
  ['an older copy put back', async (dir, copy) => (await rm(dir, { recursive: true }), await cp(copy, dir, { recursive: true })), 12],
];

for (const [name, damage, kept] of damages) {
  t.test(`a log with ${name} numbers new records above the high-water mark`, async (t) => {
    const dir = join(t.testdir(), 'log');
    const copy = join(t.testdirName, 'copy');
    await writeRecords(t, dir, 12);
    await cp(dir, copy, { recursive: true });
    const { log: more } = await openLog(t, dir);
    for (let i = 13; i <= 30; i++) await more.write(`id-${i}`, payload(i));
    await more.close();
    await damage(dir, copy);

    const { log, reports } = await openLog(t, dir, { highWater: 30, compactedSeq: 28 });
    t.same(reports, [{ headSeq: kept, highWater: 30, compactedSeq: 28 }], 'the skip is reported once, with what was there');
    t.equal(await log.headSeq(), 30, 'the head is the mark: nothing at or below it is handed out again');
    t.same(await log.write('new-1', payload(31)), { seq: 31, duplicate: false }, 'the next record is 31');
    await log.write('new-2', payload(32));
    t.same(await readAll(await log.openReader(0)), [...range(1, kept), 31, 32], 'a reader gets what was kept, then the new records, with their positions');

    const behindReader = await log.openReader(28);
    t.same(await readAll(behindReader), [31, 32], 'a reader at the checkpoint passes over the skipped positions');
    t.equal(behindReader.position, 32);

    await log.close();
    const { log: again, reports: later } = await openLog(t, dir, { highWater: 32, compactedSeq: 32 });
    t.same(later, [], 'reopened: the skipped positions are no damage and no second report');
    t.same(await again.write('new-3', payload(33)), { seq: 33, duplicate: false });
    t.same(await readAll(await again.openReader(0)), [...range(1, kept), 31, 32, 33]);
  });
}

t.test('a reader caught up below the mark reads through the skipped positions at once', async (t) => {
  const dir = join(t.testdir(), 'log');
  await writeRecords(t, dir, 10);
  const { log } = await openLog(t, dir, { highWater: 50, compactedSeq: 10 });
  const reader = await log.openReader(10);
  t.same(await reader.read(100, 0), [], 'no record');
  t.equal(reader.position, 50, 'but every position up to the head is read (compaction, backups and lag see the head reached)');
});

t.test('the storage worker tails a log that resumed above the mark', async (t) => {
  const dir = join(t.testdir(), 'log');
  await writeRecords(t, dir, 5);
  const { log } = await openLog(t, dir, { highWater: 40 });
  const changes: LayoutChange[] = [];
  const tail = new EmbeddedTail(log.share((change) => changes.push(change)));
  t.teardown(() => tail.close());
  t.equal(await tail.headSeq(), 40);
  for (let i = 1; i <= 3; i++) await log.write(`new-${i}`, payload(40 + i));
  for (const change of changes.splice(0)) tail.changed(change);
  t.same(await readAll(await tail.openReader(0)), [1, 2, 3, 4, 5, 41, 42, 43]);
});

t.test('a log at or above the mark opens as it is', async (t) => {
  const dir = join(t.testdir(), 'log');
  await writeRecords(t, dir, 10);
  const { log, reports } = await openLog(t, dir, { highWater: 10, compactedSeq: 10 });
  t.same(reports, []);
  t.same(await segmentNames(dir), ['00000000000000000001.log'], 'no new segment');
  t.same(await log.write('id-11', payload(11)), { seq: 11, duplicate: false });
});

t.test('a fresh directory without a mark starts at 1', async (t) => {
  const dir = join(t.testdir(), 'log');
  await mkdir(dir);
  const { log, reports } = await openLog(t, dir);
  t.same(reports, []);
  t.same(await log.write('id-1', payload(1)), { seq: 1, duplicate: false });
});

t.test('a missing segment above the mark is still damage', async (t) => {
  const dir = join(t.testdir(), 'log');
  const { log } = await openLog(t, dir, { segmentBytes: 3 * encodeFrame('id-1', payload(1)).length });
  for (let i = 1; i <= 9; i++) await log.write(`id-${i}`, payload(i));
  await log.close();
  t.same(await segmentNames(dir), ['00000000000000000001.log', '00000000000000000004.log', '00000000000000000007.log']);
  await rm(segmentFile(dir, 4));
  await t.rejects(EmbeddedLog.open(dir, { highWater: 5 }), /starts at record 7 but the segment before it ends at 3/, 'positions 4-6 are above the mark 5: refused');
  const { log: opened } = await openLog(t, dir, { highWater: 6 });
  t.equal(await opened.headSeq(), 9, 'at or below the mark they are positions compaction has passed');
});

t.test('the line an operator reads says what was skipped and what may be lost', async (t) => {
  const line = describeLogBehind('the embedded log (/data/log)', { headSeq: 10, highWater: 30, compactedSeq: 25 });
  t.notMatch(line, /\n/, 'one line');
  t.match(line, /ends at position 10 but they may hold up to 30/);
  t.match(line, /numbered from 31, skipping 20 positions/);
  t.match(line, /events after position 25 .* may be missing/);
  t.match(line, /docs\/operators\.md "A lost event log"/);
});

const withNats = hasNatsServerBinary() ? t.test : t.skip;

withNats('JetStream: a recreated, empty stream behind the mark is purged to start above it', async (t) => {
  const server = await startNatsServer(t);
  const reports: LogBehind[] = [];
  const open = (highWater: number) => JetStreamLog.open({ servers: server.url, highWater, compactedSeq: highWater - 2, onBehind: (b) => reports.push(b) });
  const first = await open(0);
  for (let i = 1; i <= 5; i++) await first.write(`id-${i}`, payload(i));
  await first.close();

  const admin = await connect({ servers: server.url });
  t.teardown(() => admin.close());
  const jsm = await jetstreamManager(admin);
  await jsm.streams.delete('AUDIENCE_EVENTS');

  const log = await open(5);
  t.teardown(() => log.close());
  t.same(reports, [{ headSeq: 0, highWater: 5, compactedSeq: 3 }], 'the skip is reported');
  const reader = await log.openReader(3);
  t.same(await reader.read(10, 0), []);
  t.equal(reader.position, 5, 'an empty stream is read up to its last sequence');
  t.same(await log.write('new-1', payload(6)), { seq: 6, duplicate: false }, 'the next record is above the mark');
  t.same((await reader.read(10, 1000)).map((r) => r.seq), [6]);

  await server.stop();
  await server.restart();
  const reopened = await open(6);
  t.teardown(() => reopened.close());
  t.equal(reports.length, 1, 'a stream at the mark is left alone');
  t.same(await reopened.write('new-2', payload(7)), { seq: 7, duplicate: false });
});

withNats('JetStream: a recreated stream that already holds records behind the mark refuses the start', async (t) => {
  const server = await startNatsServer(t);
  const collector = await JetStreamLog.open({ servers: server.url });
  t.teardown(() => collector.close());
  for (let i = 1; i <= 3; i++) await collector.write(`id-${i}`, payload(i), 'acme');
  const refused = JetStreamLog.open({ servers: server.url, highWater: 40 });
  await t.rejects(refused, LogBehindError);
  const message = await refused.catch((error: Error) => error.message);
  t.notMatch(message, /\n/, 'one line');
  t.match(message, /ends at sequence 3 \(3 records\), below position 40/);
  t.match(message, /nats stream purge AUDIENCE_EVENTS --seq 41/);
  t.equal(await collector.headSeq(), 3, 'nothing was deleted');
});

/** The segment files in `dir` (their index files beside them left out: segment-index.ts). */
async function segmentNames(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((name) => name.endsWith('.log'));
}
