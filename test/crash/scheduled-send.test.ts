/**
 * Kill -9 during a scheduled send (issue 26): the real service (a child process) sends one occurrence to a
 * segment of 300 contacts at 60 a second, and is killed with SIGKILL after a random number of webhooks
 * arrived (printed). After a restart the occurrence goes on from the last chunk it committed: every contact
 * is decided once (one decision row, one send row), every one gets the message, and only sends in flight at
 * the kill arrive twice (at most SEND_CONCURRENCY, same webhook-id), none three times.
 */
import { DuckDBInstance } from '@duckdb/node-api';
import t from 'tap';
import { waitFor } from '../helpers/app.js';
import { startReceiver } from '../helpers/http-receiver.js';
import { ADMIN_KEY, adminCall, createOrgOverHttp, type ServerProcess, spawnServer } from '../helpers/server-process.js';
import { SEND_CONCURRENCY } from '../../src/reactions/flows/send/send-dispatcher.js';

const MEMBERS = 300;
const RATE = 60;
const KILL_AT = 20 + Math.floor(Math.random() * 241);

interface Occurrence {
  status: string;
  members: number;
  decided: number;
  outcomes: Record<string, number>;
}

const occurrences = async (url: string) => (await adminCall(url, 'GET', '/admin/v1/orgs/acme/flows/launch/occurrences')).occurrences as Occurrence[];

t.test(`killed after ${KILL_AT} of ${MEMBERS} webhooks of a scheduled send: each contact decided once, sent once (in-flight sends at most twice)`, async (t) => {
  const dataDir = t.testdir();
  const env = { DATA_DIR: dataDir, QUERIES_DIR: `${dataDir}/queries`, WEBHOOK_ALLOW_PRIVATE: 'true' };
  let first: ServerProcess | undefined;
  let killed: Promise<void> | undefined;
  const receiver = await startReceiver([
    (res, n) => {
      if (n + 1 === KILL_AT) killed = first!.kill9();
      setTimeout(() => res.writeHead(204).end(), 1 + Math.random() * 9);
    },
  ]);
  t.teardown(() => receiver.close());
  first = await spawnServer(t, env);
  const url = first.url;
  await createOrgOverHttp(url, 'acme');
  const ndjson = Array.from({ length: MEMBERS }, (_, i) => JSON.stringify({ email_address: `user${i}@example.com` })).join('\n');
  const imported = await fetch(`${url}/admin/v1/orgs/acme/contacts/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/x-ndjson' },
    body: ndjson,
  });
  t.equal(imported.status, 200, await imported.text());
  await adminCall(url, 'PUT', '/admin/v1/orgs/acme/segments/everyone', { sql: "SELECT email_address AS email FROM profiles WHERE email_address LIKE 'user%'" });
  // Due this very minute in UTC (the org's zone): sent within a second of going live.
  const at = new Date().toISOString().slice(0, 16);
  await adminCall(url, 'POST', '/admin/v1/orgs/acme/flows', {
    id: 'launch', name: 'Launch', category: 'scheduled', audience: { segment: 'everyone' }, schedule: { at, timeZone: 'org' }, sendRatePerSecond: RATE,
    message: { channel: 'webhook', url: receiver.url, template: { body: { to: '{{ contact.email_address }}' } } },
  });
  await adminCall(url, 'POST', '/admin/v1/orgs/acme/flows/launch/start');
  await waitFor(async () => killed !== undefined, 30_000);
  await killed;
  const before = receiver.received.length;

  const second = await spawnServer(t, env);
  const done = await waitFor(async () => {
    const [occurrence] = await occurrences(second.url);
    return occurrence?.status === 'done' ? occurrence : undefined;
  }, 60_000);
  t.match(done, { members: MEMBERS, decided: MEMBERS, outcomes: { sent: MEMBERS } }, 'every member decided, once, sent');
  await waitFor(async () => new Set(receiver.received.map((r) => JSON.parse(r.body).to)).size === MEMBERS, 30_000);
  await second.stop();

  const counts = new Map<string, number>();
  for (const r of receiver.received) counts.set(String(r.headers['webhook-id']), (counts.get(String(r.headers['webhook-id'])) ?? 0) + 1);
  const twice = [...counts.values()].filter((n) => n === 2).length;
  t.comment(`${before} arrived before the kill; ${twice} webhook-ids arrived twice`);
  t.equal(counts.size, MEMBERS, 'one webhook-id per contact');
  t.ok(twice <= SEND_CONCURRENCY, `${twice} repeated ≤ ${SEND_CONCURRENCY} (the sends in flight at the kill)`);
  t.ok([...counts.values()].every((n) => n <= 2), 'none three times');

  const instance = await DuckDBInstance.create(`${dataDir}/orgs/acme.duckdb`);
  const connection = await instance.connect();
  const rows = async (sql: string) => (await connection.runAndReadAll(sql)).getRowObjects();
  t.same(await rows("SELECT count(*)::INTEGER AS n, count(DISTINCT email)::INTEGER AS contacts FROM flow_decisions WHERE flow_id = 'launch'"), [{ n: MEMBERS, contacts: MEMBERS }], 'one decision per contact');
  t.same(await rows("SELECT count(*)::INTEGER AS n, count(DISTINCT email)::INTEGER AS contacts FROM flow_sends WHERE flow_id = 'launch' AND status = 'delivered'"), [{ n: MEMBERS, contacts: MEMBERS }], 'one send per contact, delivered');
  t.same(await rows('SELECT count(*)::INTEGER AS n FROM flow_occurrence_members'), [{ n: 0 }], 'no member left');
  connection.closeSync();
  instance.closeSync();
});
