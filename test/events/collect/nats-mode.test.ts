/**
 * The app in NATS mode (SPEC 2 run modes, 4.3, 9): events go through a JetStream stream into DuckDB,
 * and while NATS is down collect answers 503 + Retry-After (nothing stored) and /readyz says not ready.
 * Each test runs its own nats-server: the service uses one fixed stream name (AUDIENCE_EVENTS), so
 * sharing the machine's NATS between tests would mix their streams and cursors.
 */
import t from 'tap';
import { customEvent, startTestApp, waitFor, type TestApp } from '../../helpers/app.js';
import { scaled } from '../../helpers/deadline.js';
import { hasNatsServerBinary, startNatsServer } from '../../helpers/nats-server.js';

const natsTest = hasNatsServerBinary() ? t.test : t.skip;
if (!hasNatsServerBinary()) t.comment('skipped: NATS mode tests need /usr/sbin/nats-server (a private server per test)');

async function messageIds(h: TestApp): Promise<string[]> {
  const rows = await h.db().all<{ message_id: string }>('SELECT message_id FROM events ORDER BY 1');
  return rows.map((r) => r.message_id);
}

const readyStatus = async (h: TestApp): Promise<number> => (await h.app.inject({ method: 'GET', url: '/readyz' })).statusCode;

natsTest('NATS mode: an acknowledged event goes through JetStream into DuckDB once', async (t) => {
  // DATA_DIR first: startNatsServer puts its store inside the test dir, a later t.testdir() would wipe it.
  const dataDir = t.testdir();
  const nats = await startNatsServer(t);
  const h = await startTestApp(t, { natsUrl: nats.url, dataDir });
  t.equal(h.app.eventLog!.kind, 'jetstream', 'the JetStream backend is in use');
  const cred = await h.createOrg('acme');

  const res = await h.collect(customEvent(cred.production, { messageId: 'js-1' }));
  t.equal(res.statusCode, 200, 'acknowledged after the JetStream ack');
  t.same(res.json(), { messageId: 'js-1' });
  t.equal((await h.collect(customEvent(cred.production, { messageId: 'js-1' }))).statusCode, 200, 'a retry is answered 200');
  const batch = await h.batch({
    ...cred.staging,
    batch: [1, 2].map((i) => {
      const { partnerId: _p, partnerSecret: _s, ...member } = customEvent(cred.staging, { messageId: `js-b${i}` });
      return member;
    }),
  });
  t.equal(batch.statusCode, 200, 'a batch is acknowledged');
  t.same(batch.json(), { messageIds: ['js-b1', 'js-b2'] });
  t.ok((await h.app.eventLog!.headSeq()) >= 1, 'records are in the stream');

  await h.compacted();
  const rows = await h.db().all<{ message_id: string; org: string; environment: string; email: string }>(
    'SELECT message_id, org, environment, email FROM events ORDER BY message_id',
  );
  t.same(rows, [
    { message_id: 'js-1', org: 'acme', environment: 'production', email: 'ada@example.com' },
    { message_id: 'js-b1', org: 'acme', environment: 'staging', email: 'ada@example.com' },
    { message_id: 'js-b2', org: 'acme', environment: 'staging', email: 'ada@example.com' },
  ], 'each event once (the retry deduplicated), environment from the credential');
  t.equal(await readyStatus(h), 200, '/readyz: ready');
});

natsTest('NATS down: 503 + Retry-After, nothing stored, not ready; back up: accepted again', async (t) => {
  // DATA_DIR first: startNatsServer puts its store inside the test dir, a later t.testdir() would wipe it.
  const dataDir = t.testdir();
  const nats = await startNatsServer(t);
  // A publish timeout no loaded machine reaches: a refusal before it is the fast path, not the timeout.
  const natsPublishTimeoutMs = scaled(30_000);
  const h = await startTestApp(t, { natsUrl: nats.url, dataDir, config: { natsPublishTimeoutMs } });
  const cred = await h.createOrg('acme');
  t.equal((await h.collect(customEvent(cred.production, { messageId: 'before' }))).statusCode, 200, 'accepted while up');
  await h.compacted();
  const headBefore = await h.app.eventLog!.headSeq();

  await nats.stop();
  await waitFor(async () => (await readyStatus(h)) === 503, 5_000);
  const ready = await h.app.inject({ method: 'GET', url: '/readyz' });
  t.equal(ready.statusCode, 503, '/readyz: not ready while NATS is down');
  t.equal(ready.json().code, 'not_ready', '/readyz says not ready');
  t.match(ready.json().detail, /log: NATS is not connected/, 'and names the cause');

  const started = Date.now();
  const down = await h.collect(customEvent(cred.production, { messageId: 'while-down' }));
  t.ok(Date.now() - started < natsPublishTimeoutMs, `refused fast (${Date.now() - started} ms), not after the publish timeout`);
  t.equal(down.statusCode, 503, 'collect answers 503');
  t.match(down.headers['content-type'], /^application\/problem\+json/, 'as problem+json');
  t.equal(down.headers['retry-after'], '1', 'Retry-After tells the client to retry');
  t.match(down.json(), { status: 503, code: 'log_unavailable', title: String, detail: String, type: String }, 'RFC 9457 members, code log_unavailable');
  t.ok(down.json().requestId, 'requestId in the problem');

  const downBatch = await h.batch({
    ...cred.production,
    batch: [{ clientId: 'c', sentAt: Date.now(), type: 'track', event: 'custom', messageId: 'batch-while-down',
      properties: { eventName: 'x', properties: {} }, traits: { email: 'ada@example.com' } }],
  });
  t.equal(downBatch.statusCode, 503, 'a batch is refused too');
  t.equal(downBatch.headers['retry-after'], '1', 'with Retry-After');

  await nats.restart();
  await waitFor(async () => (await readyStatus(h)) === 200, 15_000);
  t.pass('/readyz: ready again once NATS is back');
  t.equal(await h.app.eventLog!.headSeq(), headBefore, 'no record reached the stream while NATS was down');

  const after = await h.collect(customEvent(cred.production, { messageId: 'after' }));
  t.equal(after.statusCode, 200, 'accepted again without restarting the service');
  await h.compacted();
  t.same(await messageIds(h), ['after', 'before'], 'the events that got 503 were not stored');

  // The client's retry of the refused event is what stores it.
  t.equal((await h.collect(customEvent(cred.production, { messageId: 'while-down' }))).statusCode, 200, 'the retry is accepted');
  await h.compacted();
  t.same(await messageIds(h), ['after', 'before', 'while-down'], 'and stored');
});
