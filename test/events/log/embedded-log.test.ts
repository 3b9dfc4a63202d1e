/** The embedded file log: the shared contract, torn tails cut off on open, a real kill -9, and segments. */
import { spawn } from 'node:child_process';
import { appendFile, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { EmbeddedLog } from '../../../src/events/log/embedded-log.js';
import { LEGACY_LOG_FILE, type TornTail } from '../../../src/events/log/embedded-segments.js';
import { EmbeddedTail } from '../../../src/events/log/embedded-tail.js';
import { encodeFrame } from '../../../src/events/log/frame.js';
import { type LayoutChange, segmentFile } from '../../../src/events/log/segments.js';
import { logContract } from './contract.js';
import { ROOT } from '../../helpers/paths.js';

for (const [name, segmentBytes] of [
  ['embedded', undefined],
  ['embedded, a segment every few records', 300],
] as const) {
  logContract(t, name, async (t) => {
    const dir = t.testdir();
    const open = async (): Promise<EmbeddedLog> => {
      const log = await EmbeddedLog.open(dir, { segmentBytes });
      t.teardown(() => log.close());
      return log;
    };
    return { backend: await open(), reopen: open };
  });
}

/** Reproducible payload of the record written as number `i`. */
const payload = (i: number): Buffer => Buffer.from(`record ${i} `.repeat(10));

/** A log holding records 1-3, closed; returns the file and the offset where frame 3 starts. */
async function threeRecords(t: Test): Promise<{ dir: string; file: string; goodBytes: number; thirdAt: number }> {
  const dir = t.testdir();
  const log = await EmbeddedLog.open(dir);
  for (const i of [1, 2, 3]) await log.write(`id-${i}`, payload(i));
  await log.close();
  const file = segmentFile(dir, 1);
  const goodBytes = (await stat(file)).size;
  return { dir, file, goodBytes, thirdAt: goodBytes - encodeFrame('id-3', payload(3)).length };
}

async function reopen(t: Test, dir: string): Promise<{ log: EmbeddedLog; tails: TornTail[] }> {
  const tails: TornTail[] = [];
  const log = await EmbeddedLog.open(dir, { onTornTail: (tail) => tails.push(tail) });
  t.teardown(() => log.close());
  return { log, tails };
}

async function assertRecords(t: Test, log: EmbeddedLog, count: number): Promise<void> {
  t.equal(await log.headSeq(), count, `${count} records survive`);
  const reader = await log.openReader(0);
  const records = await reader.read(100, 0);
  t.same(
    records.map((r) => [r.seq, Buffer.from(r.payload).toString()]),
    Array.from({ length: count }, (_, i) => [i + 1, payload(i + 1).toString()]),
  );
}

const tornTails: [string, (file: string, thirdAt: number) => Promise<void>, number][] = [
  ['garbage bytes after the last frame', (file) => appendFile(file, Buffer.from('not a frame at all, just noise')), 3],
  ['a zero-filled tail (a crash before the size metadata settled)', (file) => appendFile(file, Buffer.alloc(4096)), 3],
  ['half a frame header', (file) => appendFile(file, encodeFrame('id-4', payload(4)).subarray(0, 5)), 3],
  ['half a frame (length says more than the file holds)', (file) => appendFile(file, halfFrame()), 3],
  ['a flipped byte in the last frame payload', (file) => flipLastByte(file), 2],
];

for (const [name, damage, survivors] of tornTails) {
  t.test(`torn tail: ${name}`, async (t) => {
    const { dir, file, goodBytes, thirdAt } = await threeRecords(t);
    await damage(file, thirdAt);
    const { log, tails } = await reopen(t, dir);
    const keptBytes = survivors === 3 ? goodBytes : thirdAt;
    t.equal((await stat(file)).size, keptBytes, 'file cut back to the last good frame');
    t.equal(tails.length, 1, 'the cut is reported');
    t.match(tails[0], { file, keptBytes, records: survivors });
    await assertRecords(t, log, survivors);

    t.same(await log.write('id-next', payload(survivors + 1)), { seq: survivors + 1, duplicate: false }, 'next seq');
    await log.close();
    const again = await reopen(t, dir);
    t.equal(again.tails.length, 0, 'clean after the cut');
    await assertRecords(t, again.log, survivors + 1);
  });
}

t.test('damage inside the log (intact records after it) refuses to open instead of cutting', async (t) => {
  const { dir, file, thirdAt } = await threeRecords(t);
  const bytes = await readFile(file);
  const insideSecond = thirdAt - 3;
  bytes.writeUInt8(bytes.readUInt8(insideSecond) ^ 0xff, insideSecond);
  await writeFile(file, bytes);
  const tails: TornTail[] = [];
  await t.rejects(EmbeddedLog.open(dir, { onTornTail: (tail) => tails.push(tail) }), /damaged at byte \d+/);
  t.same(tails, []);
  t.same(await readFile(file), bytes, 'file left as it was, for a human to look at');
});

t.test('a clean file reopens without a cut', async (t) => {
  const { dir, goodBytes, file } = await threeRecords(t);
  const { log, tails } = await reopen(t, dir);
  t.same(tails, []);
  t.equal((await stat(file)).size, goodBytes);
  await assertRecords(t, log, 3);
});

t.test('writes after close are refused as unavailable', async (t) => {
  const log = await EmbeddedLog.open(t.testdir());
  await log.close();
  t.equal(log.isAvailable(), false);
  await t.rejects(log.write('late', payload(1)), { name: 'LogUnavailableError' });
});

t.test('concurrent writes of one id store it once', async (t) => {
  const log = await EmbeddedLog.open(t.testdir());
  t.teardown(() => log.close());
  const results = await Promise.all([1, 2, 3].map(() => log.write('twin', payload(1))));
  t.same(results.map((r) => r.seq), [1, 1, 1]);
  t.same(results.map((r) => r.duplicate), [false, true, true]);
  t.equal(await log.headSeq(), 1);
});

for (const [name, segmentBytes] of [
  ['one segment', 0],
  ['a new segment every few records', 256],
] as const) {
  t.test(`kill -9 while writing (${name}): every acknowledged record survives`, async (t) => {
    const dir = t.testdir();
    const child = join(dir, 'writer.mts');
    const logModule = join(ROOT, 'src/events/log/embedded-log.ts');
    await writeFile(
      child,
      `import { EmbeddedLog } from ${JSON.stringify(logModule)};
const log = await EmbeddedLog.open(${JSON.stringify(join(dir, 'log'))}, ${segmentBytes ? `{ segmentBytes: ${segmentBytes} }` : '{}'});
for (let i = 1; ; i++) {
  const { seq } = await log.write('k-' + i, Buffer.from(${JSON.stringify('record ')} + i + ' '));
  process.stdout.write(seq + '\\n');
}
`,
    );
    const proc = spawn(process.execPath, ['--import', 'tsx', child], { stdio: ['ignore', 'pipe', 'inherit'] });
    let acked = 0;
    await new Promise<void>((resolve, reject) => {
      let out = '';
      proc.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const lines = out.split('\n');
        out = lines.pop()!;
        if (lines.length > 0) acked = Number(lines[lines.length - 1]);
        if (acked >= 300 && proc.exitCode === null) proc.kill('SIGKILL');
      });
      proc.once('exit', (_code, signal) => (signal === 'SIGKILL' ? resolve() : reject(new Error('writer exited'))));
    });

    const { log } = await reopen(t, join(dir, 'log'));
    if (segmentBytes) t.ok(log.segmentCount > 10, `the writer started ${log.segmentCount} segments`);
    const head = await log.headSeq();
    t.ok(head >= acked, `acknowledged ${acked}, found ${head}`);
    const reader = await log.openReader(0);
    const records = await reader.read(head + 10, 0);
    t.equal(records.length, head);
    t.ok(
      records.every((r) => Buffer.from(r.payload).toString() === `record ${r.seq} `),
      'every record intact and in order',
    );
  });
}

/** A log of `count` records with segments of `segmentBytes`, left open. */
async function segmentedLog(t: Test, dir: string, count: number, options: { segmentBytes: number; retentionMs?: number }): Promise<EmbeddedLog> {
  const log = await EmbeddedLog.open(dir, options);
  t.teardown(() => log.close());
  for (let i = 1; i <= count; i++) await log.write(`id-${i}`, payload(i));
  return log;
}

/** The first seq of each segment file in `dir`. */
async function segmentStarts(dir: string): Promise<number[]> {
  return (await readdir(dir)).filter((name) => name.endsWith('.log')).map((name) => Number(name.replace('.log', ''))).sort((a, b) => a - b);
}

const SEGMENT_BYTES = 1024;

/** Where segments of `segmentBytes` start for records 1..count: as many whole frames as fit, since a
 *  frame never straddles two files. */
function expectedStarts(count: number, segmentBytes: number): number[] {
  const starts = [1];
  let size = 0;
  for (let i = 1; i <= count; i++) {
    const frame = encodeFrame(`id-${i}`, payload(i)).length;
    if (size > 0 && size + frame > segmentBytes) {
      starts.push(i);
      size = 0;
    }
    size += frame;
  }
  return starts;
}

t.test('a write that would pass the segment size starts a new file named after its first record', async (t) => {
  const dir = t.testdir();
  const log = await segmentedLog(t, dir, 30, { segmentBytes: SEGMENT_BYTES });
  const starts = await segmentStarts(dir);
  t.same(starts, expectedStarts(30, SEGMENT_BYTES), 'a new segment where the next frame would not fit');
  t.ok(starts.length > 3);
  for (const start of starts) t.ok((await stat(segmentFile(dir, start))).size <= SEGMENT_BYTES, `segment ${start} within the size`);
  t.equal(log.segmentCount, starts.length);
  t.equal(log.bytes, (await Promise.all(starts.map(async (start) => (await stat(segmentFile(dir, start))).size))).reduce((a, b) => a + b));
  await log.close();
  await assertRecords(t, (await reopen(t, dir)).log, 30);
});

t.test('a record larger than a segment gets a segment of its own', async (t) => {
  const dir = t.testdir();
  const log = await EmbeddedLog.open(dir, { segmentBytes: 64 });
  t.teardown(() => log.close());
  for (const i of [1, 2, 3]) await log.write(`id-${i}`, payload(i));
  t.same(await segmentStarts(dir), [1, 2, 3]);
  await assertRecords(t, log, 3);
});

t.test('release deletes closed segments whose records are all compacted, oldest first, never the one written', async (t) => {
  const dir = t.testdir();
  const log = await segmentedLog(t, dir, 40, { segmentBytes: SEGMENT_BYTES, retentionMs: 0 });
  const starts = await segmentStarts(dir);
  t.ok(starts.length >= 4, `${starts.length} segments`);

  t.equal(await log.release(starts[1]! - 2), 0, 'the first segment is not whole compacted: kept');
  t.equal(await log.release(starts[2]! - 1), 2, 'the first two segments are compacted: deleted');
  t.same(await segmentStarts(dir), starts.slice(2));
  t.equal(await log.release(Number.MAX_SAFE_INTEGER), starts.length - 3, 'all but the segment being written');
  t.same(await segmentStarts(dir), starts.slice(-1));

  const reader = await log.openReader(0);
  const records = await reader.read(100, 0);
  t.equal(records[0]?.seq, starts.at(-1), 'a reader from 0 starts at the oldest record kept');
  t.equal(records.at(-1)?.seq, 40);
  const { seq } = await log.write('id-41', payload(41));
  t.equal(seq, 41, 'numbering goes on');
  await log.close();
  const again = (await reopen(t, dir)).log;
  t.equal(await again.headSeq(), 41, 'a log whose first segment was deleted reopens where it was');
  t.same((await (await again.openReader(40)).read(10, 0)).map((r) => Buffer.from(r.payload).toString()), [payload(41).toString()]);
});

t.test('release keeps a compacted segment for the retention time after it was closed', async (t) => {
  const dir = t.testdir();
  const hour = 60 * 60 * 1000;
  const log = await segmentedLog(t, dir, 30, { segmentBytes: SEGMENT_BYTES, retentionMs: hour });
  t.equal(await log.release(Number.MAX_SAFE_INTEGER), 0, 'just closed: kept');
  t.equal(await log.release(Number.MAX_SAFE_INTEGER, Date.now() + hour + 1000), expectedStarts(30, SEGMENT_BYTES).length - 1, 'an hour later: deleted');
  await log.close();
  const reopened = await EmbeddedLog.open(dir, { segmentBytes: SEGMENT_BYTES, retentionMs: hour });
  t.teardown(() => reopened.close());
  await reopened.write('more', payload(1)); // closes the segment left from before
  await reopened.write('more-2', Buffer.alloc(SEGMENT_BYTES));
  t.equal(await reopened.release(Number.MAX_SAFE_INTEGER), 0, 'after a restart the retention counts from the file time');
});

t.test('a tailing reader follows appends across segments and lets go of released ones', async (t) => {
  const dir = t.testdir();
  const log = await EmbeddedLog.open(dir, { segmentBytes: SEGMENT_BYTES, retentionMs: 0 });
  t.teardown(() => log.close());
  await log.write('id-1', payload(1));
  const changes: LayoutChange[] = [];
  const tail = new EmbeddedTail(log.share((change) => changes.push(change)));
  t.teardown(() => tail.close());
  for (let i = 2; i <= 40; i++) await log.write(`id-${i}`, payload(i));
  for (const change of changes.splice(0)) tail.changed(change);
  t.equal(await tail.headSeq(), 40);
  const reader = await tail.openReader(0);
  const records = await reader.read(100, 0);
  t.same(
    records.map((r) => Buffer.from(r.payload).toString()),
    Array.from({ length: 40 }, (_, i) => payload(i + 1).toString()),
  );
  t.ok((await log.release(30)) > 0);
  for (const change of changes.splice(0)) tail.changed(change);
  const late = await (await tail.openReader(0)).read(100, 0);
  t.equal(late[0]?.seq, (await segmentStarts(dir))[0], 'the tail reads from the oldest segment kept');
});

t.test('damage in a segment that has later segments refuses to open', async (t) => {
  const dir = t.testdir();
  const log = await segmentedLog(t, dir, 30, { segmentBytes: SEGMENT_BYTES });
  await log.close();
  await appendFile(segmentFile(dir, 1), Buffer.from('noise'));
  await t.rejects(EmbeddedLog.open(dir), /damaged at byte \d+ of .*00000000000000000001\.log/);
});

t.test('a missing segment between two others refuses to open', async (t) => {
  const dir = t.testdir();
  const log = await segmentedLog(t, dir, 30, { segmentBytes: SEGMENT_BYTES });
  await log.close();
  await unlink(segmentFile(dir, expectedStarts(30, SEGMENT_BYTES)[1]!));
  await t.rejects(EmbeddedLog.open(dir), /starts at record \d+ but the segment before it ends at \d+/);
});

t.test('a torn tail in the newest segment is cut, right after a new segment was started', async (t) => {
  const dir = t.testdir();
  const second = expectedStarts(30, SEGMENT_BYTES)[1]!;
  const log = await segmentedLog(t, dir, second, { segmentBytes: SEGMENT_BYTES });
  await log.close();
  await appendFile(segmentFile(dir, second), halfFrame());
  const { log: reopened, tails } = await reopen(t, dir);
  t.equal(tails.length, 1);
  t.match(tails[0], { file: segmentFile(dir, second), records: 1 });
  await assertRecords(t, reopened, second);
});

t.test('a log from before segments (one events.log) becomes the first segment', async (t) => {
  const dir = t.testdir();
  const log = await segmentedLog(t, dir, 5, { segmentBytes: 1 << 20 });
  await log.close();
  await rename(segmentFile(dir, 1), join(dir, LEGACY_LOG_FILE));
  const { log: reopened } = await reopen(t, dir);
  t.same((await readdir(dir)).filter((name) => name.endsWith('.log')), ['00000000000000000001.log']);
  await assertRecords(t, reopened, 5);
});

function halfFrame(): Buffer {
  const frame = encodeFrame('id-4', payload(4));
  return frame.subarray(0, Math.floor(frame.length / 2));
}

async function flipLastByte(file: string): Promise<void> {
  const bytes = await readFile(file);
  const last = bytes.length - 1;
  bytes.writeUInt8(bytes.readUInt8(last) ^ 0xff, last);
  await writeFile(file, bytes);
}
