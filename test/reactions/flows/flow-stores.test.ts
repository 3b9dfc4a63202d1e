/**
 * The owners of the flow tables: a run's rows (SendStore.record, flow_decisions and flow_sends) and its
 * cursor move (FlowStore.advance, flows) commit together or not at all, and nothing is written once the
 * cursor has moved on: what makes a window's sends exactly once.
 */
import t, { type Test as Tap } from 'tap';
import { startTestApp } from '../../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, startFlow } from '../../helpers/flows.js';
import type { Sql } from '../../../src/db/sql.js';
import { sendKey } from '../../../src/reactions/flows/rules/decide.js';
import { type RenderedDecision } from '../../../src/reactions/flows/rules/decision.js';
import { SendStore } from '../../../src/reactions/flows/store/send-store.js';

const facts = (email: string, eventId: string) => ({ identity: email, identityType: 'email', email, eventId, sendId: `msg_${eventId}` });
const DECISIONS: RenderedDecision[] = [
  { ...facts('ada@example.com', 'e1'), outcome: 'sent', variant: null, reason: null, message: { channel: 'outbox', content: { text: 'hi' } } },
  { ...facts('grace@example.com', 'e2'), outcome: 'holdout', variant: 'Holdout', reason: null },
  { ...facts('ada@example.com', 'e3'), outcome: 'reentry_blocked', variant: null, reason: 'reentry once' },
  { identity: null, identityType: null, eventId: 'e4', outcome: 'no_identity', email: null, variant: null, sendId: null, reason: 'the row has no identity' },
];

/** A service with org acme and its hourly flow f1 started, and the service's flow store. */
async function acmeWithFlow(t: Tap) {
  const h = await startTestApp(t);
  await h.createOrg('acme');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  await startFlow(h, { id: 'f1', scheduleSeconds: 3600, realTime: false, message: { channel: 'outbox', template: { text: 'hi' } } });
  return { h, flows: h.app.storageRole!.flows };
}

t.test('advance: the run rows and the cursor move commit together, or not at all', async (t) => {
  const { h, flows } = await acmeWithFlow(t);
  const sends = new SendStore(h.app.orgStorage!.orgs);
  const now = Date.UTC(2026, 0, 2);
  const from = flows.get('acme', 'f1').cursor ?? 0n;
  const to = from + 1_000n;
  const record = (c: Sql) => sends.record(c, 'acme', { id: 'f1', transactional: false }, 'hash1', DECISIONS, now);
  const stored = async () => {
    const [row] = await h.db().all<{ cursor_us: bigint; decisions: bigint; sends: bigint }>(
      "SELECT epoch_us(cursor_at) AS cursor_us, (SELECT count(*) FROM flow_decisions) AS decisions, (SELECT count(*) FROM flow_sends) AS sends FROM flows WHERE id = 'f1'",
    );
    return { cursor: row?.cursor_us, decisions: Number(row?.decisions), sends: Number(row?.sends) };
  };

  let called = false;
  t.equal(await flows.advance('acme', 'f1', { from: from + 1n, to }, now, async () => void (called = true)), false, 'a cursor that moved on: not committed');
  t.notOk(called, "the run's writes are not even tried");
  t.same(await stored(), { cursor: from, decisions: 0, sends: 0 });

  await t.rejects(
    flows.advance('acme', 'f1', { from, to }, now, async (c) => {
      await record(c);
      throw new Error('the run failed after writing its rows');
    }),
    /the run failed/,
  );
  t.same(await stored(), { cursor: from, decisions: 0, sends: 0 }, 'a failed run leaves neither its rows nor a cursor move');
  t.equal(flows.get('acme', 'f1').cursor, from);

  t.equal(await flows.advance('acme', 'f1', { from, to }, now, record), true);
  t.same(await stored(), { cursor: to, decisions: 4, sends: 2 }, 'every decision, an outbox row for sent and holdout, the cursor moved');
  t.equal(flows.get('acme', 'f1').cursor, to, 'the flow in memory follows');
  t.equal(flows.get('acme', 'f1').lastRunAt, now);

  t.equal(await flows.advance('acme', 'f1', { from, to: to + 1n }, now, record), false, 'the same window again: nothing written');
  t.same(await stored(), { cursor: to, decisions: 4, sends: 2 });

  t.same([...(await sends.usedKeys('acme', 'f1', ['e1', 'e2', 'e3']))].sort(), [sendKey('ada@example.com', 'e1'), sendKey('grace@example.com', 'e2')].sort());
  t.same([...(await sends.lastEntries('acme', 'f1', ['ada@example.com', 'grace@example.com']))].sort(), [
    ['ada@example.com', now],
    ['grace@example.com', now],
  ]);
  t.same(await sends.pending('acme'), [
    { sendId: 'msg_e1', org: 'acme', flowId: 'f1', email: 'ada@example.com', eventId: 'e1', variant: null, message: { channel: 'outbox', content: { text: 'hi' } } },
  ], 'only the sent row is pending; the holdout is recorded, not sent');
  await sends.recordOutcomes('acme', [{ sendId: 'msg_e1', email: 'ada@example.com', result: { kind: 'delivered', attempts: 1 }, at: now }]);
  t.same(await sends.pending('acme'), [], 'a recorded outcome is no longer pending');
});

t.test('ranEmpty: the record in memory moves each time, the database at most once a minute or to clear an error', async (t) => {
  const { h, flows } = await acmeWithFlow(t);
  const stored = async () => {
    const [row] = await h.db().all<{ at: Date | null; error: string | null }>("SELECT last_run_at AS at, last_error AS error FROM flows WHERE id = 'f1'");
    return { at: row?.at?.getTime() ?? null, error: row?.error ?? null };
  };
  const t0 = Date.UTC(2026, 0, 2);
  await flows.ranEmpty('acme', 'f1', t0);
  t.same(await stored(), { at: t0, error: null }, "the flow's first empty run is written");
  for (const later of [1_000, 30_000, 59_999]) {
    await flows.ranEmpty('acme', 'f1', t0 + later);
    t.equal(flows.get('acme', 'f1').lastRunAt, t0 + later, `${later} ms later: the record in memory shows the run`);
    t.same(await stored(), { at: t0, error: null }, `${later} ms later: nothing written`);
  }
  await flows.ranEmpty('acme', 'f1', t0 + 60_000);
  t.same(await stored(), { at: t0 + 60_000, error: null }, 'a minute after the last write: written again');

  await flows.runFailed('acme', 'f1', t0 + 61_000, 'the window was not read: storage restarting');
  t.equal(flows.get('acme', 'f1').lastError, 'the window was not read: storage restarting');
  await flows.ranEmpty('acme', 'f1', t0 + 62_000);
  t.same(await stored(), { at: t0 + 62_000, error: null }, 'an empty run after a failed one clears the error in the database at once');
  t.equal(flows.get('acme', 'f1').lastError, null);
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/flows/f1')).json().lastError, null, 'and in what the API shows');
});
