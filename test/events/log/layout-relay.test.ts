/**
 * LayoutRelay: appends gathered within a window reach the tail in order, none lost or repeated, at most
 * one window late; a release never overtakes the appends before it; a discard (a new storage process
 * handed the whole layout) drops what gathered.
 */
import fc from 'fast-check';
import t from 'tap';
import { LayoutRelay } from '../../../src/events/log/layout-relay.js';
import { type LayoutChange, SegmentChain, type SegmentLayout } from '../../../src/events/log/segments.js';

const appended = (firstSeq: number, offset: number, end: number): LayoutChange => ({ kind: 'appended', file: `/log/${firstSeq}.log`, firstSeq, offsets: [offset], end });

/** A relay on a clock the test moves; `sent` is what reached the other side. */
function relayOn(windowMs = 1) {
  let now = 0;
  const sent: LayoutChange[] = [];
  const relay = new LayoutRelay((change) => sent.push(structuredClone(change)), windowMs, () => now);
  return { relay, sent, advance: (ms: number) => (now += ms) };
}

const windowEnds = () => new Promise((resolve) => setTimeout(resolve, 5));

t.test('the first append goes at once; those within the window go together after it', async (t) => {
  const { relay, sent } = relayOn();
  relay.push(appended(1, 0, 100));
  t.same(sent, [appended(1, 0, 100)], 'sent at once');
  relay.push(appended(1, 100, 250));
  relay.push(appended(1, 250, 300));
  t.equal(sent.length, 1, 'gathered within the window');
  await windowEnds();
  t.same(sent[1], { kind: 'appended', file: '/log/1.log', firstSeq: 1, offsets: [100, 250], end: 300 }, 'one message: both offsets in order, the last end');
});

t.test('a new segment and a release flush what gathered first; discard drops it', async (t) => {
  const { relay, sent } = relayOn();
  relay.push(appended(1, 0, 100));
  relay.push(appended(1, 100, 200));
  relay.push(appended(3, 0, 50));
  t.same(sent.slice(1), [{ kind: 'appended', file: '/log/1.log', firstSeq: 1, offsets: [100], end: 200 }], 'the old segment’s appends before the new one’s');
  relay.push({ kind: 'released', firstSeq: 3 });
  t.same(sent.slice(2), [appended(3, 0, 50), { kind: 'released', firstSeq: 3 }], 'the appends, then the release');
  relay.push(appended(3, 50, 80));
  relay.discard();
  await windowEnds();
  t.equal(sent.length, 4, 'discarded appends are not sent, nor is a timer left to send them');
});

t.test('generated writes: the tail’s layout is the owner’s after the last window, whatever the timing', async (t) => {
  const write = fc.record({ newSegment: fc.boolean(), bytes: fc.integer({ min: 1, max: 5000 }), pauseMs: fc.constantFrom(0, 0, 0, 0.2, 0.7, 1, 3) });
  await fc.assert(
    fc.asyncProperty(fc.array(write, { minLength: 1, maxLength: 200 }), async (writes) => {
      const { relay, sent, advance } = relayOn();
      const owner: SegmentLayout[] = [{ file: '/log/1.log', firstSeq: 1, offsets: [], end: 0 }];
      const tail = new SegmentChain([{ file: '/log/1.log', firstSeq: 1, offsets: [], end: 0 }], () => Promise.reject(new Error('not read here')));
      let seq = 0;
      for (const w of writes) {
        if (w.newSegment && owner.at(-1)!.offsets.length > 0) owner.push({ file: `/log/${seq + 1}.log`, firstSeq: seq + 1, offsets: [], end: 0 });
        const segment = owner.at(-1)!;
        segment.offsets.push(segment.end);
        segment.end += w.bytes;
        seq++;
        relay.push({ kind: 'appended', file: segment.file, firstSeq: segment.firstSeq, offsets: [segment.offsets.at(-1)!], end: segment.end });
        advance(w.pauseMs);
      }
      await windowEnds();
      for (const change of sent) if (change.kind === 'appended') tail.appended(change);
      t.same(tail.segments.map(({ file, firstSeq, offsets, end }) => ({ file, firstSeq, offsets, end })), owner);
      t.ok(sent.length <= writes.length, `${sent.length} messages for ${writes.length} writes`);
    }),
    { numRuns: 60 },
  );
});
