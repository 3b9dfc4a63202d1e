import t from 'tap';
import fc from 'fast-check';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { DEDUPE_GENERATION_MS, DEDUPE_WINDOW_MS, DedupeWindow, dedupeKey, fingerprint } from '../../../src/events/compaction/dedupe-window.js';

const HOUR = 60 * 60 * 1000;

t.test('a key is a duplicate within 24 h of its last record, new again after, and pruned a generation at a time', async (t) => {
  const window = new DedupeWindow();
  const a = dedupeKey('acme', 'production', 'a');
  const b = dedupeKey('acme', 'production', 'b');
  t.equal(window.checkAndRecord(a, 0), false, 'first seen');
  t.equal(window.checkAndRecord(b, 1_000), false);
  t.equal(window.checkAndRecord(a, DEDUPE_WINDOW_MS - 1), true, 'a retry within the window');
  t.equal(window.checkAndRecord(dedupeKey('acme', 'test', 'a'), 5), false, 'another environment is another key');
  t.equal(window.checkAndRecord(dedupeKey('beta', 'production', 'a'), 5), false, 'another org is another key');
  t.equal(window.checkAndRecord(a, DEDUPE_WINDOW_MS), false, 'the same id a day later is stored again');
  t.equal(window.checkAndRecord(b, DEDUPE_WINDOW_MS + 2_000), false, 'a day after its record, b is new');
  t.equal(window.size, 6, 'a and b are held twice until their first generation goes');
  window.prune(DEDUPE_WINDOW_MS + DEDUPE_GENERATION_MS - 2);
  t.equal(window.size, 6, 'the first generation may still hold a record of less than 24 h');
  window.prune(DEDUPE_WINDOW_MS + DEDUPE_GENERATION_MS - 1);
  t.equal(window.size, 2, 'then it goes whole');
  t.equal(window.checkAndRecord(a, DEDUPE_WINDOW_MS + DEDUPE_GENERATION_MS), true, 'the renewed record is kept');
  t.equal(window.checkAndRecord(b, DEDUPE_WINDOW_MS + DEDUPE_GENERATION_MS), true);
});

/** The rule itself, by a plain map: a key is a duplicate while its last record is less than 24 h old (or newer). */
class Reference {
  private readonly recorded = new Map<string, number>();
  checkAndRecord(key: string, at: number): boolean {
    const previous = this.recorded.get(key);
    if (previous !== undefined && at - previous < DEDUPE_WINDOW_MS) return true;
    this.recorded.set(key, at);
    return false;
  }
}

const key = fc.oneof(fc.constantFrom('a', 'b', 'c', ''), fc.string({ unit: 'binary', maxLength: 120 }));
const edges = fc.constantFrom(DEDUPE_WINDOW_MS - 1, DEDUPE_WINDOW_MS, DEDUPE_WINDOW_MS + 1, DEDUPE_GENERATION_MS - 1, DEDUPE_GENERATION_MS, 1, 0);

/** Each step's key checked at the time reached; `window.prune` at that time when asked. */
function sameAsTheRule(steps: Array<{ key: string; advance: number; prune: boolean }>, start: number): boolean {
  const window = new DedupeWindow();
  const reference = new Reference();
  let now = start;
  for (const { key, advance, prune } of steps) {
    now += advance;
    const full = dedupeKey('acme', 'production', key);
    if (window.checkAndRecord(full, now) !== reference.checkAndRecord(full, now)) return false;
    if (prune) window.prune(now);
  }
  return true;
}

t.test('generated sequences: the same answers as the rule, in and out of order', async (t) => {
  // Several collectors and clock steps put receipt times out of order: without pruning, any order.
  const step = fc.record({ key, advance: fc.oneof(fc.integer({ min: -3 * HOUR, max: 2 * HOUR }), edges, edges.map((e) => -e)), prune: fc.constant(false) });
  await fc.assert(fc.property(fc.array(step, { maxLength: 300 }), fc.integer({ min: 0, max: 2_000_000_000_000 }), sameAsTheRule), { numRuns: 300 });
  // The compactor prunes at its clock, past every receipt time it has read: times that only move forward.
  const nearADay = fc.integer({ min: DEDUPE_WINDOW_MS - DEDUPE_GENERATION_MS, max: DEDUPE_WINDOW_MS + DEDUPE_GENERATION_MS });
  const forward = fc.record({ key, advance: fc.oneof(fc.integer({ min: 0, max: 2 * HOUR }), edges, nearADay), prune: fc.boolean() });
  await fc.assert(fc.property(fc.array(forward, { maxLength: 300 }), fc.integer({ min: 0, max: 2_000_000_000_000 }), sameAsTheRule), { numRuns: 300 });
});

t.test('a day of keys stays off the V8 heap', async (t) => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const window = new DedupeWindow();
  const keys = 500_000;
  const ids = Array.from({ length: keys }, (_, i) => `m-${i.toString(36).padStart(30, '-')}`);
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < keys; i++) window.checkAndRecord(dedupeKey('acme', 'production', ids[i]!), i * 100);
  gc();
  const perKey = (process.memoryUsage().heapUsed - before) / keys;
  // Held in a Map of strings it was ~134 bytes of heap per key (the storage process has 1 GB).
  t.ok(perKey < 16, `${perKey.toFixed(1)} bytes of heap per key`);
  t.equal(window.size, keys);
  for (let i = 0; i < keys; i += 997) t.equal(window.checkAndRecord(dedupeKey('acme', 'production', ids[i]!), keys * 100), true);
});

t.test('fingerprints are MurmurHash3_x86_128 of the UTF-16LE bytes, distinct for a million sequential ids', async (t) => {
  const out = new Uint32Array(4);
  const hex = (text: string) => {
    fingerprint(text, out);
    return [...out].map((w) => w.toString(16).padStart(8, '0')).join('');
  };
  // Answers of the reference implementation (murmurhash3js-revisited's x86.hash128 over Buffer.from(text, 'utf16le')).
  t.equal(hex(''), '00000000000000000000000000000000');
  t.equal(hex('abcdefgh'), '6c3576558df898a1a76d230d42147114', 'one whole block');
  t.equal(hex('acme\u0000production\u0000m-1'), '0f73f356c3806e6ac09340d5ef9505b2', 'blocks and a tail');
  t.equal(hex('é✓😀 x'), '3e9d216151d206e60abea4fddefb6662', 'beyond Latin-1 and the BMP');
  const seen = new Set<string>();
  for (let i = 0; i < 1_000_000; i++) {
    fingerprint(dedupeKey('acme', 'production', String(i)), out);
    seen.add(`${out[0]}.${out[1]}`);
  }
  t.equal(seen.size, 1_000_000, 'even the first 64 bits differ');
});
