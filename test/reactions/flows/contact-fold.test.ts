/**
 * The fold barrier alone (contact-fold.ts): a decision waits for compaction to reach the log's head and for
 * the profiles it queued, in that order; past the bound it is not made (FoldBehind) and that is counted.
 */
import t from 'tap';
import { ManualClock } from '../../../src/core/context.js';
import { ContactFold, FoldBehind, type DecisionSource } from '../../../src/reactions/flows/run/contact-fold.js';

function metrics() {
  const waits: Array<[DecisionSource, number]> = [];
  const behind: DecisionSource[] = [];
  return {
    waits,
    behind,
    flowFoldWaitSeconds: { observe: ({ source }: { source: DecisionSource }, seconds: number) => void waits.push([source, seconds]) },
    flowFoldBehind: { inc: ({ source }: { source: DecisionSource }) => void behind.push(source) },
  };
}

t.test('waits for compaction to reach the head read first, then for the profiles refreshed', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 5, 10, 12, 0));
  const steps: string[] = [];
  let compacted!: () => void;
  const m = metrics();
  const fold = new ContactFold(
    {
      headSeq: async () => 42,
      whenCompacted: (seq) => {
        steps.push(`compacted ${seq}`);
        return new Promise((resolve) => (compacted = resolve));
      },
      whenRefreshed: async () => void steps.push('refreshed'),
    },
    m,
    clock,
  );
  const folding = fold.untilFolded('step', 'acme');
  await new Promise((resolve) => setImmediate(resolve));
  t.same(steps, ['compacted 42'], 'the profiles are not looked at before compaction reached the head');
  clock.advance(5_000);
  compacted();
  t.same(await folding, { kind: 'folded', at: Date.UTC(2026, 5, 10, 12, 0) }, 'decided as of the time the head was read');
  t.same(steps, ['compacted 42', 'refreshed']);
  t.same(m.waits.map(([source]) => source), ['step']);
  t.same(m.behind, []);
});

t.test('past the bound the decision is not made, and counted', async (t) => {
  const m = metrics();
  const fold = new ContactFold({ headSeq: async () => 7, whenCompacted: () => new Promise(() => undefined), whenRefreshed: async () => undefined }, m, new ManualClock(), 50);
  const error = await fold.untilFolded('deferred', 'acme').catch((e: unknown) => e);
  t.ok(error instanceof FoldBehind, 'FoldBehind');
  t.equal((error as FoldBehind).source, 'deferred');
  t.same(m.behind, ['deferred']);
  t.ok(m.waits[0]![1] >= 0.04, 'the wait is observed');
});

t.test('without compaction in this process there is nothing to wait for', async (t) => {
  const m = metrics();
  const clock = new ManualClock(1000);
  t.same(await new ContactFold(undefined, m, clock).untilFolded('trigger', 'acme'), { kind: 'folded', at: 1000 });
  t.same(m.waits, []);
});
