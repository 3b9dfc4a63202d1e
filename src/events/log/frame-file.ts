/**
 * Frame I/O on the embedded log's file. Everything is positional (pread/pwrite at an explicit offset),
 * so readers and the writer share one file handle without a shared file position to disturb.
 */
import type { FileHandle } from 'node:fs/promises';
import { checkFrame, MIN_FRAME_BYTES, type Frame } from './frame.js';

/** Scan read size: large enough that a scan on open makes few syscalls, small enough to stay cheap. */
const SCAN_CHUNK_BYTES = 1024 * 1024;

export interface ScanResult {
  /** Bytes from the start of the file that hold whole, valid frames. */
  validBytes: number;
  /** Why the scan stopped before the end of the file (torn or corrupt frame), if it did. */
  stopReason?: string;
}

/** Visits every valid frame from the start of the file; stops at the first torn or corrupt one. */
export async function scanFrames(
  handle: FileHandle,
  fileBytes: number,
  onFrame: (offset: number, length: number, id: string) => void,
): Promise<ScanResult> {
  let buffer: Buffer = Buffer.alloc(0);
  let bufferStart = 0;
  let offset = 0;
  while (offset < fileBytes) {
    const check = checkFrame(buffer, offset - bufferStart, fileBytes - offset);
    if (check.kind === 'frame') {
      onFrame(offset, check.length, check.frame.id);
      offset += check.length;
    } else if (check.kind === 'corrupt') {
      // Only one frame is ever in flight, so a crash damages the last one alone. A damaged frame
      // followed by a sound one is damage inside the log: refuse, rather than cut acknowledged records.
      const next = check.length === undefined ? undefined : offset + check.length;
      if (next !== undefined && (await soundFrameAt(handle, next, fileBytes))) {
        throw new Error(`embedded log damaged at byte ${offset} (${check.reason}) with intact records after it`);
      }
      return { validBytes: offset, stopReason: check.reason };
    } else {
      // `short` only happens with bytes left in the file: refill the buffer starting at this frame.
      const length = Math.min(Math.max(check.needed, SCAN_CHUNK_BYTES), fileBytes - offset);
      buffer = await readFully(handle, offset, length);
      bufferStart = offset;
    }
  }
  return { validBytes: offset };
}

async function soundFrameAt(handle: FileHandle, offset: number, fileBytes: number): Promise<boolean> {
  if (offset >= fileBytes) return false;
  const header = await readFully(handle, offset, Math.min(MIN_FRAME_BYTES, fileBytes - offset));
  if (header.length < MIN_FRAME_BYTES) return false;
  const length = header.readUInt32LE(0);
  if (length < MIN_FRAME_BYTES || offset + length > fileBytes) return false;
  return checkFrame(await readFully(handle, offset, length), 0, length).kind === 'frame';
}

/**
 * Records `from`..`to` (1-based, inclusive) in one positional read, given each record's frame offset
 * (index = seq - 1) and the end of the last frame.
 */
export function readRecordFrames(handle: FileHandle, offsets: readonly number[], end: number, from: number, to: number): Promise<Frame[]> {
  return readFrames(handle, offsets[from - 1]!, to < offsets.length ? offsets[to]! : end);
}

/** The frames stored in bytes [start, end), which the caller knows to hold whole frames. */
export async function readFrames(handle: FileHandle, start: number, end: number): Promise<Frame[]> {
  const bytes = await readFully(handle, start, end - start);
  const frames: Frame[] = [];
  for (let offset = 0; offset < bytes.length; ) {
    const check = checkFrame(bytes, offset, bytes.length - offset);
    // Every frame here passed the scan on open or was written by this process: a failure is disk damage.
    if (check.kind !== 'frame') throw new Error(`embedded log damaged at byte ${start + offset}`);
    frames.push(check.frame);
    offset += check.length;
  }
  return frames;
}

export async function readFully(handle: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await handle.read(buffer, done, length - done, position + done);
    if (bytesRead === 0) throw new Error(`embedded log ends before byte ${position + length}`);
    done += bytesRead;
  }
  return buffer;
}

export async function writeFully(handle: FileHandle, position: number, bytes: Buffer): Promise<void> {
  let done = 0;
  while (done < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, done, bytes.length - done, position + done);
    done += bytesWritten;
  }
}
