/**
 * NATS mode, a publish sent but never acknowledged (issue 12, item 8): the server is frozen (SIGSTOP)
 * past the publish timeout, then resumed. It then stores what it had received, so collect must not
 * have said "nothing was stored": it answers 503 log_outcome_unknown with the messageId(s), and the
 * client's retry with them is stored once (24 h dedupe by (org, environment, messageId)).
 */
import t from 'tap';
import { customEvent, startTestApp, waitFor, type TestApp } from '../../helpers/app.js';
import { hasNatsServerBinary, startNatsServer } from '../../helpers/nats-server.js';

const natsTest = hasNatsServerBinary() ? t.test : t.skip;
if (!hasNatsServerBinary()) t.comment('skipped: needs /usr/sbin/nats-server (a private server per test)');

/** Short, so the test does not wait out the 5 s default; the behaviour does not depend on its length. */
const PUBLISH_TIMEOUT_MS = 400;

async function storedIds(h: TestApp): Promise<Map<string, number>> {
  await h.compacted();
  const rows = await h.db().all<{ message_id: string; n: bigint }>(
    'SELECT message_id, count(*) AS n FROM events GROUP BY message_id',
  );
  return new Map(rows.map((r) => [r.message_id, Number(r.n)]));
}

natsTest('an unacknowledged publish answers "may be stored" with its messageIds; the retry is stored exactly once', async (t) => {
  // DATA_DIR first: startNatsServer puts its store inside the test dir, a later t.testdir() would wipe it.
  const dataDir = t.testdir();
  const nats = await startNatsServer(t);
  t.teardown(() => nats.thaw()); // never leave a stopped process behind a failed assertion
  const h = await startTestApp(t, { natsUrl: nats.url, dataDir, config: { natsPublishTimeoutMs: PUBLISH_TIMEOUT_MS } });
  const cred = await h.createOrg('acme');
  t.equal((await h.collect(customEvent(cred.production, { messageId: 'before' }))).statusCode, 200, 'accepted while NATS runs');

  await nats.freeze();
  // 12 events as in the issue: half with the client's messageId, half with one the server assigns.
  const events = Array.from({ length: 12 }, (_, i) =>
    customEvent(cred.production, { clientId: `c-${i}`, ...(i % 2 === 0 ? { messageId: `frozen-${i}` } : {}) }),
  );
  const member = (i: number) => {
    const { partnerId: _p, partnerSecret: _s, ...rest } = customEvent(cred.production, { clientId: `b-${i}` });
    return rest;
  };
  const batchBody = { ...cred.production, batch: [member(0), member(1), member(2)] };
  const [batch, ...answers] = await Promise.all([h.batch(batchBody), ...events.map((e) => h.collect(e))]);

  const retries: Array<Record<string, unknown>> = [];
  for (const [i, res] of answers.entries()) {
    t.equal(res.statusCode, 503, `event ${i}: 503`);
    const problem = res.json();
    t.equal(problem.code, 'log_outcome_unknown', `event ${i}: outcome unknown, not log_unavailable`);
    t.equal(res.headers['retry-after'], '1', `event ${i}: Retry-After`);
    t.notMatch(problem.detail, /nothing was stored/i, `event ${i}: does not claim nothing was stored`);
    t.match(problem.detail, /may be stored/, `event ${i}: says it may be stored`);
    if (i % 2 === 0) t.equal(problem.messageId, `frozen-${i}`, `event ${i}: the client's messageId`);
    else t.match(problem.messageId, /^[0-9a-f]{8}-[0-9a-f]{4}-7/, `event ${i}: the messageId the server assigned`);
    t.ok(problem.detail.includes(problem.messageId), `event ${i}: the detail names the messageId to retry with`);
    retries.push({ ...events[i], messageId: problem.messageId });
  }
  t.equal(batch.statusCode, 503, 'the batch: 503');
  t.equal(batch.json().code, 'log_outcome_unknown');
  const batchIds = batch.json().messageIds as string[];
  t.equal(batchIds.length, 3, 'the batch answer lists a messageId per member');
  t.equal(new Set([...batchIds, ...retries.map((r) => r.messageId)]).size, 15, 'all distinct');

  nats.thaw();
  await waitFor(async () => (await h.app.inject({ method: 'GET', url: '/readyz' })).statusCode === 200, 15_000);
  // What the frozen server had received is stored now: "nothing was stored" would have been false.
  const afterThaw = await waitFor(async () => {
    const ids = await storedIds(h);
    return ids.size === 16 ? ids : undefined;
  }, 15_000);
  t.ok([...afterThaw.values()].every((n) => n === 1), 'the events answered 503 were stored once each');

  for (const [i, retry] of retries.entries()) {
    const res = await h.collect(retry);
    t.equal(res.statusCode, 200, `retry ${i}: 200`);
    t.same(res.json(), { messageId: retry.messageId }, `retry ${i}: the same messageId`);
  }
  const batchRetry = await h.batch({ ...batchBody, batch: batchBody.batch.map((m, i) => ({ ...m, messageId: batchIds[i] })) });
  t.equal(batchRetry.statusCode, 200, 'batch retry: 200');
  t.same(batchRetry.json(), { messageIds: batchIds }, 'with the same messageIds');

  const final = await storedIds(h);
  t.same(
    [...final.keys()].sort(),
    ['before', ...batchIds, ...retries.map((r) => r.messageId as string)].sort(),
    'every event is stored',
  );
  t.ok([...final.values()].every((n) => n === 1), 'each exactly once: the retries were deduplicated');
  const samples = await h.admin('GET', '/admin/v1/orgs/acme/events/samples?env=production&limit=100');
  t.equal(samples.statusCode, 200);
  const sampleIds = (samples.json().events as Array<{ messageId: string }>).map((e) => e.messageId);
  t.equal(sampleIds.length, 16, 'the admin API shows 16 events, no duplicates');
});
