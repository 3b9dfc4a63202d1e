/**
 * The orgs' turns (issue 37, finding 5) and the runner's use of them, with a manual clock and runs that
 * end when the test says: never two turns of one org at once, at most `atOnce` orgs at once, and orgs
 * with work served round-robin whatever each has queued. So N orgs with different numbers of due flows
 * each get one run per round, and an org with one due flow waits for at most one run of a busy org.
 */
import t from 'tap';
import fc from 'fast-check';
import { ManualClock } from '../../../src/core/context.js';
import type { FlowRecord } from '../../../src/reactions/flows/store/flow-store.js';
import { DueRuns } from '../../../src/reactions/flows/run/due-runs.js';
import { OrgTurns } from '../../../src/reactions/flows/run/org-turns.js';

const settle = () => new Promise((r) => setImmediate(r));

/** Work that records its start and ends when `end()` is called. */
function gate() {
  const started: string[] = [];
  const ends = new Map<string, () => void>();
  const work = (name: string) => () =>
    new Promise<void>((resolve) => {
      started.push(name);
      ends.set(name, resolve);
    });
  const end = async (name: string) => {
    ends.get(name)!();
    await settle();
  };
  return { started, work, end };
}

t.test('one turn of an org at a time; a free turn goes to the org served longest ago', async (t) => {
  const turns = new OrgTurns(1);
  const { started, work, end } = gate();
  for (let i = 1; i <= 4; i++) void turns.run('a', work(`a${i}`));
  void turns.run('b', work('b1'));
  void turns.run('c', work('c1'));
  void turns.run('c', work('c2'));
  await settle();
  t.same(started, ['a1'], 'one turn at once (atOnce 1)');
  await end('a1');
  t.same(started.slice(1), ['b1'], 'b, waiting since before a was last served, goes before a2');
  await end('b1');
  await end('c1');
  t.same(started.slice(2), ['c1', 'a2'], 'then c, then a again: one turn each per round');
  await end('a2');
  await end('c2');
  await end('a3');
  await end('a4');
  t.same(started, ['a1', 'b1', 'c1', 'a2', 'c2', 'a3', 'a4'], 'a alone: its queue in order');
  t.same(turns.load, { running: 0, waiting: 0 });
});

t.test('orgs run side by side up to atOnce, never two turns of one org', async (t) => {
  const turns = new OrgTurns(2);
  const { started, work, end } = gate();
  void turns.run('a', work('a1'));
  void turns.run('a', work('a2'));
  void turns.run('b', work('b1'));
  void turns.run('c', work('c1'));
  await settle();
  t.same(started, ['a1', 'b1'], "a's second waits for its first; c waits for a free turn");
  t.same(turns.load, { running: 2, waiting: 1 }, 'c waits for a turn (a has one, its second waits in it)');
  await end('b1');
  t.same(started.slice(2), ['c1'], 'c before a2: a was served more recently');
  await end('a1');
  t.same(started.slice(3), ['a2']);
});

t.test("a turn's failure is its caller's; the org's next work runs; settled waits for what was asked", async (t) => {
  const turns = new OrgTurns(1);
  const failed = turns.run('a', () => Promise.reject(new Error('boom')));
  const next = turns.run('a', () => Promise.resolve(42));
  await t.rejects(failed, /boom/);
  t.equal(await next, 42);
  let done = false;
  void turns.run('a', async () => {
    await settle();
    done = true;
  });
  await turns.settled('a');
  t.ok(done, 'settled resolved after the work asked before it');
  await turns.settled('nobody');
});

function flow(org: string, id: string, definition: Record<string, unknown> = {}): FlowRecord {
  return { org, status: 'live', definition: { id, name: id, category: 'triggered', trigger: 't', scheduleSeconds: 1, realTime: false, ...definition } } as unknown as FlowRecord;
}

/** The runner's scheduling with runs that only record themselves, on a manual clock. */
function runner(flows: FlowRecord[], atOnce: number) {
  const clock = new ManualClock();
  const runs: string[] = [];
  const running = new Map<string, number>();
  let overlap = false;
  const due = new DueRuns({
    turns: new OrgTurns(atOnce),
    clock,
    flows: { live: () => flows.filter((f) => f.status === 'live'), find: (org, id) => flows.find((f) => f.org === org && f.definition.id === id) },
    run: async (f) => {
      if ((running.get(f.org) ?? 0) > 0) overlap = true;
      running.set(f.org, (running.get(f.org) ?? 0) + 1);
      runs.push(`${f.org}/${f.definition.id}`);
      await settle();
      running.set(f.org, running.get(f.org)! - 1);
      return {};
    },
    onError: (err) => {
      throw err;
    },
  });
  return { clock, runs, due, overlapped: () => overlap };
}

t.test('N orgs with different numbers of due flows: each gets one run per round', async (t) => {
  const flows = [
    ...['1', '2', '3', '4', '5'].map((i) => flow('aaa', `f${i}`)),
    flow('bbb', 'f1'),
    ...['1', '2', '3'].map((i) => flow('ccc', `f${i}`)),
  ];
  const { clock, runs, due } = runner(flows, 1);
  await due.look(new Set());
  t.same(runs, [], 'a flow seen for the first time runs one interval later');
  clock.advance(999);
  await due.look(new Set());
  t.same(runs, [], 'not before its interval');
  clock.advance(1);
  await due.look(new Set());
  t.same(runs, ['aaa/f1', 'bbb/f1', 'ccc/f1', 'aaa/f2', 'ccc/f2', 'aaa/f3', 'ccc/f3', 'aaa/f4', 'aaa/f5'], 'round-robin: one run per org per round');
  runs.length = 0;
  clock.advance(500);
  await due.look(new Set());
  t.same(runs, [], 'each flow is due one interval after its run');
  clock.advance(500);
  await due.look(new Set());
  t.equal(runs.length, 9, 'every flow once again');
});

t.test("a real-time flow of a quiet org runs after at most one run of a busy org's 60", async (t) => {
  const busy = Array.from({ length: 60 }, (_, i) => flow('busy', `f${i}`));
  const quiet = flow('quiet', 'live', { realTime: true, scheduleSeconds: 3600 });
  const { clock, runs, due } = runner([...busy, quiet], 1);
  await due.look(new Set());
  clock.advance(1000);
  const busyLook = due.look(new Set());
  await settle();
  // The quiet org stores an event while the busy org's runs go on.
  const quietLook = due.look(new Set(['quiet']));
  await Promise.all([busyLook, quietLook]);
  const position = runs.indexOf('quiet/live');
  t.ok(position >= 0 && position <= 2, `the quiet org's run came ${position + 1}th of ${runs.length}, not after the busy org's 60`);
  t.equal(runs.filter((r) => r.startsWith('busy/')).length, 60, "and the busy org's flows all ran once");
});

t.test('generated orgs and flow counts: rounds are fair and no org runs two at once', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 6 }), fc.integer({ min: 1, max: 4 }), async (counts, atOnce) => {
      const flows = counts.flatMap((n, o) => Array.from({ length: n }, (_, i) => flow(`org${o}`, `f${i}`)));
      const { clock, runs, due, overlapped } = runner(flows, atOnce);
      await due.look(new Set());
      clock.advance(1000);
      await due.look(new Set());
      if (overlapped()) return false;
      if (runs.length !== flows.length) return false;
      // In the first k × orgs runs (k no more than the smallest count), every org ran at least k − 1 … k + 1
      // times when several run at once, exactly k when one does.
      const orgs = counts.length;
      const k = Math.min(...counts);
      const share = (org: string) => runs.slice(0, k * orgs).filter((r) => r.startsWith(`${org}/`)).length;
      return counts.every((_, o) => (atOnce === 1 ? share(`org${o}`) === k : Math.abs(share(`org${o}`) - k) <= 1));
    }),
    { numRuns: 60 },
  );
});
