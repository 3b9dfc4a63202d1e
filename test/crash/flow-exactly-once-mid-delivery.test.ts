/**
 * Exactly once per send key (SPEC 8) when the real service (a child process) is killed with SIGKILL in the
 * middle of 300 webhook (or e-mail) sends answered after a few milliseconds: after a restart every key
 * arrives, each id at most twice, and no more of them twice than a channel has delivery slots
 * (SEND_CONCURRENCY): only sends in flight at the kill repeat.
 */
import { DuckDBInstance } from '@duckdb/node-api';
import t from 'tap';
import { BOOKING_TRIGGER } from '../helpers/flows.js';
import { startReceiver } from '../helpers/http-receiver.js';
import { adminCall, createOrgOverHttp, type ServerProcess, spawnServer, waitForCompaction } from '../helpers/server-process.js';
import { smtpServer } from '../helpers/smtp-server.js';
import { waitFor } from '../helpers/app.js';
import { scaled } from '../helpers/deadline.js';
import { SEND_CONCURRENCY } from '../../src/reactions/flows/send/send-dispatcher.js';

const sends = async (url: string) => (await adminCall(url, 'GET', '/admin/v1/orgs/acme/flows/f1/sends?limit=1000')).sends as { status: string; sendId: string }[];

/**
 * Killed in the middle of delivery (the attacker's finding: 131 of 300 delivered twice when outcomes were
 * recorded in batches). A delivery slot is held from the request until its outcome is recorded, so a
 * kill -9 can only repeat what was in flight: at most SEND_CONCURRENCY webhook-ids twice, none three times.
 */
const MANY = 300;

/**
 * One org, one flow (run by hand), MANY events already compacted; returns when the run queued them all
 * (`deferred_quiet_hours`: deferred them all until `flow.quietHours` end).
 */
async function queueMany(url: string, message: Record<string, unknown>, flow: Record<string, unknown> = {}, outcome = 'sent'): Promise<void> {
  const cred = await createOrgOverHttp(url, 'acme');
  await adminCall(url, 'PUT', '/admin/v1/orgs/acme/triggers/booking_completed', { sql: BOOKING_TRIGGER });
  // Runs only when asked (the first scheduled run would be an hour after each start).
  await adminCall(url, 'POST', '/admin/v1/orgs/acme/flows', { id: 'f1', name: 'Many', category: 'triggered', entry: 'when_contact_triggers_event', trigger: 'booking_completed', scheduleSeconds: 3600, realTime: false, message, ...flow });
  await adminCall(url, 'POST', '/admin/v1/orgs/acme/flows/f1/start');
  for (let b = 0; b < MANY / 100; b++) {
    const batch = Array.from({ length: 100 }, (_, i) => {
      const n = b * 100 + i;
      return { clientId: `c${n}`, sentAt: Date.now(), type: 'track', event: 'custom', messageId: `e${n}`, properties: { eventName: 'booking_completed', properties: { city: 'Lisbon' } }, traits: { email: `user${n}@example.com` } };
    });
    const res = await fetch(`${url}/http/v1/batch`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...cred, batch }) });
    if (res.status !== 200) throw new Error(`batch: ${res.status} ${await res.text()}`);
  }
  await waitForCompaction(url, 'acme', cred);
  const run = await adminCall(url, 'POST', '/admin/v1/orgs/acme/flows/f1/run');
  if ((run.outcomes as Record<string, number>)[outcome] !== MANY) throw new Error(`run: ${JSON.stringify(run)}`);
}

const tally = (ids: string[]) => {
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  const values = [...counts.values()];
  return { distinct: counts.size, twice: values.filter((n) => n === 2).length, more: values.filter((n) => n > 2).length };
};

/** Quiet hours (UTC) that hold now and for the next hour. */
function quietNow(): { start: string; end: string; timeZone: string } {
  const hhmm = (at: number) => new Date(at).toISOString().slice(11, 16);
  return { start: hhmm(Date.now() - 60_000), end: hhmm(Date.now() + 3_600_000), timeZone: 'UTC' };
}

/** A window that ended an hour ago. */
function quietEnded(): { start: string; end: string; timeZone: string } {
  const hhmm = (at: number) => new Date(at).toISOString().slice(11, 16);
  return { start: hhmm(Date.now() - 2 * 3_600_000), end: hhmm(Date.now() - 3_600_000), timeZone: 'UTC' };
}

/**
 * One kill point per run, drawn from 40–260 (printed): the bound holds wherever the kill falls. Sent at
 * once, and deferred by quiet hours: the service stops with all 300 deferred, their due time is moved to
 * now and the flow's window to an hour ago in its database (the clock, faked: the window ended while it was
 * down), and the next start
 * releases them together and is killed while sending.
 */
const KILL_AT = 40 + Math.floor(Math.random() * 221);
for (const deferred of [false, true]) {
  const how = deferred ? 'deferred by quiet hours and released' : 'sent at once';
  t.test(`${how}, killed after ${KILL_AT} of ${MANY} webhooks arrived: at most ${SEND_CONCURRENCY} repeated, none three times`, async (t) => {
    const dataDir = t.testdir();
    const env = { DATA_DIR: dataDir, QUERIES_DIR: `${dataDir}/queries`, WEBHOOK_ALLOW_PRIVATE: 'true' };
    let killed: Promise<void> | undefined;
    let first: ServerProcess | undefined;
    // Every webhook answered 204 after 1–10 ms; the KILL_AT-th arrival triggers the kill -9.
    const receiver = await startReceiver([
      (res, n) => {
        if (n + 1 === KILL_AT) killed = first!.kill9();
        setTimeout(() => res.writeHead(204).end(), 1 + Math.random() * 9);
      },
    ]);
    t.teardown(() => receiver.close());
    first = await spawnServer(t, env);
    const message = { channel: 'webhook', url: receiver.url, template: { body: { eventId: '{{ event.event_id }}' } } };
    if (deferred) {
      await queueMany(first.url, message, { quietHours: quietNow() }, 'deferred_quiet_hours');
      t.ok((await sends(first.url)).every((s) => s.status === 'deferred'), 'every send waits, deferred');
      await first.stop();
      t.equal(receiver.received.length, 0, 'nothing sent during quiet hours');
      const instance = await DuckDBInstance.create(`${dataDir}/orgs/acme.duckdb`);
      const connection = await instance.connect();
      await connection.run("UPDATE flow_sends SET due_at = now() WHERE status = 'deferred'");
      // And the window is over (a release checks quiet hours again: one inside them is deferred again).
      await connection.run('UPDATE flows SET definition = json_merge_patch(definition, $1::JSON)', [JSON.stringify({ quietHours: quietEnded() })]);
      connection.closeSync();
      instance.closeSync();
      first = await spawnServer(t, env);
    } else {
      await queueMany(first.url, message);
    }
    await waitFor(async () => killed !== undefined, 30_000);
    await killed;
    const before = receiver.received.length;

    const second = await spawnServer(t, env);
    // Only bounds a hang: with two busy loops beside the suite the restart and 300 deliveries took over 30 s.
    await waitFor(async () => (await sends(second.url)).filter((s) => s.status === 'delivered').length === MANY, scaled(120_000));
    const ids = receiver.received.map((r) => String(r.headers['webhook-id']));
    const { distinct, twice, more } = tally(ids);
    t.comment(`${before} arrived before the kill; ${twice} webhook-ids arrived twice`);
    t.equal(distinct, MANY, 'every send delivered at least once');
    t.ok(twice <= SEND_CONCURRENCY, `${twice} repeated ≤ ${SEND_CONCURRENCY} (the sends in flight at the kill)`);
    t.equal(more, 0, 'none three times');
    await second.stop();
  });
}

t.test(`e-mail killed mid-delivery: each Message-ID at most twice, at most ${SEND_CONCURRENCY} of them`, async (t) => {
  const dataDir = t.testdir();
  let killed: Promise<void> | undefined;
  let first: ServerProcess | undefined;
  const smtp = await smtpServer(t, {
    answerDelayMs: () => 1 + Math.random() * 19,
    onMail: (n) => {
      if (n === 100) killed = first!.kill9();
    },
  });
  const env = { DATA_DIR: dataDir, QUERIES_DIR: `${dataDir}/queries`, SMTP_URL: smtp.url };
  first = await spawnServer(t, env);
  await queueMany(first.url, { channel: 'email', template: { subject: 'Stay {{ event.event_id }}', text: 'Hello' } });
  await waitFor(async () => killed !== undefined, 30_000);
  await killed;

  const second = await spawnServer(t, env);
  await waitFor(async () => (await sends(second.url)).filter((s) => s.status === 'delivered').length === MANY, 60_000);
  const ids = smtp.mails.map((m) => /^Message-ID: <([^@>]+)@/im.exec(m.data)?.[1] ?? '');
  const { distinct, twice, more } = tally(ids);
  t.comment(`${twice} Message-IDs arrived twice`);
  t.equal(distinct, MANY, 'every e-mail sent at least once');
  t.ok(twice <= SEND_CONCURRENCY, `${twice} retried ≤ ${SEND_CONCURRENCY} (the e-mails in flight at the kill)`);
  t.equal(more, 0, 'none retried more than once');
  await second.stop();
});
