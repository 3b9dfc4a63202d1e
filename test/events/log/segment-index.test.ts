/**
 * Sealed segments' index files (src/events/log/segment-index.ts): opening the log reads a sealed segment's
 * offsets from its index instead of scanning its frames, and a log opened that way is the log a scan
 * would give — the same records at the same positions, the same dedupe window — whatever state the
 * indexes are in (missing, torn, garbage, another segment's, stale sizes).
 */
import { readdir, readFile, truncate, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { EmbeddedLog } from '../../../src/events/log/embedded-log.js';
import { dropIdsBeyond, type OpenedSegment, openSegment, rememberRecentIds, segmentsIn } from '../../../src/events/log/embedded-segments.js';
import { RecentIds } from '../../../src/events/log/recent-ids.js';
import { decodeSegmentIndex, encodeSegmentIndex, indexFile } from '../../../src/events/log/segment-index.js';
import type { LogReader } from '../../../src/events/log/types.js';

const payload = (i: number, size: number) => Buffer.alloc(size, i % 251);

async function readAll(reader: LogReader): Promise<Array<[number, string]>> {
  const records: Array<[number, string]> = [];
  for (;;) {
    const batch = await reader.read(50, 0);
    if (batch.length === 0) return records;
    for (const r of batch) records.push([r.seq, Buffer.from(r.payload).toString('base64').slice(0, 12) + r.payload.length]);
  }
}

type Damage = 'none' | 'missing' | 'truncated' | 'garbage' | 'flipped' | 'other segment' | 'empty';

async function damage(segment: string, other: string | undefined, kind: Damage): Promise<void> {
  const file = indexFile(segment);
  const bytes = await readFile(file).catch(() => undefined);
  if (!bytes) return;
  if (kind === 'missing') await unlink(file);
  else if (kind === 'truncated') await truncate(file, Math.floor(bytes.length / 2));
  else if (kind === 'garbage') await writeFile(file, Buffer.from('not an index at all'));
  else if (kind === 'flipped') {
    bytes[bytes.length >> 1]! ^= 0x40;
    await writeFile(file, bytes);
  } else if (kind === 'other segment' && other) await writeFile(file, await readFile(indexFile(other)).catch(() => bytes));
  else if (kind === 'empty') await writeFile(file, Buffer.alloc(0));
}

t.test('every sealed segment gets an index; the one being written has none', async (t) => {
  const dir = join(t.testdir(), 'log');
  const log = await EmbeddedLog.open(dir, { segmentBytes: 2_000 });
  for (let i = 1; i <= 60; i++) await log.write(`id-${i}`, payload(i, 100));
  const names = await readdir(dir);
  const segments = names.filter((n) => n.endsWith('.log')).sort();
  t.ok(segments.length >= 3, `several segments (${segments.length})`);
  t.same(names.filter((n) => n.endsWith('.idx')).sort(), segments.slice(0, -1).map((n) => `${n}.idx`));
  await log.close();
});

t.test('an index is used only when it describes the segment', async (t) => {
  const offsets = [0, 120, 250];
  const bytes = encodeSegmentIndex(7, offsets, 400);
  t.same(decodeSegmentIndex(bytes, 7, 400), offsets);
  t.equal(decodeSegmentIndex(bytes, 7, 401), undefined, 'another size: the segment grew or was cut');
  t.equal(decodeSegmentIndex(bytes, 10, 400), undefined, "another segment's index, of the same size");
  t.equal(decodeSegmentIndex(encodeSegmentIndex(7, [0, 250, 120], 400), 7, 400), undefined, 'offsets that do not rise');
  t.equal(decodeSegmentIndex(encodeSegmentIndex(7, [10, 20], 400), 7, 400), undefined, 'a first frame not at 0');
  t.equal(decodeSegmentIndex(encodeSegmentIndex(7, [0, 400], 400), 7, 400), undefined, 'an offset at the end');
  const flipped = Buffer.from(bytes);
  flipped[30]! ^= 1;
  t.equal(decodeSegmentIndex(flipped, 7, 400), undefined, 'a checksum that fails');
  t.equal(decodeSegmentIndex(bytes.subarray(0, 10), 7, 400), undefined, 'torn');
  t.equal(decodeSegmentIndex(Buffer.alloc(0), 7, 0), undefined, 'empty');
});

t.test('a log opened from its indexes, whatever state they are in, is the log a scan gives', async (t) => {
  const base = t.testdir();
  let run = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.integer({ min: 0, max: 600 }), { minLength: 1, maxLength: 80 }),
      fc.integer({ min: 200, max: 3_000 }),
      fc.array(fc.constantFrom<Damage>('none', 'missing', 'truncated', 'garbage', 'flipped', 'other segment', 'empty'), { minLength: 1, maxLength: 12 }),
      async (sizes, segmentBytes, damages) => {
        const dir = join(base, `log-${run++}`);
        const log = await EmbeddedLog.open(dir, { segmentBytes });
        for (const [i, size] of sizes.entries()) await log.write(`id-${i + 1}`, payload(i + 1, size));
        const expected = await readAll(await log.openReader(0));
        await log.close();
        const segments = (await readdir(dir)).filter((n) => n.endsWith('.log')).sort().map((n) => join(dir, n));
        for (const [i, segment] of segments.entries()) await damage(segment, segments[(i + 1) % segments.length], damages[i % damages.length]!);

        const reopened = await EmbeddedLog.open(dir, { segmentBytes });
        try {
          if (JSON.stringify(await readAll(await reopened.openReader(0))) !== JSON.stringify(expected)) return false;
          // Every id written is still known to the dedupe window, at its position.
          for (let i = 1; i <= sizes.length; i++) {
            const again = await reopened.write(`id-${i}`, payload(i, 1));
            if (!again.duplicate || again.seq !== i) return false;
          }
          const next = await reopened.write('new', payload(0, 3));
          return next.seq === sizes.length + 1 && !next.duplicate;
        } finally {
          await reopened.close();
        }
      },
    ),
    { numRuns: 60 },
  );
  t.pass('60 generated logs');
});

t.test('the dedupe window holds the last records, across segments opened from their indexes', async (t) => {
  const base = t.testdir();
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 1, max: 120 }), fc.integer({ min: 150, max: 1_500 }), fc.integer({ min: 1, max: 50 }), async (count, segmentBytes, capacity) => {
      const dir = join(base, `log-${run++}`);
      const log = await EmbeddedLog.open(dir, { segmentBytes });
      for (let i = 1; i <= count; i++) await log.write(`id-${i}`, payload(i, 40));
      await log.close();
      // What a scan of every record leaves in a window of `capacity`.
      const scanned = new RecentIds(capacity);
      for (let i = 1; i <= count; i++) scanned.add(`id-${i}`, i);

      const firstSeqs = await segmentsIn(dir);
      const opened: OpenedSegment[] = [];
      for (const [i, firstSeq] of firstSeqs.entries()) {
        opened.push(await openSegment(dir, firstSeq, i === firstSeqs.length - 1, {}));
        dropIdsBeyond(opened, capacity);
      }
      const recent = new RecentIds(capacity);
      try {
        await rememberRecentIds(opened, recent, capacity);
      } finally {
        for (const { segment } of opened) await (await segment.handle).close();
      }
      for (let i = 1; i <= count; i++) if (recent.get(`id-${i}`) !== scanned.get(`id-${i}`)) return false;
      // Sealed segments came from their indexes (ids not in memory) except where the window needed them.
      return opened.slice(0, -1).every(({ ids }) => ids === undefined);
    }),
    { numRuns: 80 },
  );
  t.pass('80 generated windows');
});
