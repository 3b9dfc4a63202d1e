/**
 * The gate in front of untrusted SQL in the storage process: a total and a per-org limit, a wait bounded
 * by the caller's deadline (past it: SandboxBusy, a capacity answer), slots going to the first waiter
 * whose org has room, and a pause that grows with each kill of an org's query (SandboxPaused).
 */
import t from 'tap';
import { SandboxBusy, SandboxPaused } from '../../src/db/untrusted.js';
import { UntrustedGate } from '../../src/storage/untrusted-gate.js';

t.test('one org holds at most its share of slots; another org gets one at once', async (t) => {
  const gate = new UntrustedGate({ total: 3, perOrg: 2 });
  const a1 = await gate.enter('a', Date.now() + 1000);
  const a2 = await gate.enter('a', Date.now() + 1000);
  const started = Date.now();
  await t.rejects(gate.enter('a', Date.now() + 50), SandboxBusy, "a third of org a's waits for its deadline, then is told to retry");
  t.ok(Date.now() - started < 1000, 'and is answered at that deadline');
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
