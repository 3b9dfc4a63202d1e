/** A channel's delivery slots: never more than its size held, shared among orgs, retries first. */
import t from 'tap';
import { DeliverySlots } from '../../../src/reactions/flows/send/delivery-slots.js';

function recorder(slots: DeliverySlots) {
  const started: string[] = [];
  const cancelled: string[] = [];
  const wait = (org: string, n: number) => {
    for (let i = 0; i < n; i++) slots.wait(org, { start: () => started.push(`${org}${i}`), cancel: () => cancelled.push(`${org}${i}`) });
  };
  return { started, cancelled, wait };
}

t.test('an org with a long queue holds the slots only until another org waits', async (t) => {
  const slots = new DeliverySlots(4);
  const { started, wait } = recorder(slots);
  wait('a', 100);
  t.same(started, ['a0', 'a1', 'a2', 'a3'], 'one org alone uses every slot');
  wait('b', 3);
  t.equal(started.length, 4, 'no slot beyond the size');
  slots.release('a');
  slots.release('a');
  t.same(started.slice(4), ['b0', 'b1'], 'freed slots go to the org holding fewer');
  slots.release('a');
  t.same(started.slice(6), ['a4'], 'a now holds fewer');
  slots.release('b');
  t.same(started.slice(7), ['b2']);
  slots.release('b');
  t.same(started.slice(8), ['a5'], 'b has nothing waiting: a goes on');
});

t.test('between orgs holding as many, the one served longest ago goes first', async (t) => {
  const slots = new DeliverySlots(2);
  const { started, wait } = recorder(slots);
  wait('a', 3);
  wait('b', 3);
  wait('c', 3);
  t.same(started, ['a0', 'a1']);
  slots.release('a');
  slots.release('a');
  t.same(started.slice(2), ['b0', 'c0'], 'c, never served, before a');
  slots.release('b');
  slots.release('c');
  t.same(started.slice(4), ['a2', 'b1'], 'a, then b (served before c)');
});

t.test('a send back from its retry wait goes before its org’s new sends; cancel refuses it', async (t) => {
  const slots = new DeliverySlots(1);
  const { started, cancelled, wait } = recorder(slots);
  wait('a', 3);
  t.same(started, ['a0']);
  slots.release('a'); // a0 waits for its retry: a1 takes the slot
  t.same(started, ['a0', 'a1']);
  const back = slots.reacquire('a');
  slots.release('a');
  t.equal(await back, true, 'the retry gets the slot');
  t.same(started, ['a0', 'a1'], 'before a2');
  const again = slots.reacquire('a');
  slots.cancel('a');
  t.equal(await again, false, 'a cancelled retry is told so');
  t.same(cancelled, ['a2']);
  slots.release('a');
  wait('b', 1);
  t.same(started, ['a0', 'a1', 'b0'], 'the cancelled org holds nothing');
});

t.test("no org holds more than its share: a slow org's sends leave slots free for another's at once", async (t) => {
  const slots = new DeliverySlots(6, 4);
  const { started, wait } = recorder(slots);
  wait('slow', 100);
  t.same(started, ['slow0', 'slow1', 'slow2', 'slow3'], 'one org alone takes its share, not every slot');
  wait('quiet', 1);
  t.same(started.slice(4), ['quiet0'], "another org's send starts at once, with no slot released");
  wait('other', 3);
  t.same(started.slice(5), ['other0'], 'the last free slot goes to the third org');
  slots.release('slow');
  t.same(started.slice(6), ['other1'], 'a freed slot goes to the org holding fewer');
  slots.release('quiet');
  t.same(started.slice(7), ['other2']);
  slots.release('other');
  t.same(started.slice(8), ['slow4'], 'the slow org takes slots again up to its share');
  slots.release('other');
  t.equal(started.length, 9, 'but not beyond it, though a slot is free');
});
