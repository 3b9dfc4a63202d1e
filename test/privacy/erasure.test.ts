/**
 * Erasure and suppression of one contact (issue 24): every row of the contact goes, in every table and
 * the serving index; its events still in the log never come back (re-read after a restart with the
 * org's position rewound); with suppress, its future events are kept out and no flow messages it. Real
 * app, real DuckDB files; hostile requests.
 */
import { DuckDBInstance } from '@duckdb/node-api';
import t, { type Test } from 'tap';
import { createContext } from '../../src/core/context.js';
import { AppError } from '../../src/core/errors.js';
import { LogUnavailableError } from '../../src/events/log/types.js';
import { emailHash } from '../../src/events/profiles/profile-index.js';
import { Erasures } from '../../src/privacy/erasure.js';
import { book, ADMIN_KEY, customEvent, startTestApp, STORAGE_PROCESS, type TestApp, waitFor } from '../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../helpers/flows.js';

type Cred = { partnerId: string; partnerSecret: string };
const ADA = 'ada@example.com';
const BOB = 'bob@example.com';
const OUTBOX = { channel: 'outbox', template: { text: 'hi {{ contact.email_address }}' } };

async function erase(h: TestApp, identity: string, suppress?: boolean, org = 'acme') {
  const res = await h.admin('POST', `/admin/v1/orgs/${org}/contacts/erase`, suppress === undefined ? { identity } : { identity, suppress });
  t.equal(res.statusCode, 202, res.body);
  const receipt = res.json() as { id: string; status: string };
  return waitFor(async () => {
    const got = (await h.admin('GET', `/admin/v1/orgs/${org}/erasures/${receipt.id}`)).json();
    return got.status === 'done' ? (got as { id: string; status: string; emailHash: string; removed: Record<string, number | undefined> }) : undefined;
  }, 20_000);
}

/** Rows naming `email` in every table of the org's database that can hold a contact. */
async function rowsOf(h: TestApp, email: string) {
  const count = async (sql: string) => Number((await h.db().all<{ n: bigint }>(`SELECT count(*) AS n FROM ${sql}`, [email]))[0]!.n);
  return {
    events: await count('events WHERE email = $1'),
    identities: await count('identify_mappings WHERE email = $1'),
    activity: await count('contact_activity WHERE email = $1'),
    orders: await count('contact_orders WHERE email = $1'),
    contacts: await count('contacts WHERE email = $1'),
    consent: await count('contact_consent WHERE email = $1'),
    sends: await count('flow_sends WHERE email = $1'),
    decisions: await count('flow_decisions WHERE email = $1'),
    quarantine: await count('quarantine WHERE contains(lower(raw::VARCHAR), $1)'),
    erasures: await count('erasures WHERE email = $1'),
  };
}

const lookup = (h: TestApp, token: string, identity: string) =>
  h.app.inject({ url: `/audience/v2/contacts?identity=${encodeURIComponent(identity)}`, headers: { authorization: `Bearer ${token}` } });

async function token(h: TestApp): Promise<string> {
  const res = await h.admin('POST', '/admin/v1/orgs/acme/tokens', { createdBy: 'ops@example.com' });
  return res.json().token as string;
}

/** Ada and Bob with events, an identity mapping, a purchase, an import, consent, a quarantined event, sends and decisions. */
async function populated(t: Test, options: Parameters<typeof startTestApp>[1] = {}) {
  const h = await startTestApp(t, options);
  const cred = (await h.createOrg('acme', { audienceApi: true })).production;
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  await startFlow(h, { id: 'f1', message: OUTBOX });
  for (const email of [ADA, BOB]) {
    const base = { partnerId: cred.partnerId, partnerSecret: cred.partnerSecret, clientId: `anon-${email}`, sentAt: Date.now() };
    t.equal((await h.collect({ ...base, type: 'identify', messageId: `id-${email}`, userId: `u-${email}`, traits: { email, firstName: 'X' } })).statusCode, 200);
    t.equal((await h.collect(customEvent(cred, { messageId: `anon-${email}`, clientId: `anon-${email}`, traits: {} }))).statusCode, 200);
    t.equal((await book(h, cred, email, `book-${email}`, { traits: { email, subscriptions: { all: 'subscribed' } } })).statusCode, 200);
    const purchase = { transactionId: `t-${email}`, revenue: 10, cartItems: [{ productId: 'p', variant: 'v', quantity: 1 }] };
    t.equal((await h.collect({ ...base, type: 'track', event: 'complete_transaction', messageId: `buy-${email}`, traits: { email }, properties: purchase })).statusCode, 200);
    // Refused at compaction? No: collect refuses a bad event at once, and quarantines it with its body.
    await h.collect(customEvent(cred, { messageId: `bad-${email}`, traits: { email }, properties: { eventName: 7 } }));
  }
  const csv = `email_address,first_name,tier\n${ADA},Ada,gold\n${BOB},Bob,silver\n`;
  const imported = await h.app.inject({ method: 'POST', url: '/admin/v1/orgs/acme/contacts/import', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'text/csv' }, payload: csv });
  t.equal(imported.statusCode, 200, imported.body);
  t.equal((await h.admin('PUT', '/admin/v1/orgs/acme/contacts/consent', { identity: `email:${ADA}`, topic: 'all', status: 'subscribed' })).statusCode, 200);
  t.equal((await h.admin('PUT', '/admin/v1/orgs/acme/contacts/consent', { identity: `email:${BOB}`, topic: 'all', status: 'subscribed' })).statusCode, 200);
  const run = await runFlow(h, 'f1');
  // Each contact's booking and its anonymous booking (identified by its device).
  t.same(run.decisions.map((d) => d.outcome), ['sent', 'sent', 'sent', 'sent']);
  return { h, cred };
}

t.test('an erasure removes every row of the contact and its profile; another contact keeps all of theirs', async (t) => {
  const { h, cred } = await populated(t);
  // Past the 5 s between folds, another contact's event folds every contact's activity and orders.
  await new Promise((r) => setTimeout(r, 5_500));
  await book(h, cred, 'carol@example.com', 'fold');
  await h.compacted();
  const before = { ada: await rowsOf(h, ADA), bob: await rowsOf(h, BOB) };
  for (const [kind, n] of Object.entries(before.ada)) if (kind !== 'erasures') t.ok(n > 0, `ada has ${kind} before (${n})`);
  const bearer = await token(h);
  t.equal((await lookup(h, bearer, `email:${ADA}`)).statusCode, 200);

  const done = await erase(h, `user_id:u-${ADA}`);
  t.match(done, { status: 'done', emailHash: emailHash(ADA), suppress: false, doneAt: String });
  t.ok(done.removed.events! >= 3 && done.removed.sends === 2 && done.removed.decisions === 2 && done.removed.importedContacts === 1, JSON.stringify(done.removed));
  // The address or its domain (not just "ada": the hash's and the id's hex digits may spell it).
  t.notOk(/ada@|example\.com/.test(JSON.stringify(done)), 'the receipt holds no personal data');

  t.same(await rowsOf(h, ADA), Object.fromEntries(Object.keys(before.ada).map((k) => [k, 0])), 'no row names ada');
  t.same(await rowsOf(h, BOB), before.bob, 'bob keeps every row');
  for (const identity of [`email:${ADA}`, `email-hash:${emailHash(ADA)}`, `user_id:u-${ADA}`]) {
    t.equal((await lookup(h, bearer, identity)).statusCode, 404, `Audience API: ${identity} not found`);
  }
  t.equal((await lookup(h, bearer, `email:${BOB}`)).statusCode, 200);
  t.equal((await h.admin('GET', `/admin/v1/orgs/acme/contacts?identity=email:${ADA}`)).statusCode, 404);
  const preview = await h.admin('POST', '/admin/v1/orgs/acme/triggers/x/preview', {
    sql: `SELECT identity, identity_type, ts, event_type, event_id, event_raw FROM event_triggers WHERE ts > {cursor_start_time} AND ts <= {cursor_end_time}`,
  });
  t.equal(preview.statusCode, 200, preview.body);
  t.notOk(preview.body.toLowerCase().includes('ada@'), 'no trigger row of ada');
  t.ok(preview.body.includes(BOB), 'bob is still there');
  const decisions = (await h.admin('GET', `/admin/v1/orgs/acme/flows/f1/decisions?identity=email:${ADA}`)).json().decisions;
  t.same(decisions, [], 'no decision of ada');
  const list = (await h.admin('GET', '/admin/v1/orgs/acme/erasures')).json().erasures as Array<{ id: string }>;
  t.same(list.map((e) => e.id), [done.id]);
  t.match(await h.metrics(), /audience_erasures_total\{suppress="false"\} 1/);
});

t.test('events acknowledged before the request never come back; after it, a contact that was not suppressed returns', async (t) => {
  // Org storage in its own process, as in production: compaction is asked over IPC to read the tombstone.
  const { h, cred } = await populated(t, { config: STORAGE_PROCESS });
  // Events of ada keep arriving while the erasure is asked for.
  let n = 0;
  let stop = false;
  const acked: string[] = [];
  const sending = (async () => {
    while (!stop) {
      const id = `during-${n++}`;
      if ((await book(h, cred, ADA, id)).statusCode === 200) acked.push(id);
    }
  })();
  await waitFor(async () => acked.length >= 20);
  const before = [...acked];
  const res = await h.admin('POST', '/admin/v1/orgs/acme/contacts/erase', { identity: `email:${ADA}` });
  t.equal(res.statusCode, 202);
  await new Promise((r) => setTimeout(r, 200));
  stop = true;
  await sending;
  await waitFor(async () => (await h.admin('GET', `/admin/v1/orgs/acme/erasures/${res.json().id}`)).json().status === 'done', 20_000);
  await h.compacted();
  const stored = new Set((await h.db().all<{ message_id: string }>('SELECT message_id FROM events WHERE email = $1', [ADA])).map((r) => r.message_id));
  t.same(before.filter((id) => stored.has(id)), [], `none of the ${before.length} events acknowledged before the request is stored`);
  t.equal(await h.app.profiles.find('acme', 'email', ADA)?.email_address, stored.size > 0 ? ADA : undefined, 'a profile only from events after the request');

  t.equal((await book(h, cred, ADA, 'after-done')).statusCode, 200);
  await h.compacted();
  t.equal((await h.db().all('SELECT 1 FROM events WHERE message_id = $1', ['after-done'])).length, 1, 'an event after the erasure is stored');
  t.equal(h.app.profiles.find('acme', 'email', ADA)?.email_address, ADA, 'and the contact has a profile again');
  t.equal((await h.db().all('SELECT 1 FROM events WHERE email = $1', [BOB])).length, 4, "bob's events untouched");
});

t.test("an erased contact's events still in the log are kept out when the log is read again after a restart", async (t) => {
  const dataDir = t.testdir();
  const first = await populated(t, { dataDir });
  await erase(first.h, `email:${ADA}`);
  // Anonymous events of ada's device wait for an identify; the one after the erasure does not release them.
  await first.h.close();

  // The org's position rewound to the first record: every record still in the log is read again.
  const instance = await DuckDBInstance.create(`${dataDir}/orgs/acme.duckdb`);
  const connection = await instance.connect();
  await connection.run("UPDATE log_cursor SET seq = 1 WHERE name = 'compactor'");
  connection.closeSync();
  instance.closeSync();

  const h = await startTestApp(t, { dataDir });
  await h.compacted();
  t.same(await rowsOf(h, ADA), { events: 0, identities: 0, activity: 0, orders: 0, contacts: 0, consent: 0, sends: 0, decisions: 0, quarantine: 0, erasures: 0 }, 'nothing of ada came back');
  t.equal((await h.db().all('SELECT 1 FROM events WHERE email = $1', [BOB])).length, 4, "bob's events once each (the replayed ones are repeats)");
  t.equal(h.app.profiles.find('acme', 'email', ADA), undefined);
  t.match(await h.metrics(), /audience_events_kept_out_total\{reason="erased"\} [1-9]/);
});

t.test('suppress: future events are kept out, imports leave it out, and no flow messages it, transactional included', async (t) => {
  const { h, cred } = await populated(t);
  const done = await erase(h, `email:${ADA}`, true);
  t.ok(done.removed.events! > 0);
  t.equal((await book(h, cred, ADA, 'after-suppress')).statusCode, 200, 'collect still acknowledges (the partner learns nothing)');
  t.equal((await h.collect({ partnerId: cred.partnerId, partnerSecret: cred.partnerSecret, sentAt: Date.now(), type: 'identify', messageId: 'id-again', clientId: 'new-device', traits: { email: ADA } })).statusCode, 200);
  t.equal((await h.collect(customEvent(cred, { messageId: 'anon-again', clientId: 'new-device', traits: {} }))).statusCode, 200);
  await h.compacted();
  t.equal((await rowsOf(h, ADA)).events, 0, 'kept out');
  t.equal((await h.db().all("SELECT 1 FROM identify_mappings WHERE client_id = 'new-device'")).length, 0, 'its identify maps nothing');
  t.match(await h.metrics(), /audience_events_kept_out_total\{reason="suppressed"\} [2-9]/);
  const csv = `email_address,first_name\n${ADA},Ada\ncarol@example.com,Carol\n`;
  await h.app.inject({ method: 'POST', url: '/admin/v1/orgs/acme/contacts/import', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'text/csv' }, payload: csv });
  t.equal((await rowsOf(h, ADA)).contacts, 0, 'an import leaves it out');
  t.equal((await rowsOf(h, 'carol@example.com')).contacts, 1);

  // A transactional flow whose trigger names ada whatever event fires it.
  await putQuery(h, 'triggers', 'names_ada', BOOKING_TRIGGER.replace('SELECT identity, identity_type,', `SELECT '${ADA}' AS identity, 'email' AS identity_type,`));
  await startFlow(h, { id: 'receipts', trigger: 'names_ada', transactional: true, message: OUTBOX });
  await book(h, cred, BOB, 'bob-books');
  const run = await runFlow(h, 'receipts');
  t.same(run.decisions.map((d) => [d.outcome, d.email]), [['suppressed', ADA]]);
  t.equal((await h.db().all('SELECT 1 FROM flow_sends WHERE email = $1', [ADA])).length, 0, 'nothing sent');
  t.match(await h.metrics(), /audience_flow_decisions_total\{outcome="suppressed"\} 1/);
});

t.test('an erasure left pending by a stopped process is finished at the next start', async (t) => {
  const dataDir = t.testdir();
  const first = await populated(t, { dataDir });
  await first.h.close();
  // What a crash right after the request leaves: the tombstone and the pending request, nothing deleted yet.
  const instance = await DuckDBInstance.create(`${dataDir}/orgs/acme.duckdb`);
  const connection = await instance.connect();
  const head = Number((await connection.runAndReadAll("SELECT seq FROM log_cursor WHERE name = 'compactor'")).getRows()[0]![0]);
  await connection.run(`INSERT INTO erased_contacts VALUES ('${emailHash(ADA)}', ${head}, false, now())`);
  await connection.run(`INSERT INTO erasures VALUES ('era_pending', '${emailHash(ADA)}', '${ADA}', false, ${head}, 'pending', now(), NULL, NULL)`);
  connection.closeSync();
  instance.closeSync();

  const h = await startTestApp(t, { dataDir });
  const receipt = await waitFor(async () => {
    const got = (await h.admin('GET', '/admin/v1/orgs/acme/erasures/era_pending')).json();
    return got.status === 'done' ? got : undefined;
  }, 20_000);
  t.ok(receipt.removed.events > 0);
  t.same(await rowsOf(h, ADA), { events: 0, identities: 0, activity: 0, orders: 0, contacts: 0, consent: 0, sends: 0, decisions: 0, quarantine: 0, erasures: 0 });
  t.equal(h.app.profiles.find('acme', 'email', ADA), undefined);
});

t.test('hostile requests: bad identities, members, ids, another org, no key', async (t) => {
  const h = await startTestApp(t);
  const acme = (await h.createOrg('acme')).production;
  await h.createOrg('beta');
  await book(h, acme, ADA, 'e1');
  await h.compacted();
  const post = (body: unknown, org = 'acme') => h.admin('POST', `/admin/v1/orgs/${org}/contacts/erase`, body);
  for (const [body, code] of <Array<[unknown, string]>>[
    [{ identity: 'ada@example.com' }, 'invalid_identity'],
    [{ identity: 'email:not-an-email' }, 'invalid_identity'],
    [{ identity: `email-hash:${'0'.repeat(64)}` }, 'contact_not_found'],
    [{ identity: 'user_id:nobody' }, 'contact_not_found'],
    [{ identity: `email:${ADA}`, suppress: 'yes' }, 'invalid_request'],
    [{ identity: `email:${ADA}`, dryRun: true }, 'invalid_request'],
    [{ identity: `email:${'a'.repeat(600)}@x.com` }, 'invalid_request'],
    [{}, 'invalid_request'],
    [[], 'invalid_request'],
  ]) {
    const res = await post(body);
    t.equal(res.json().code, code, JSON.stringify(body).slice(0, 80));
    t.ok(res.statusCode >= 400 && res.statusCode < 500);
  }
  t.match((await h.app.inject({ method: 'POST', url: '/admin/v1/orgs/acme/contacts/erase', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }, payload: '{"identity":"email:a@b.co","__proto__":{"suppress":true}}' })).json(), { code: 'invalid_json' });
  t.equal((await post({ identity: `email:${ADA}` }, 'nope')).statusCode, 404);
  t.equal((await h.app.inject({ method: 'POST', url: '/admin/v1/orgs/acme/contacts/erase', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ identity: `email:${ADA}` }) })).statusCode, 401);
  t.equal((await h.app.profiles.find('acme', 'email', ADA))?.email_address, ADA, 'nothing was erased by the refused requests');

  const done = await erase(h, `email:${ADA}`);
  const foreign = await h.admin('GET', `/admin/v1/orgs/beta/erasures/${done.id}`);
  t.match(foreign.json(), { status: 404, code: 'erasure_not_found' }, "another org's receipt is not found");
  t.equal((await h.admin('GET', `/admin/v1/orgs/acme/erasures/${'x'.repeat(65)}`)).statusCode, 400);
  t.equal((await h.admin('GET', "/admin/v1/orgs/acme/erasures/' OR 1=1 --")).json().code, 'erasure_not_found');
  t.same((await h.admin('GET', '/admin/v1/orgs/beta/erasures')).json().erasures, []);
  // Erasing one that is gone already is a receipt with nothing removed.
  const again = await erase(h, `email:${ADA}`);
  t.same(Object.values(again.removed).reduce((a, b) => a! + b!, 0), 0);
});

t.test('an erasure asked while the event log is out of reach records nothing and answers 503 log_unavailable', async (t) => {
  let orgsUsed = false;
  const erasures = new Erasures({
    orgs: new Proxy({} as never, { get: () => () => ((orgsUsed = true), {}) }),
    log: { headSeq: () => Promise.reject(new LogUnavailableError('NATS is not connected')) },
    compaction: undefined,
    materializer: { forget: async () => {}, refresh: async () => true },
    profilesSettled: async () => {},
    ctx: createContext(),
    metrics: { erasures: { inc: () => {} } } as never,
    logger: { error: () => {}, info: () => {} },
  });
  const refused = await erasures.request('acme', ADA, false).catch((error: unknown) => error);
  t.ok(refused instanceof AppError);
  t.match(refused, { code: 'log_unavailable', status: 503, extra: { headers: { 'Retry-After': '5' } } });
  t.notOk(orgsUsed, 'nothing written');
});
