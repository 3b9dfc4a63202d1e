/**
 * The embedded log's segment files as its owner opens them (embedded-log.ts): the one file of an older
 * log renamed to the first segment, each segment's frames indexed, and a torn tail of the last one cut
 * off.
 */
import { constants } from 'node:fs';
import { open, readdir, rename, stat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { readRecordFrames, scanFrames } from './frame-file.js';
import { readSegmentIndex, removeSegmentIndex, writeSegmentIndex } from './segment-index.js';
import type { RecentIds } from './recent-ids.js';
import { type OpenSegment, segmentFile, segmentFirstSeq } from './segments.js';
import { syncDirectory } from '../../core/sync-directory.js';

/** The one file of the log before it was kept in segments: renamed to the first segment on open. */
export const LEGACY_LOG_FILE = 'events.log';
// Not O_APPEND: writes go to an explicit offset, which also overwrites the remains of a failed write.
export const WRITE_FLAGS = constants.O_RDWR | constants.O_CREAT | constants.O_DSYNC;

/** A torn or corrupt tail that `open` removed. */
export interface TornTail {
  file: string;
  /** File size before and after the cut. */
  fileBytes: number;
  keptBytes: number;
  /** Whole records kept in the file. */
  records: number;
  reason: string;
}

/** A segment as the owner holds it: its write handle doubles as its read handle. */
export interface OwnedSegment extends OpenSegment {
  handle: Promise<FileHandle>;
  /** When its last frame was written (file mtime on open): `release` keeps it `retentionMs` past that. */
  closedAt: number;
}

/** The first seqs of the segments in `dir`, ascending; a log from before segments becomes segment 1. */
export async function segmentsIn(dir: string): Promise<number[]> {
  let names = await readdir(dir);
  if (names.includes(LEGACY_LOG_FILE)) {
    if (names.some((name) => segmentFirstSeq(name) !== undefined)) {
      throw new Error(`embedded log: ${join(dir, LEGACY_LOG_FILE)} next to segment files; move one of them away`);
    }
    await rename(join(dir, LEGACY_LOG_FILE), segmentFile(dir, 1));
    await syncDirectory(dir);
    names = await readdir(dir);
  }
  return names
    .map(segmentFirstSeq)
    .filter((seq): seq is number => seq !== undefined)
    .sort((a, b) => a - b);
}

/** A segment as opened, with the ids of its records when it was scanned (an index gives offsets only). */
export interface OpenedSegment {
  segment: OwnedSegment;
  ids: string[] | undefined;
}

/**
 * Opens one segment and indexes its frames: a sealed segment from its index file (segment-index.ts)
 * when it has a sound one, else by a scan, after which a sealed segment gets its index. Only the last
 * can hold a torn tail (a write is only ever in flight there), so it is cut off there and refused
 * anywhere else.
 */
export async function openSegment(dir: string, firstSeq: number, last: boolean, options: { onTornTail?: (tail: TornTail) => void }): Promise<OpenedSegment> {
  const file = segmentFile(dir, firstSeq);
  const created = !(await stat(file).then(
    () => true,
    () => false,
  ));
  const handle = await open(file, WRITE_FLAGS, 0o644);
  try {
    if (created) await syncDirectory(dir);
    const { size: fileBytes, mtimeMs } = await handle.stat();
    const opened = (offsets: number[], end: number) => ({ file, firstSeq, offsets, end, handle: Promise.resolve(handle), closedAt: last ? Number.POSITIVE_INFINITY : mtimeMs });
    const indexed = last ? undefined : await readSegmentIndex(file, firstSeq, fileBytes);
    if (indexed) return { segment: opened(indexed, fileBytes), ids: undefined };
    if (last) await removeSegmentIndex(file);
    const offsets: number[] = [];
    const ids: string[] = [];
    const scan = await scanFrames(handle, fileBytes, (offset, _length, id) => {
      offsets.push(offset);
      ids.push(id);
    });
    if (scan.validBytes < fileBytes) {
      if (!last) throw new Error(`embedded log damaged at byte ${scan.validBytes} of ${file} (${scan.stopReason}), a segment with later segments after it`);
      await handle.truncate(scan.validBytes);
      await handle.datasync();
      options.onTornTail?.({ file, fileBytes, keptBytes: scan.validBytes, records: offsets.length, reason: scan.stopReason ?? 'unknown' });
    }
    if (!last) await writeSegmentIndex(file, firstSeq, offsets, scan.validBytes);
    return { segment: opened(offsets, scan.validBytes), ids };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/**
 * The dedupe window as a scan of every record would have left it: the ids of the last `capacity`
 * records, oldest first. Segments opened from their index have no ids in memory; the records the
 * window needs from them are read (the tail of the newest such segments only).
 */
export async function rememberRecentIds(opened: readonly OpenedSegment[], recent: RecentIds, capacity: number): Promise<void> {
  const tail: Array<{ firstSeq: number; ids: readonly string[] }> = [];
  let needed = capacity;
  for (let i = opened.length - 1; i >= 0 && needed > 0; i--) {
    const { segment, ids } = opened[i]!;
    const records = segment.offsets.length;
    const count = Math.min(needed, records);
    if (count === 0) continue;
    const from = records - count + 1;
    const kept = ids ? ids.slice(ids.length - count) : (await readRecordFrames(await segment.handle, segment.offsets, segment.end, from, records)).map((frame) => frame.id);
    tail.unshift({ firstSeq: segment.firstSeq + from - 1, ids: kept });
    needed -= count;
  }
  for (const { firstSeq, ids } of tail) ids.forEach((id, i) => recent.add(id, firstSeq + i));
}

/** Forgets the ids of segments older than the newest ones that already hold `capacity` records. */
export function dropIdsBeyond(opened: OpenedSegment[], capacity: number): void {
  let held = 0;
  for (let i = opened.length - 1; i >= 0; i--) {
    if (held >= capacity) opened[i]!.ids = undefined;
    else held += opened[i]!.segment.offsets.length;
  }
}
