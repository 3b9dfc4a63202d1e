/**
 * SPEC 4.4: the same (org, environment, messageId) within 24 h is stored once.
 * Held in memory (seeded from DuckDB at start) so compaction needs no index probe per event.
 *
 * A key is held as its 128-bit fingerprint (MurmurHash3) with its receipt time, in typed arrays:
 * 32–64 bytes per event of the last 24–28 h, outside V8's heap, which the garbage collector does not walk.
 * Held as strings in a Map it took ~134 bytes of the storage process's 1 GB heap per event: ~7 M events
 * in a day would have ended the process, and its restart, loading them again, each time after.
 * Two keys share a fingerprint with a chance of ~n²/2¹²⁹ (10⁻²⁵ for 10 M a day). MurmurHash3 is not
 * made to resist keys chosen to collide: only an org's own partners choose its keys (each org has its own
 * window), and a collision they made would drop their own org's event, which they could simply not send.
 *
 * Fingerprints are kept in one table per 4 hours of receipt (a generation): a lookup asks each of them (up
 * to 7; with one per hour, 25 lookups made a check 1.7 µs against the Map's 1.1), and pruning drops whole
 * generations once the newest time they can hold is 24 h old.
 */
import { ENVIRONMENTS } from '../../core/domain.js';

export const DEDUPE_WINDOW_MS = 24 * 60 * 60 * 1000;
/** Receipt times a generation spans: a lookup asks each (up to 7), and a generation is dropped whole. */
export const DEDUPE_GENERATION_MS = 4 * 60 * 60 * 1000;

export function dedupeKey(org: string, environment: string, messageId: string): string {
  return `${org}\u0000${environment}\u0000${messageId}`;
}

export class DedupeWindow {
  private readonly generations = new Map<number, FingerprintTable>();
  /** The fingerprint being checked, as four 32-bit words. */
  private readonly print = new Uint32Array(4);

  /** True when the key was recorded within 24 h before `receivedAt` (or after it); records it otherwise. */
  checkAndRecord(key: string, receivedAt: number): boolean {
    if (this.has(key, receivedAt)) return true;
    const print = this.print;
    const generation = Math.floor(receivedAt / DEDUPE_GENERATION_MS);
    let table = this.generations.get(generation);
    if (!table) this.generations.set(generation, (table = new FingerprintTable()));
    table.set(print, receivedAt);
    return false;
  }

  /** True when the key was recorded within 24 h before `at` (or after it); records nothing. */
  has(key: string, at: number): boolean {
    const print = this.print;
    fingerprint(key, print);
    for (const table of this.generations.values()) {
      const seen = table.timeOf(print);
      if (seen !== undefined && at - seen < DEDUPE_WINDOW_MS) return true;
    }
    return false;
  }

  /** Whether the org's event with this messageId was recorded within 24 h before `at`, in either environment. */
  holdsMessage(org: string, messageId: string, at: number): boolean {
    return ENVIRONMENTS.some((environment) => this.has(dedupeKey(org, environment, messageId), at));
  }

  /** Drops the generations whose every time is 24 h or more before `now`. */
  prune(now: number): void {
    for (const generation of this.generations.keys()) {
      const newest = (generation + 1) * DEDUPE_GENERATION_MS - 1;
      if (now - newest >= DEDUPE_WINDOW_MS) this.generations.delete(generation);
    }
  }

  /** Fingerprints held (a key recorded again a day later counts twice until its first generation goes). */
  get size(): number {
    let size = 0;
    for (const table of this.generations.values()) size += table.size;
    return size;
  }
}

const FIRST_CAPACITY = 1024;

/** An open-addressing hash table (linear probing) of 128-bit fingerprints and their times; it only grows. */
class FingerprintTable {
  private capacity = FIRST_CAPACITY;
  private words = new Uint32Array(FIRST_CAPACITY * 4);
  /** NaN marks an empty slot. */
  private times = new Float64Array(FIRST_CAPACITY).fill(Number.NaN);
  size = 0;

  timeOf(print: Uint32Array): number | undefined {
    const slot = this.slotOf(print);
    const at = this.times[slot]!;
    return Number.isNaN(at) ? undefined : at;
  }

  /** Records the fingerprint's time (replacing its earlier one, if the table holds it). */
  set(print: Uint32Array, at: number): void {
    const slot = this.slotOf(print);
    if (Number.isNaN(this.times[slot]!)) {
      this.words.set(print, slot * 4);
      this.size++;
    }
    this.times[slot] = at;
    if (this.size * 4 > this.capacity * 3) this.grow();
  }

  /** The fingerprint's slot, or the empty slot where it would go. Fingerprints are uniform: no mixing needed. */
  private slotOf(print: Uint32Array): number {
    const mask = this.capacity - 1;
    const { words, times } = this;
    for (let slot = print[0]! & mask; ; slot = (slot + 1) & mask) {
      if (Number.isNaN(times[slot]!)) return slot;
      const w = slot * 4;
      if (words[w] === print[0] && words[w + 1] === print[1] && words[w + 2] === print[2] && words[w + 3] === print[3]) return slot;
    }
  }

  private grow(): void {
    const { words, times, capacity } = this;
    this.capacity = capacity * 2;
    this.words = new Uint32Array(this.capacity * 4);
    this.times = new Float64Array(this.capacity).fill(Number.NaN);
    this.size = 0;
    const print = new Uint32Array(4);
    for (let slot = 0; slot < capacity; slot++) {
      if (Number.isNaN(times[slot]!)) continue;
      print.set(words.subarray(slot * 4, slot * 4 + 4));
      this.set(print, times[slot]!);
    }
  }
}

/**
 * MurmurHash3_x86_128 (seed 0) of the string's UTF-16LE bytes, two code units per 32-bit word, into `out`.
 * In JavaScript: node:crypto's one-shot MD5 took 1.7 µs per key here (the call, the Buffer), this 0.2–0.4 µs.
 */
export function fingerprint(text: string, out: Uint32Array): void {
  const units = text.length;
  const blocks = units - (units % 8);
  let h1 = 0;
  let h2 = 0;
  let h3 = 0;
  let h4 = 0;
  let i = 0;
  for (; i < blocks; i += 8) {
    h1 ^= mix(text.charCodeAt(i) | (text.charCodeAt(i + 1) << 16), C1, 15, C2);
    h1 = (Math.imul((rotl(h1, 19) + h2) | 0, 5) + 0x561ccd1b) | 0;
    h2 ^= mix(text.charCodeAt(i + 2) | (text.charCodeAt(i + 3) << 16), C2, 16, C3);
    h2 = (Math.imul((rotl(h2, 17) + h3) | 0, 5) + 0x0bcaa747) | 0;
    h3 ^= mix(text.charCodeAt(i + 4) | (text.charCodeAt(i + 5) << 16), C3, 17, C4);
    h3 = (Math.imul((rotl(h3, 15) + h4) | 0, 5) + 0x96cd1c35) | 0;
    h4 ^= mix(text.charCodeAt(i + 6) | (text.charCodeAt(i + 7) << 16), C4, 18, C1);
    h4 = (Math.imul((rotl(h4, 13) + h1) | 0, 5) + 0x32ac3b17) | 0;
  }
  // The last 0–7 code units, packed as the blocks are, zero-filled.
  const left = units - i;
  let k1 = 0;
  let k2 = 0;
  let k3 = 0;
  let k4 = 0;
  for (let j = 0; j < left; j++) {
    const unit = text.charCodeAt(i + j) << ((j & 1) * 16);
    if (j < 2) k1 |= unit;
    else if (j < 4) k2 |= unit;
    else if (j < 6) k3 |= unit;
    else k4 |= unit;
  }
  if (left > 6) h4 ^= mix(k4, C4, 18, C1);
  if (left > 4) h3 ^= mix(k3, C3, 17, C4);
  if (left > 2) h2 ^= mix(k2, C2, 16, C3);
  if (left > 0) h1 ^= mix(k1, C1, 15, C2);
  const bytes = units * 2;
  h1 ^= bytes;
  h2 ^= bytes;
  h3 ^= bytes;
  h4 ^= bytes;
  h1 = (h1 + h2 + h3 + h4) | 0;
  h2 = (h2 + h1) | 0;
  h3 = (h3 + h1) | 0;
  h4 = (h4 + h1) | 0;
  h1 = fmix(h1);
  h2 = fmix(h2);
  h3 = fmix(h3);
  h4 = fmix(h4);
  h1 = (h1 + h2 + h3 + h4) | 0;
  out[0] = h1;
  out[1] = h2 + h1;
  out[2] = h3 + h1;
  out[3] = h4 + h1;
}

const C1 = 0x239b961b;
const C2 = 0xab0e9789 | 0;
const C3 = 0x38b34ae5;
const C4 = 0xa1e38b93 | 0;

function mix(k: number, first: number, r: number, second: number): number {
  return Math.imul(rotl(Math.imul(k, first), r), second);
}

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b | 0);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35 | 0);
  return h ^ (h >>> 16);
}
