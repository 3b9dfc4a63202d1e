import t from 'tap';
import { DEDUPE_WINDOW_MS, DedupeWindow, dedupeKey } from '../../../src/events/compaction/dedupe-window.js';

t.test('a key is a duplicate within 24 h of its last record, new again after, and pruned oldest first', async (t) => {
  const window = new DedupeWindow();
  const a = dedupeKey('acme', 'production', 'a');
  const b = dedupeKey('acme', 'production', 'b');
  t.equal(window.checkAndRecord(a, 0), false, 'first seen');
  t.equal(window.checkAndRecord(b, 1_000), false);
  t.equal(window.checkAndRecord(a, DEDUPE_WINDOW_MS - 1), true, 'a retry within the window');
  t.equal(window.checkAndRecord(dedupeKey('acme', 'test', 'a'), 5), false, 'another environment is another key');
  t.equal(window.checkAndRecord(a, DEDUPE_WINDOW_MS), false, 'the same id a day later is stored again');
  // `a` was recorded again, so it now sorts after `b`: pruning at b's expiry drops b (and the test key) but keeps a.
  window.prune(DEDUPE_WINDOW_MS + 1_000);
  t.equal(window.size, 1);
  t.equal(window.checkAndRecord(a, DEDUPE_WINDOW_MS + 2_000), true, 'the renewed record is kept');
  t.equal(window.checkAndRecord(b, DEDUPE_WINDOW_MS + 2_000), false, 'the pruned one is new');
});
