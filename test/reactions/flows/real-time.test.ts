/**
 * Real-time flows (issue 27): a triggered flow runs when its org's new events are stored, not at its
 * schedule, each event still decided once; `realTime: false` keeps a flow to its schedule; an entry
 * waiting in a step for an event moves on when the event is stored, not at the next tick.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { customEvent, startTestApp, type TestApp, waitFor } from '../../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../../helpers/flows.js';

const outbox = { channel: 'outbox', template: { text: 'Enjoy {{ event.properties.city }}' } };
/** Longer than any test: a flow that sends here was run by a commit, not by its schedule. */
const A_DAY = 86_400;

function outboxLines(h: TestApp, org = 'acme'): Array<{ flowId: string; eventId: string }> {
  try {
    return readFileSync(join(h.dataDir, 'outbox', `${org}.jsonl`), 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
  } catch {
    return [];
  }
}

t.test('a real-time flow sends for each stored event once, with no run asked for; realTime false waits for its schedule', async (t) => {
  const h = await startTestApp(t);
  const acme = await h.createOrg('acme');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  await startFlow(h, { id: 'live', realTime: true, scheduleSeconds: A_DAY, message: outbox });
  await startFlow(h, { id: 'timed', realTime: false, scheduleSeconds: A_DAY, message: outbox });
  t.match((await h.admin('GET', '/admin/v1/orgs/acme/flows/live')).json(), { definition: { realTime: true } });

  // Events in several requests and commits, some stored while a run is under way.
  const ids: string[] = [];
  for (let i = 0; i < 30; i++) {
    ids.push(`evt-${i}`);
    t.equal((await h.collect(customEvent(acme.production, { messageId: `evt-${i}`, traits: { email: `c${i}@example.com` } }))).statusCode, 200);
    if (i % 7 === 0) await new Promise((r) => setTimeout(r, 30));
  }
  await h.compacted();
  const sent = await waitFor(async () => {
    const lines = outboxLines(h).filter((l) => l.flowId === 'live');
    return lines.length >= ids.length ? lines : undefined;
  }, 20_000);
  t.same(sent.map((l) => l.eventId).sort(), [...ids].sort(), 'every event sent for, once');
  await h.app.flowsRole!.dispatcher.idle();
  t.equal(outboxLines(h).filter((l) => l.flowId === 'live').length, ids.length, 'and nothing twice');
  t.equal(outboxLines(h).filter((l) => l.flowId === 'timed').length, 0, 'the flow with realTime false has not run');
  const again = await runFlow(h, 'live');
  t.equal(again.rows, 0, 'a run asked for now finds nothing left: the real-time runs moved the cursor');
  const timed = await runFlow(h, 'timed');
  t.equal(timed.rows, ids.length, 'the scheduled-only flow takes the whole window when it runs');
});

t.test("another org's events do not run this org's flows", async (t) => {
  const h = await startTestApp(t);
  const acme = await h.createOrg('acme');
  const globex = await h.createOrg('globex');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER, 'globex');
  await startFlow(h, { id: 'live', realTime: true, scheduleSeconds: A_DAY, message: outbox });
  await startFlow(h, { id: 'live', realTime: true, scheduleSeconds: A_DAY, message: outbox }, 'globex');
  const runs = h.app.metrics.triggerRunSeconds;
  const count = async () => ((await runs.get()).values.find((v) => v.metricName?.endsWith('_count'))?.value ?? 0);
  const before = await count();
  t.equal((await h.collect(customEvent(globex.production, { messageId: 'g-1' }))).statusCode, 200);
  await h.compacted();
  await waitFor(async () => outboxLines(h, 'globex').length === 1, 20_000);
  await h.app.flowsRole!.dispatcher.idle();
  t.equal((await count()) - before, 1, "one run: globex's flow; acme's did not run for globex's commit");
  t.equal(outboxLines(h, 'acme').length, 0);
  t.equal((await h.collect(customEvent(acme.production, { messageId: 'a-1' }))).statusCode, 200);
  await waitFor(async () => outboxLines(h, 'acme').length === 1, 20_000);
});

t.test('an entry waiting for an event moves on when the event is stored', async (t) => {
  const h = await startTestApp(t);
  const acme = await h.createOrg('acme');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  await startFlow(h, {
    id: 'steps',
    realTime: true,
    scheduleSeconds: A_DAY,
    steps: [{ waitUntil: { event: 'custom_review_written', timeoutSeconds: A_DAY }, then: 'continue' }, { message: outbox }],
  });
  t.equal((await h.collect(customEvent(acme.production, { messageId: 'booked' }))).statusCode, 200);
  await waitFor(async () => ((await h.admin('GET', '/admin/v1/orgs/acme/flows/steps/waits')).json().total === 1 ? true : undefined), 20_000);
  t.equal(outboxLines(h).length, 0, 'entered, waiting');
  t.equal((await h.collect(customEvent(acme.production, { messageId: 'review', properties: { eventName: 'review_written', properties: {} } }))).statusCode, 200);
  const [line] = await waitFor(async () => {
    const lines = outboxLines(h);
    return lines.length > 0 ? lines : undefined;
  }, 20_000);
  t.match(line, { flowId: 'steps', eventId: 'booked#1' }, 'the message step was reached when the awaited event was stored');
});
