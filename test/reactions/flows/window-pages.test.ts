/**
 * TRIGGER_MAX_ROWS (issue: a trigger returning 20,000,000 rows took the process down): a run takes at most
 * that many rows, narrowing its window to a compaction commit, and the next runs go on from there, so
 * every event is still decided exactly once.
 */
import t from 'tap';
import { customEvent, startTestApp } from '../../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../../helpers/flows.js';

t.test('a window with more rows than a run takes is worked through over several runs, exactly', async (t) => {
  const h = await startTestApp(t, { config: { triggerMaxRows: 2 } });
  const acme = await h.createOrg('acme');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  await startFlow(h, { id: 'f1', scheduleSeconds: 3600, realTime: false, message: { channel: 'outbox', template: { e: '{{ event.event_id }}' } } });
  for (let i = 1; i <= 5; i++) {
    t.equal((await h.collect(customEvent(acme.production, { messageId: `e${i}`, traits: { email: `c${i}@example.com` } }))).statusCode, 200);
    await h.compacted(); // each event its own compaction commit
  }
  const decided: string[] = [];
  let runs = 0;
  for (let more = true; more && runs < 10; runs++) {
    const summary = await runFlow(h, 'f1');
    t.ok(summary.rows <= 2, `run ${runs + 1} took ${summary.rows} rows`);
    decided.push(...summary.decisions.map((d) => `${d.eventId}:${d.outcome}`));
    more = summary.more === true;
  }
  t.ok(runs >= 3, `${runs} runs`);
  t.same(decided.sort(), ['e1:sent', 'e2:sent', 'e3:sent', 'e4:sent', 'e5:sent'], 'each event once, none skipped');
  t.same((await runFlow(h, 'f1')).decisions, [], 'nothing left');

  // One commit alone with more rows than a run takes: the run says so and the cursor stays.
  const before = (await h.admin('GET', '/admin/v1/orgs/acme/flows/f1')).json().cursorAt;
  const batch = await h.batch({
    partnerId: acme.production.partnerId,
    partnerSecret: acme.production.partnerSecret,
    batch: [1, 2, 3].map((i) => {
      const { partnerId: _p, partnerSecret: _s, ...event } = customEvent(acme.production, { messageId: `b${i}`, traits: { email: `b${i}@example.com` } });
      return event;
    }),
  });
  t.equal(batch.statusCode, 200);
  const stuck = await runFlow(h, 'f1');
  t.match(stuck.skipped, /one compaction commit alone gives more than 2 trigger rows \(TRIGGER_MAX_ROWS\)/);
  const flow = (await h.admin('GET', '/admin/v1/orgs/acme/flows/f1')).json();
  t.equal(flow.cursorAt, before, 'the cursor did not move');
  t.match(flow.lastError, /TRIGGER_MAX_ROWS/);
});
