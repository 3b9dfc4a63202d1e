/**
 * The gate in front of untrusted SQL in the storage process: a total and a per-org limit, a wait bounded
 * by the caller's deadline (past it: SandboxBusy, a capacity answer), slots going to a waiter of the org
 * running fewest (oldest first, skipping orgs at their limit), and a pause that grows with each kill of
 * an org's query (SandboxPaused). And the budget of abandoned connections, shared with a part per org.
 */
import t from 'tap';
import { SandboxBusy, SandboxPaused, UntrustedBudget } from '../../src/db/untrusted.js';
import { UntrustedGate } from '../../src/storage/untrusted-gate.js';
import { scaled } from '../helpers/deadline.js';

t.test('one org holds at most its share of slots; another org gets one at once', async (t) => {
  const gate = new UntrustedGate({ total: 3, perOrg: 2 });
  const a1 = await gate.enter('a', Date.now() + 1000);
  const a2 = await gate.enter('a', Date.now() + 1000);
  const started = Date.now();
  await t.rejects(gate.enter('a', Date.now() + 50), SandboxBusy, "a third of org a's waits for its deadline, then is told to retry");
  // Nothing releases a's slots before this: without the deadline the wait would never end.
  t.ok(Date.now() - started < scaled(5_000), 'and is answered at that deadline');
  const b1 = await gate.enter('b', Date.now() + 50);
  t.pass('org b enters while a holds its share');
  await t.rejects(gate.enter('c', Date.now() + 50), SandboxBusy, 'the total is a limit too');
  for (const release of [a1, a2, b1]) release();
});

t.test('a freed slot goes to the first waiter whose org has room, not to a later caller', async (t) => {
  const gate = new UntrustedGate({ total: 2, perOrg: 1 });
  const a = await gate.enter('a', Date.now() + 1000);
  const b = await gate.enter('b', Date.now() + 1000);
  const order: string[] = [];
  const waitingA = gate.enter('a', Date.now() + 2000).then((release) => (order.push('a'), release));
  const waitingC = gate.enter('c', Date.now() + 2000).then((release) => (order.push('c'), release));
  b(); // a's own slot is still held: c, the first waiter with room, gets it
  const c = await waitingC;
  t.same(order, ['c']);
  // A caller arriving now does not take the slot a is about to free for its waiter.
  a();
  const later = gate.enter('d', Date.now() + 50).catch((error: unknown) => error);
  const a2 = await waitingA;
  t.ok((await later) instanceof SandboxBusy, 'the slot went to the waiter, the newcomer waited and was refused at its deadline');
  c();
  a2();
});

t.test('each kill of an org query pauses the org longer; other orgs are not paused', async (t) => {
  let now = 1_000_000;
  const gate = new UntrustedGate({ total: 8, perOrg: 2 }, () => now);
  gate.strike('a');
  const paused = await gate.enter('a', now + 1000).catch((error: unknown) => error);
  t.ok(paused instanceof SandboxPaused);
  t.equal((paused as SandboxPaused).retryAfterSeconds, 30, '30 s after the first');
  t.match((paused as SandboxPaused).extra.headers, { 'Retry-After': '30' });
  (await gate.enter('b', now + 1000))();
  now += 30_000;
  (await gate.enter('a', now + 1000))();
  t.pass('a runs again after its pause');
  gate.strike('a');
  t.equal(gate.pausedFor('a'), 60_000, 'twice as long after the second within the hour');
  now += 60_000;
  for (let i = 0; i < 10; i++) gate.strike('a');
  t.equal(gate.pausedFor('a'), 10 * 60_000, 'at most 10 minutes');
  now += 2 * 60 * 60_000;
  gate.strike('a');
  t.equal(gate.pausedFor('a'), 30_000, 'an hour without a kill: back to 30 s');
});

t.test("a freed slot goes to the org running fewest, not to the oldest waiter of the org holding them all", async (t) => {
  const gate = new UntrustedGate({ total: 3, perOrg: 3 });
  const held = await Promise.all([1, 2, 3].map(() => gate.enter('a', Date.now() + 1000)));
  const order: string[] = [];
  const waitingA = gate.enter('a', Date.now() + 5000).then((release) => (order.push('a'), release));
  const waitingB = gate.enter('b', Date.now() + 5000).then((release) => (order.push('b'), release));
  held[0]!();
  const b = await waitingB;
  t.same(order, ['b'], "b's first query goes before a's fourth, though a's waited longer");
  held[1]!();
  const a = await waitingA;
  t.same(order, ['b', 'a']);
  for (const release of [held[2]!, a, b]) release();
});

t.test("one org's abandoned connections use its part of the budget, not every org's", async (t) => {
  const budget = new UntrustedBudget(4, 2);
  const a = budget.of('a');
  a.take();
  t.notOk(a.full());
  a.take();
  t.ok(a.full(), 'a has used its part');
  t.notOk(budget.of('b').full(), 'b has not');
  budget.of('b').take();
  budget.of('c').take();
  t.ok(budget.of('d').full(), 'the total is a limit too');
  a.give();
  t.notOk(a.full(), 'a connection that ended gives its place back');
  t.notOk(budget.of('d').full());
});
