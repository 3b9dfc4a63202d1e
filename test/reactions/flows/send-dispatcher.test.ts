/**
 * The dispatcher against a real org database and real HTTP receivers: a send holds its delivery slot
 * until its outcome is recorded, so however slow or absent the database, no more than SEND_CONCURRENCY
 * webhooks are sent but not recorded; an outcome whose recording fails is kept and recorded once the
 * database answers again, never lost to a re-send; and an org whose receiver hangs keeps only its share
 * of the slots.
 */
import t, { type Test as Tap } from 'tap';
import { pino } from 'pino';
import { openChannels } from '../../../src/reactions/channels/open-channels.js';
import { createContext } from '../../../src/core/context.js';
import type { Database } from '../../../src/db/sql.js';
import { type PendingSend, SEND_CONCURRENCY, SendDispatcher } from '../../../src/reactions/flows/send/send-dispatcher.js';
import { SendStore } from '../../../src/reactions/flows/store/send-store.js';
import { createMetrics } from '../../../src/ops/metrics.js';
import { OrgDatabases } from '../../../src/storage/org-databases.js';
import type { OrgStorage } from '../../../src/db/org-storage.js';
import { LocalOrgStorage } from '../../../src/storage/org-storage.js';
import { waitFor } from '../../helpers/app.js';
import { startReceiver, status } from '../../helpers/http-receiver.js';

const SENDS = 40;

/**
 * The org storage with an outage switch: while `down`, every call fails as calls in flight do when the
 * process holding DuckDB restarts (the database itself is real and untouched).
 */
function flakyStorage(inner: OrgStorage) {
  const state = { down: false, refused: 0 };
  const guard = <T>(call: () => Promise<T>): Promise<T> => {
    if (!state.down) return call();
    state.refused++;
    return Promise.reject(new Error('storage unavailable (restarting)'));
  };
  const storage: OrgStorage = {
    org(slug): Database {
      const db = inner.org(slug);
      return {
        exclusive: (work) => guard(() => db.exclusive(work)),
        transaction: (work) => guard(() => db.transaction(work)),
        all: (sql, params) => guard(() => db.all(sql, params)),
        run: (sql, params) => guard(() => db.run(sql, params)),
        untrusted: (ms, work) => guard(() => db.untrusted(ms, work)),
        close: () => db.close(),
      };
    },
    slugs: () => inner.slugs(),
    drop: (slug) => inner.drop(slug),
  };
  return { storage, state };
}

async function setUp(t: Tap, options: { timeoutMs?: number } = {}) {
  const pool = new OrgDatabases(t.testdir(), { maxOpen: 4, memoryLimit: '256MB', threads: 1, idleCloseMs: 60_000 });
  t.teardown(() => pool.close());
  const { storage, state } = flakyStorage(new LocalOrgStorage(pool));
  /** `count` pending webhook sends of `org` to `url`, written as a flow run writes them. */
  const seed = async (org: string, url: string, count: number): Promise<PendingSend[]> => {
    const sends: PendingSend[] = Array.from({ length: count }, (_, i) => ({
      sendId: `msg_${org}_${i}`,
      org,
      flowId: 'f1',
      email: `user${i}@example.com`,
      eventId: `e${i}`,
      variant: null,
      message: { channel: 'webhook', url, body: { n: i } },
    }));
    for (const s of sends) {
      await storage.org(org).run(
        "INSERT INTO flow_sends VALUES ($1, $2, 'f1', $3, $4, NULL, 'webhook', $5, 'h', 'pending', 0, NULL, now(), NULL, false, NULL)",
        [s.sendId, org, s.email, s.eventId, JSON.stringify(s.message)],
      );
    }
    return sends;
  };
  const timeoutMs = options.timeoutMs ?? 30_000;
  const channels = openChannels({ dataDir: t.testdir(), allowPrivate: true, timeoutMs, signingKey: 'k'.repeat(32), clock: createContext().clock });
  t.teardown(() => channels.close());
  const dispatcher = (policy = { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 100 }) =>
    new SendDispatcher({
      sends: new SendStore(storage),
      ctx: createContext(),
      channels,
      policy,
      metrics: createMetrics(),
      logger: pino({ level: 'silent' }),
      onDelivered: () => undefined,
    });
  const statuses = async (org = 'acme') =>
    (await storage.org(org).all<{ status: string; n: bigint }>('SELECT status, count(*) AS n FROM flow_sends GROUP BY ALL')).map((r) => `${r.status}:${r.n}`);
  return { seed, state, dispatcher, statuses };
}

t.test('while outcomes cannot be recorded, no more than SEND_CONCURRENCY are sent; then all are recorded, none re-sent', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const { seed, state, dispatcher, statuses } = await setUp(t);
  const sends = await seed('acme', receiver.url, SENDS);
  const first = dispatcher();

  state.down = true;
  first.enqueue(sends);
  // Each refused recording is retried (100 ms, 200 ms, …): three refusals mean the first sends have
  // waited for their record well past the receiver's answer.
  await waitFor(async () => state.refused >= 3 && receiver.received.length >= SEND_CONCURRENCY, 15_000);
  t.equal(receiver.received.length, SEND_CONCURRENCY, `only the ${SEND_CONCURRENCY} sends holding a slot went out`);

  state.down = false;
  await first.idle();
  t.same(await statuses(), [`delivered:${SENDS}`], 'every outcome recorded once the database answers');
  const ids = receiver.received.map((r) => r.headers['webhook-id']);
  t.equal(new Set(ids).size, SENDS, 'every send delivered');
  t.equal(ids.length, SENDS, 'none twice');

  // What a restart would re-send: nothing, the outcomes were kept and recorded.
  t.equal(await dispatcher().resumePending(['acme']), 0, 'nothing left pending for the next start');
  await first.close();
});

t.test('shutdown during an outage: the unrecorded sends stay pending, at most SEND_CONCURRENCY of them', async (t) => {
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  const { seed, state, dispatcher, statuses } = await setUp(t);
  const sends = await seed('acme', receiver.url, SENDS);
  const first = dispatcher();
  state.down = true;
  first.enqueue(sends);
  await waitFor(async () => state.refused >= 1 && receiver.received.length >= SEND_CONCURRENCY, 15_000);
  await first.close();
  state.down = false;
  t.equal(receiver.received.length, SEND_CONCURRENCY, 'the queued sends were not started by the shutdown');
  t.same(await statuses(), [`pending:${SENDS}`], 'nothing recorded: the database never answered');
  const second = dispatcher();
  t.equal(await second.resumePending(['acme']), SENDS, 'all pending again at the next start');
  await second.idle();
  t.same(await statuses(), [`delivered:${SENDS}`]);
  const counts = new Map<string, number>();
  for (const r of receiver.received) counts.set(String(r.headers['webhook-id']), (counts.get(String(r.headers['webhook-id'])) ?? 0) + 1);
  t.equal(counts.size, SENDS, 'every send delivered');
  t.equal([...counts.values()].filter((n) => n === 2).length, SEND_CONCURRENCY, `only the ${SEND_CONCURRENCY} in flight at shutdown were sent twice`);
  await second.close();
});

t.test('an org whose receiver hangs does not hold up another org behind its queue', async (t) => {
  const hanging = await startReceiver([() => undefined]); // never answers: every attempt runs to its timeout
  let evilAttemptsMeanwhile = -1;
  const fine = await startReceiver([
    (res, n) => {
      if (n === 4) evilAttemptsMeanwhile = hanging.received.length;
      res.writeHead(204).end();
    },
  ]);
  t.teardown(() => Promise.all([hanging.close(), fine.close()]));
  const { seed, dispatcher, statuses } = await setUp(t, { timeoutMs: 2_000 });
  const evil = await seed('evil', hanging.url, 100);
  const acme = await seed('acme', fine.url, 5);
  const d = dispatcher();
  d.enqueue(evil);
  d.enqueue(acme);
  await waitFor(async () => (await statuses('acme')).join() === 'delivered:5', 30_000);
  t.ok(
    evilAttemptsMeanwhile <= 2 * SEND_CONCURRENCY,
    `acme's 5 went out once evil's first attempts timed out (evil had made ${evilAttemptsMeanwhile} attempts), not after evil's 100 sends`,
  );
  await d.close();
});

t.test("while an org's receiver holds every request it gets, another org's sends go out without waiting for one to end", async (t) => {
  // Never answers, and the timeout is longer than the test: before issue 37 every slot was the slow org's
  // and the other org's sends waited for the first timeout (here a minute).
  const hanging = await startReceiver([() => undefined]);
  const fine = await startReceiver([status(204)]);
  t.teardown(() => Promise.all([hanging.close(), fine.close()]));
  const { seed, dispatcher, statuses } = await setUp(t, { timeoutMs: 60_000 });
  const slow = await seed('slow', hanging.url, 3 * SEND_CONCURRENCY);
  const acme = await seed('acme', fine.url, 5);
  const d = dispatcher();
  d.enqueue(slow);
  await waitFor(async () => hanging.received.length >= SEND_CONCURRENCY, 15_000);
  d.enqueue(acme);
  await waitFor(async () => (await statuses('acme')).join() === 'delivered:5', 30_000);
  t.equal(hanging.received.length, SEND_CONCURRENCY, `the slow org holds its ${SEND_CONCURRENCY} slots, no more, all still unanswered`);
  t.same(await statuses('slow'), [`pending:${3 * SEND_CONCURRENCY}`], "none of the slow org's sends has ended");
  // Its requests are ended by closing the receiver (the dispatcher records them failed or leaves them pending).
  await hanging.close();
  await d.close();
});

t.test('an attempt that fails while the service stops does not wait out its retry delay', async (t) => {
  // The receiver holds the request until the test answers it 503 with Retry-After: an hour (the policy's
  // maximum, so the retry waits exactly that).
  let answer: (() => void) | undefined;
  const receiver = await startReceiver([(res) => (answer = () => res.writeHead(503, { 'retry-after': '3600' }).end())]);
  t.teardown(() => receiver.close());
  const { seed, dispatcher, statuses } = await setUp(t);
  const d = dispatcher({ maxAttempts: 5, baseDelayMs: 3_600_000, maxDelayMs: 3_600_000 });
  d.enqueue(await seed('acme', receiver.url, 1));
  await waitFor(async () => answer !== undefined, 15_000);
  let closed = false;
  const closing = d.close().then(() => (closed = true));
  answer!();
  // Before, the send slept its hour before close() could resolve.
  await waitFor(async () => closed, 30_000);
  await closing;
  t.same(await statuses(), ['pending:1'], 'the send stays pending for the next start');
});
