/**
 * The garbage collections of a measured window, from the lines `node --trace-gc` writes to the service's
 * log (`--speed-gc`): how often the HTTP thread paused for GC, for how long, and how much the heap kept
 * after each. Unlike requests per second these barely move with the rest of the machine's load, so a
 * change to what the hot path allocates can be compared between builds on a noisy machine.
 *
 * A line: `[pid:0x…]  1234 ms: Scavenge 179.5 (283.2) -> 118.7 (283.2) MB, 3.85 / 0.00 ms  (…) allocation failure;`
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';

export interface GcWindow {
  scavenges: number;
  scavengePauseMs: number;
  /** Mark-compacts and mark-sweeps (the old generation's collections). */
  markCompacts: number;
  markCompactPauseMs: number;
  maxPauseMs: number;
  /** Heap in use after the window's first and last collection, MB: what survived and was promoted meanwhile. */
  heapAfterMb: [first: number, last: number] | null;
}

const LINE = /ms: (Scavenge|Mark-Compact|Mark-sweep)[^,]*?-> ([\d.]+) \([\d.]+\) MB, ([\d.]+) \/ [\d.]+ ms/;

export function gcOfTrace(text: string): GcWindow {
  const gc: GcWindow = { scavenges: 0, scavengePauseMs: 0, markCompacts: 0, markCompactPauseMs: 0, maxPauseMs: 0, heapAfterMb: null };
  for (const line of text.split('\n')) {
    const m = LINE.exec(line);
    if (!m) continue;
    const [, kind, after, pause] = m;
    const ms = Number(pause);
    if (kind === 'Scavenge') {
      gc.scavenges++;
      gc.scavengePauseMs += ms;
    } else {
      gc.markCompacts++;
      gc.markCompactPauseMs += ms;
    }
    gc.maxPauseMs = Math.max(gc.maxPauseMs, ms);
    gc.heapAfterMb = [gc.heapAfterMb?.[0] ?? Number(after), Number(after)];
  }
  gc.scavengePauseMs = Math.round(gc.scavengePauseMs * 10) / 10;
  gc.markCompactPauseMs = Math.round(gc.markCompactPauseMs * 10) / 10;
  return gc;
}

/** Where a log file ends now: what is written after it is the window's (see `gcSince`). */
export function logEnd(file: string): number {
  return statSync(file).size;
}

/** The collections traced in `file` since byte `from`. */
export function gcSince(file: string, from: number): GcWindow {
  const size = statSync(file).size;
  const buffer = Buffer.alloc(Math.max(0, size - from));
  const fd = openSync(file, 'r');
  try {
    readSync(fd, buffer, 0, buffer.length, from);
  } finally {
    closeSync(fd);
  }
  return gcOfTrace(buffer.toString('utf8'));
}
