/**
 * Cursor exactness (SPEC 7): with events committed while runs are reading, every visible event falls
 * in exactly one window of the flow's cursor: none skipped, none twice (a repeat would show as a
 * `duplicate` decision or a second decision row for the event).
 */
import t from 'tap';
import { customEvent, startTestApp } from '../../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, startFlow } from '../../helpers/flows.js';

const SENDERS = 5;
const PER_SENDER = 120;

// With realTime, runs started by each commit race the runs asked for here.
for (const realTime of [false, true]) t.test(`events committed during runs are each picked up by exactly one window (realTime ${realTime})`, async (t) => {
  const h = await startTestApp(t);
  const acme = await h.createOrg('acme');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  await startFlow(h, { id: 'f1', scheduleSeconds: 3600, realTime, message: { channel: 'outbox', template: { id: '{{ event.event_id }}' } } });

  let sending = true;
  let runs = 0;
  const runner = (async () => {
    while (sending) {
      await h.app.flowsRole!.runner!.run('acme', 'f1');
      runs++;
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  const acked: string[] = [];
  await Promise.all(
    Array.from({ length: SENDERS }, async (_, s) => {
      for (let i = 0; i < PER_SENDER; i++) {
        const messageId = `s${s}-${i}`;
        const res = await h.collect(customEvent(acme.production, { messageId, clientId: `c${s}`, traits: { email: `user${s}@example.com` } }));
        if (res.statusCode === 200) acked.push(messageId);
        // Paced, so sending lasts long enough for several runs to fall between commits.
        if (i % 5 === 4) await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }),
  );
  sending = false;
  await runner;
  await h.compacted();
  await h.app.flowsRole!.runner!.run('acme', 'f1');

  t.equal(acked.length, SENDERS * PER_SENDER);
  t.ok(runs >= 4, `runs interleaved with commits (${runs} runs)`);
  const decisions = await h.db().all<{ event_id: string; n: bigint; outcomes: string }>(
    "SELECT event_id, count(*) AS n, string_agg(outcome, ',') AS outcomes FROM flow_decisions WHERE flow_id = 'f1' GROUP BY event_id",
  );
  t.equal(decisions.length, acked.length, 'every event was in a window');
  t.same(decisions.filter((d) => d.n !== 1n || d.outcomes !== 'sent'), [], 'each in exactly one window, sent once');
  const windows = await h.db().all<{ n: bigint }>("SELECT count(DISTINCT decided_at) AS n FROM flow_decisions WHERE flow_id = 'f1'");
  t.ok(Number(windows[0]!.n) > 1, `the events were spread over ${windows[0]!.n} windows`);
});
