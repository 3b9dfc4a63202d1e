/**
 * A sealed segment's frame offsets, kept beside it in `<segment>.idx`, so that opening the log does not
 * read and check every frame of every segment: the service collects nothing until the log is open, and
 * that scan grew with the log (1.1 GB, 2.6 M records: 4.6 s from a cold cache on a quiet 2-core machine,
 * far longer beside other load; 0.27 s from the indexes). A segment is sealed once the writer has moved on
 * and never changes again; its index is written then (and after a scan on open found none).
 *
 *   [u32 LE magic "AIX1"][u32 LE record count][f64 LE segment bytes][f64 LE first seq][f64 LE offset × count][u32 LE crc32 of all before]
 *
 * An index is used only when its checksum holds, its byte count and first seq are the segment's and its offsets
 * rise from 0 inside it; anything else (missing, torn by a crash, from another file) means a scan, as
 * before. Frames themselves are still checked by their checksums whenever they are read.
 */
import { readFile, unlink, writeFile } from 'node:fs/promises';
import { crc32 } from 'node:zlib';

const MAGIC = 0x31584941;
const HEAD_BYTES = 24;

export function indexFile(segmentFile: string): string {
  return `${segmentFile}.idx`;
}

export function encodeSegmentIndex(firstSeq: number, offsets: readonly number[], end: number): Buffer {
  const bytes = Buffer.allocUnsafe(HEAD_BYTES + offsets.length * 8 + 4);
  bytes.writeUInt32LE(MAGIC, 0);
  bytes.writeUInt32LE(offsets.length, 4);
  bytes.writeDoubleLE(end, 8);
  bytes.writeDoubleLE(firstSeq, 16);
  offsets.forEach((offset, i) => bytes.writeDoubleLE(offset, HEAD_BYTES + i * 8));
  bytes.writeUInt32LE(crc32(bytes.subarray(0, bytes.length - 4)), bytes.length - 4);
  return bytes;
}

/** The offsets an index holds for the segment from `firstSeq` of `segmentBytes`, or undefined when it does not describe it. */
export function decodeSegmentIndex(bytes: Buffer, firstSeq: number, segmentBytes: number): number[] | undefined {
  if (bytes.length < HEAD_BYTES + 4 || bytes.readUInt32LE(0) !== MAGIC) return undefined;
  const count = bytes.readUInt32LE(4);
  if (bytes.length !== HEAD_BYTES + count * 8 + 4) return undefined;
  if (bytes.readUInt32LE(bytes.length - 4) !== crc32(bytes.subarray(0, bytes.length - 4))) return undefined;
  if (bytes.readDoubleLE(8) !== segmentBytes || bytes.readDoubleLE(16) !== firstSeq) return undefined;
  const offsets = new Array<number>(count);
  for (let i = 0; i < count; i++) {
    const offset = bytes.readDoubleLE(HEAD_BYTES + i * 8);
    if (!(i === 0 ? offset === 0 : offset > offsets[i - 1]!) || offset >= segmentBytes) return undefined;
    offsets[i] = offset;
  }
  return offsets;
}

export async function readSegmentIndex(segmentFile: string, firstSeq: number, segmentBytes: number): Promise<number[] | undefined> {
  const bytes = await readFile(indexFile(segmentFile)).catch(() => undefined);
  return bytes === undefined ? undefined : decodeSegmentIndex(bytes, firstSeq, segmentBytes);
}

/**
 * Not synced: an index lost or torn by a crash is only a scan at the next open. A failure to write one
 * is not the log's failure either: the index is removed, so that no stale one stays.
 */
export async function writeSegmentIndex(segmentFile: string, firstSeq: number, offsets: readonly number[], end: number): Promise<void> {
  await writeFile(indexFile(segmentFile), encodeSegmentIndex(firstSeq, offsets, end)).catch(() => removeSegmentIndex(segmentFile));
}

export function removeSegmentIndex(segmentFile: string): Promise<void> {
  return unlink(indexFile(segmentFile)).catch(() => {});
}
