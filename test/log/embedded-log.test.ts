/** The embedded file log: the shared contract, torn tails cut off on open, and a real kill -9. */
import { spawn } from 'node:child_process';
import { appendFile, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { EMBEDDED_LOG_FILE, EmbeddedLog, type TornTail } from '../../src/log/embedded-log.js';
import { encodeFrame } from '../../src/log/frame.js';
import { logContract } from './contract.js';

logContract(t, 'embedded', async (t) => {
  const dir = t.testdir();
  const open = async (): Promise<EmbeddedLog> => {
    const log = await EmbeddedLog.open(dir);
    t.teardown(() => log.close());
    return log;
  };
  return { backend: await open(), reopen: open };
});

/** Reproducible payload of the record written as number `i`. */
const payload = (i: number): Buffer => Buffer.from(`record ${i} `.repeat(10));

/** A log holding records 1-3, closed; returns the file and the offset where frame 3 starts. */
async function threeRecords(t: Test): Promise<{ dir: string; file: string; goodBytes: number; thirdAt: number }> {
  const dir = t.testdir();
  const log = await EmbeddedLog.open(dir);
  for (const i of [1, 2, 3]) await log.write(`id-${i}`, payload(i));
  await log.close();
  const file = join(dir, EMBEDDED_LOG_FILE);
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

t.test('kill -9 while writing: every acknowledged record survives', async (t) => {
  const dir = t.testdir();
  const child = join(dir, 'writer.mts');
  const logModule = fileURLToPath(new URL('../../src/log/embedded-log.ts', import.meta.url));
  await writeFile(
    child,
    `import { EmbeddedLog } from ${JSON.stringify(logModule)};
const log = await EmbeddedLog.open(${JSON.stringify(join(dir, 'log'))});
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
