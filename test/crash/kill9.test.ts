/**
 * SPEC 4.3 "never 200 for an event that is not stored", under crashes: the real service (a child
 * process) takes events of three orgs from 20 concurrent senders and is killed with SIGKILL while
 * requests are in flight (and the orgs' batches are being compacted, each into its own database), then
 * restarted on the same DATA_DIR (and the same NATS stream). At the end every messageId that was
 * answered 200 must be in its org's database exactly once, and no messageId may be there twice: each
 * org's database holds its own log position, so a crash between two orgs' commits replays both from
 * their own positions.
 * Ids whose request got no answer may or may not be stored.
 * Runs for the embedded log and for JetStream (a private nats-server, so the stream is this test's own).
 */
import t, { type Test } from 'tap';
import { join } from 'node:path';
import { LocalDatabase } from '../../src/db/database.js';
import { hasNatsServerBinary, startNatsServer } from '../helpers/nats-server.js';
import {
  type Credential,
  type ServerProcess,
  createOrgOverHttp,
  spawnServer,
  waitForCompaction,
} from '../helpers/server-process.js';
import { sleep } from '../helpers/deadline.js';

// Two kills each: of the first process, and of one restarted on what the first left.
const ROUNDS = 2;
const SENDERS = 20;
const SLUGS = ['crash_a', 'crash_b', 'crash_c'];

interface Tally {
  acked: Set<string>;
  sent: number;
  /** Requests outstanding at the moment of a SIGKILL, summed over rounds. */
  inFlightAtKill: number;
  /** Requests that failed (connection error) after a SIGKILL. */
  failedByKill: number;
  /** Anything else: an error before the kill, a non-200 status, a wrong messageId. */
  unexpected: string[];
}


/** Fires events from SENDERS loops until the server is killed 200–600 ms in. */
async function crashRound(server: ServerProcess, creds: Credential[], round: number, tally: Tally): Promise<number> {
  let killed = false;
  let inFlight = 0;
  let n = 0;
  const sender = async (index: number): Promise<void> => {
    const org = index % creds.length;
    const cred = creds[org]!;
    while (!killed) {
      const messageId = `${SLUGS[org]}-r${round}-${n++}`;
      tally.sent++;
      inFlight++;
      try {
        const res = await fetch(`${server.url}/http/v1/collect`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(event(cred, messageId)),
          signal: AbortSignal.timeout(10_000),
        });
        // The status line alone is the answer: 200 means durable, even if the body is cut off.
        if (res.status === 200) tally.acked.add(messageId);
        else tally.unexpected.push(`${messageId}: status ${res.status}`);
        const body = await res.json().catch(() => undefined);
        if (res.status === 200 && body !== undefined && (body as { messageId?: string }).messageId !== messageId) {
          tally.unexpected.push(`${messageId}: answered ${JSON.stringify(body)}`);
        }
      } catch (error) {
        if (killed) tally.failedByKill++;
        else tally.unexpected.push(`${messageId}: ${String(error)} ${String((error as Error).cause ?? '')}`);
      } finally {
        inFlight--;
      }
    }
  };
  const senders = Array.from({ length: SENDERS }, (_, index) => sender(index));
  await sleep(200 + Math.random() * 400);
  const atKill = inFlight;
  killed = true;
  await server.kill9();
  await Promise.all(senders);
  tally.inFlightAtKill += atKill;
  return atKill;
}

function event(cred: Credential, messageId: string): Record<string, unknown> {
  return {
    ...cred,
    clientId: `client-${messageId}`,
    sentAt: Date.now(),
    type: 'track',
    event: 'custom',
    messageId,
    properties: { eventName: 'booking_completed', properties: { city: 'Lisbon', nights: 3 } },
    traits: { email: 'ada@example.com' },
  };
}

async function crashTest(t: Test, dataDir: string, env: Record<string, string>): Promise<void> {
  const serverEnv = { DATA_DIR: dataDir, ...env };
  let server = await spawnServer(t, serverEnv);
  const creds: Credential[] = [];
  for (const slug of SLUGS) creds.push(await createOrgOverHttp(server.url, slug));
  const tally: Tally = { acked: new Set(), sent: 0, inFlightAtKill: 0, failedByKill: 0, unexpected: [] };

  for (let round = 1; round <= ROUNDS; round++) {
    const before = tally.acked.size;
    const atKill = await crashRound(server, creds, round, tally);
    t.comment(`round ${round}: ${tally.acked.size - before} acknowledged, ${atKill} in flight at SIGKILL`);
    server = await spawnServer(t, serverEnv);
  }
  for (const [i, slug] of SLUGS.entries()) await waitForCompaction(server.url, slug, creds[i]!);
  await server.stop();

  t.same(tally.unexpected.slice(0, 20), [], 'no errors or non-200 answers before a kill');
  t.ok(tally.inFlightAtKill > 0, `requests were in flight at the kills (${tally.inFlightAtKill} over ${ROUNDS} rounds)`);
  t.ok(tally.failedByKill > 0, `requests failed because of the kills (${tally.failedByKill})`);
  t.ok(tally.acked.size >= ROUNDS * SENDERS, `${tally.acked.size} of ${tally.sent} events acknowledged`);

  const stored = new Map<string, number>();
  const misplaced: string[] = [];
  for (const slug of SLUGS) {
    const db = await LocalDatabase.open(join(dataDir, 'orgs', `${slug}.duckdb`));
    const rows = await db.all<{ org: string; message_id: string; n: bigint }>(
      `SELECT org, message_id, count(*) AS n FROM events WHERE environment = 'production' AND message_id LIKE 'crash%' GROUP BY ALL`,
    );
    await db.close();
    for (const r of rows) {
      if (!r.message_id.startsWith(`${slug}-`) || r.org !== slug) misplaced.push(`${r.message_id} in ${slug}`);
      stored.set(r.message_id, Number(r.n));
    }
  }
  t.same(misplaced.slice(0, 20), [], "every event is in its own org's database only");
  const missing = [...tally.acked].filter((id) => !stored.has(id));
  const twice = [...stored].filter(([, n]) => n > 1).map(([id, n]) => `${id} x${n}`);
  t.same(missing.slice(0, 20), [], `every acknowledged messageId is stored (${missing.length} missing)`);
  t.same(twice.slice(0, 20), [], `no messageId is stored twice (${twice.length} repeated)`);
  t.comment(`stored ${stored.size} distinct ids: ${tally.acked.size} acknowledged + ${stored.size - tally.acked.size} unanswered`);
}

t.test('embedded log: kill -9 during collect loses no acknowledged event and repeats none', async (t) => {
  await crashTest(t, t.testdir(), {});
});

const withNats = hasNatsServerBinary() ? t.test : t.skip;
if (!hasNatsServerBinary()) t.comment('skipped: JetStream crash test needs /usr/sbin/nats-server');

withNats('JetStream log: kill -9 during collect loses no acknowledged event and repeats none', async (t) => {
  // DATA_DIR first: startNatsServer puts its store inside the test dir, a later t.testdir() would wipe it.
  const dataDir = t.testdir();
  const nats = await startNatsServer(t, { syncAlways: true });
  t.comment(
    nats.syncAlways
      ? 'nats-server fsyncs before every ack (sync_interval: always)'
      : 'this nats-server predates sync_interval: acks are not fsynced (fine here: only the service is killed)',
  );
  await crashTest(t, dataDir, { NATS_URL: nats.url });
});
