/**
 * On-disk frame of the embedded log, one per record:
 *
 *   [u32 LE frame length, header included][u32 LE crc32 of everything after it][u8 id length][id][payload]
 *
 * The length comes first so a scan can step from frame to frame; the checksum covers the id and the
 * payload so a torn or bit-flipped tail is recognised on open (see embedded-log.ts).
 */
import { crc32 } from 'node:zlib';

/** Length and checksum fields. */
const PREFIX_BYTES = 8;
/** Smallest possible frame: prefix plus the id-length byte (empty id, empty payload). */
export const MIN_FRAME_BYTES = PREFIX_BYTES + 1;
/** The id length is stored in one byte. */
const MAX_ID_BYTES = 255;

export interface Frame {
  id: string;
  payload: Uint8Array;
}

/** Outcome of looking at the bytes where a frame should start. */
export type FrameCheck =
  | { kind: 'frame'; length: number; frame: Frame }
  /** Fewer bytes than the frame needs: only valid as the file's last (torn) frame. */
  | { kind: 'short'; needed: number }
  /** `length` is set when the length field was plausible and the checksum failed. */
  | { kind: 'corrupt'; reason: string; length?: number };

export function encodeFrame(id: string, payload: Uint8Array): Buffer {
  const idBytes = Buffer.from(id, 'utf8');
  if (idBytes.length > MAX_ID_BYTES) throw new RangeError(`record id longer than ${MAX_ID_BYTES} bytes`);
  const length = MIN_FRAME_BYTES + idBytes.length + payload.byteLength;
  const frame = Buffer.allocUnsafe(length);
  frame.writeUInt32LE(length, 0);
  frame.writeUInt8(idBytes.length, PREFIX_BYTES);
  idBytes.copy(frame, MIN_FRAME_BYTES);
  frame.set(payload, MIN_FRAME_BYTES + idBytes.length);
  frame.writeUInt32LE(crc32(frame.subarray(PREFIX_BYTES)), 4);
  return frame;
}

/**
 * Checks the frame starting at `offset` in `bytes`. `remaining` is how many bytes the file holds from
 * there on, so a length field pointing past the end of the file reads as `corrupt`, not `short`.
 */
export function checkFrame(bytes: Buffer, offset: number, remaining: number): FrameCheck {
  const have = bytes.length - offset;
  if (have < PREFIX_BYTES) return shortOrTorn(PREFIX_BYTES, remaining);
  const length = bytes.readUInt32LE(offset);
  if (length < MIN_FRAME_BYTES) return { kind: 'corrupt', reason: `frame length ${length} below minimum` };
  if (have < length) return shortOrTorn(length, remaining);
  const body = bytes.subarray(offset + PREFIX_BYTES, offset + length);
  if (crc32(body) !== bytes.readUInt32LE(offset + 4)) return { kind: 'corrupt', reason: 'checksum mismatch', length };
  const idLength = body[0]!;
  if (1 + idLength > body.length) return { kind: 'corrupt', reason: 'id longer than frame' };
  const id = body.toString('utf8', 1, 1 + idLength);
  return { kind: 'frame', length, frame: { id, payload: body.subarray(1 + idLength) } };
}

function shortOrTorn(needed: number, remaining: number): FrameCheck {
  return needed > remaining
    ? { kind: 'corrupt', reason: `frame of ${needed} bytes cut off at ${remaining}` }
    : { kind: 'short', needed };
}
