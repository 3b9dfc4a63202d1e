/**
 * Deleting what a team made (issue 40): a flow is archived (it stops, what it did stays), a trigger or
 * segment is deleted (its file goes, a tombstone version stays) unless a flow names it. Against the real
 * app: real DuckDB, a real HTTP receiver, real files in QUERIES_DIR, a restart on the same DATA_DIR.
 */
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import t from 'tap';
import { ManualClock } from '../../../src/core/context.js';
import { SEND_CONCURRENCY } from '../../../src/reactions/flows/send/send-dispatcher.js';
import { book, customEvent, startTestApp, type TestApp, waitFor } from '../../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, startFlow } from '../../helpers/flows.js';
import { startReceiver } from '../../helpers/http-receiver.js';

const MINUTE = 60_000;
const CART_TRIGGER = BOOKING_TRIGGER.replace('custom_booking_completed', 'custom_cart_updated');
const outbox = (text: string) => ({ channel: 'outbox', template: { text, to: '{{ contact.email_address }}' } });

/** Texts the outbox channel sent for the org. */
function outboxTexts(h: TestApp, org: string): string[] {
  const file = join(h.dataDir, 'outbox', `${org}.jsonl`);
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { content: { text: string } }).content.text);
}

t.test('an archived flow stops: queued sends are never attempted, waiting entries leave, its history and id stay', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 5, 10, 12, 0));
  const h = await startTestApp(t, { clock });
  // The receiver holds every request until the test lets them go: SEND_CONCURRENCY in flight, the rest queued.
  const held: ServerResponse[] = [];
  const receiver = await startReceiver([(res) => void held.push(res)]);
  t.teardown(() => receiver.close());
  const creds = { acme: (await h.createOrg('acme')).production, beta: (await h.createOrg('beta')).production };
  for (const org of ['acme', 'beta'] as const) {
    await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER, org);
    await putQuery(h, 'triggers', 'cart_updated', CART_TRIGGER, org);
    await startFlow(h, { id: 'cart', trigger: 'cart_updated', steps: [{ wait: { seconds: 3600 } }, { message: outbox(`${org} later`) }] }, org);
  }
  await startFlow(h, { id: 'hook', message: { channel: 'webhook', url: receiver.url, template: { body: { hi: '{{ contact.email_address }}' } } } });

  const queued = SEND_CONCURRENCY + 4;
  for (let i = 0; i < queued; i++) await book(h, creds.acme, `b${i}@example.com`, `book-${i}`);
  for (const org of ['acme', 'beta'] as const) {
    for (let i = 0; i < 3; i++) {
      await h.collect(customEvent(creds[org], { messageId: `cart-${org}-${i}`, clientId: `c${i}`, sentAt: clock.now(), traits: { email: `c${i}@example.com` }, properties: { eventName: 'cart_updated', properties: {} } }));
    }
  }
  await h.compacted();
  await h.app.flowsRole!.runner!.run('acme', 'hook');
  // The cart flows' runs enter each contact into their steps: the first is a wait of an hour.
  for (const org of ['acme', 'beta']) t.equal((await h.app.flowsRole!.runner!.run(org, 'cart')).rows, 3);
  await waitFor(() => receiver.received.length === SEND_CONCURRENCY, { what: 'the first sends in flight at the receiver' });

  const archived = await h.admin('DELETE', '/admin/v1/orgs/acme/flows/hook');
  t.equal(archived.statusCode, 200, archived.body);
  t.match(archived.json(), { flow: { status: 'archived', definition: { id: 'hook' } }, stopped: { sends: queued, entries: 0, occurrences: 0 } }, 'every send not yet delivered is stopped');
  const cart = await h.admin('DELETE', '/admin/v1/orgs/acme/flows/cart');
  t.match(cart.json(), { flow: { status: 'archived' }, stopped: { sends: 0, entries: 3, occurrences: 0 } }, "acme's three waiting entries leave the flow");

  // The requests in flight end as they end; the queued ones are never attempted.
  for (const res of held) res.writeHead(204).end();
  await h.app.flowsRole!.dispatcher.idle();
  t.equal(receiver.received.length, SEND_CONCURRENCY, 'no send queued when the flow was archived reached the receiver');
  const sends = (await h.admin('GET', '/admin/v1/orgs/acme/flows/hook/sends?limit=100')).json().sends as Array<{ status: string }>;
  const count = (status: string) => sends.filter((s) => s.status === status).length;
  t.same([count('delivered'), count('cancelled'), sends.length], [SEND_CONCURRENCY, queued - SEND_CONCURRENCY, queued], 'history: the sends in flight delivered, the queued ones cancelled');

  // The wait ends: beta's entries go on, acme's left.
  clock.advance(61 * MINUTE);
  for (const org of ['acme', 'beta']) await h.app.flowsRole!.steps.pass(org);
  await h.app.flowsRole!.dispatcher.idle();
  t.same(outboxTexts(h, 'acme'), [], 'no step of the archived flow runs');
  t.same(outboxTexts(h, 'beta'), ['beta later', 'beta later', 'beta later'], "beta's flow of the same id goes on");

  // Nothing can bring it back; its id stays taken, with its history.
  const def = (await h.admin('GET', '/admin/v1/orgs/acme/flows/hook')).json().definition as Record<string, unknown>;
  for (const [method, path, body] of [
    ['POST', 'start', undefined],
    ['POST', 'pause', undefined],
    ['POST', 'run', undefined],
    ['PUT', '', def],
  ] as const) {
    const res = await h.admin(method, `/admin/v1/orgs/acme/flows/hook${path ? `/${path}` : ''}`, body);
    t.equal(res.json().code, 'flow_archived', `${method} ${path || 'definition'}: refused`);
  }
  t.match((await h.admin('POST', '/admin/v1/orgs/acme/flows', def)).json(), { code: 'flow_exists', detail: /archived/ }, 'the id stays taken');
  t.same((await h.admin('DELETE', '/admin/v1/orgs/acme/flows/hook')).json().stopped, { sends: 0, entries: 0, occurrences: 0 }, 'archiving again changes nothing');
  t.equal((await h.admin('DELETE', '/admin/v1/orgs/acme/flows/nope')).statusCode, 404);

  const ids = async (query: string) => ((await h.admin('GET', `/admin/v1/orgs/acme/flows${query}`)).json().flows as Array<{ definition: { id: string } }>).map((f) => f.definition.id).sort();
  t.same(await ids(''), [], 'the list leaves archived flows out');
  t.same(await ids('?archived=true'), ['cart', 'hook'], '?archived=true lists them');
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/flows?archived=yes')).statusCode, 400);

  // Another event: the archived flow never runs again, on its own or asked to.
  await book(h, creds.acme, 'late@example.com', 'book-late');
  await h.compacted();
  t.match(await h.app.flowsRole!.runner!.run('acme', 'hook'), { skipped: /archived/ });
  await h.app.flowsRole!.dispatcher.idle();
  t.equal(receiver.received.length, SEND_CONCURRENCY, 'nothing more reached the receiver');
});

t.test('a trigger or segment a flow names cannot be deleted; deleted, its file goes and a tombstone version stays', async (t) => {
  const h = await startTestApp(t);
  await h.createOrg('acme');
  await h.createOrg('beta');
  const queries = join(h.dataDir, 'queries');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER, 'beta');
  await putQuery(h, 'segments', 'vip', 'SELECT email_address AS email FROM profiles');
  await startFlow(h, { id: 'f1', segmentFilter: { segment: 'vip' }, message: outbox('x') });
  await startFlow(h, { id: 'f2', message: outbox('x') });

  const inUse = await h.admin('DELETE', '/admin/v1/orgs/acme/triggers/booking_completed');
  t.equal(inUse.statusCode, 409);
  t.match(inUse.json(), { code: 'trigger_in_use', flows: ['f1', 'f2'], detail: /f1, f2/ }, 'names every flow that uses it');
  t.match((await h.admin('DELETE', '/admin/v1/orgs/acme/segments/vip')).json(), { code: 'trigger_in_use', flows: ['f1'] });
  t.ok(existsSync(join(queries, 'acme', 'booking_completed.sql')), 'refused: the file stays');

  for (const id of ['f1', 'f2']) t.equal((await h.admin('DELETE', `/admin/v1/orgs/acme/flows/${id}`)).statusCode, 200);
  const deleted = await h.admin('DELETE', '/admin/v1/orgs/acme/triggers/booking_completed');
  t.equal(deleted.statusCode, 200, deleted.body);
  t.same(deleted.json(), { name: 'booking_completed', deleted: true, version: 2 });
  t.same((await h.admin('DELETE', '/admin/v1/orgs/acme/segments/vip')).json(), { name: 'vip', deleted: true, version: 2 });
  t.notOk(existsSync(join(queries, 'acme', 'booking_completed.sql')), 'the file is gone');
  t.notOk(existsSync(join(queries, 'acme', 'segments', 'vip.sql')), 'the segment file is gone');
  t.ok(existsSync(join(queries, 'beta', 'booking_completed.sql')), "beta's trigger of the same name stays");
  t.equal((await h.admin('GET', '/admin/v1/orgs/beta/triggers/booking_completed')).json().status, 'live');

  const gone = async (h: TestApp) => {
    t.equal((await h.admin('GET', '/admin/v1/orgs/acme/triggers/booking_completed')).statusCode, 404, 'GET: not found');
    t.same((await h.admin('GET', '/admin/v1/orgs/acme/triggers')).json().triggers, [], 'not listed');
    const versions = (await h.admin('GET', '/admin/v1/orgs/acme/triggers/booking_completed/versions')).json().versions as Array<{ version: number; status: string }>;
    t.same(versions.map((v) => [v.version, v.status]), [[2, 'deleted'], [1, 'valid']], 'its history stays, the tombstone on top');
    const flow = await h.admin('POST', '/admin/v1/orgs/acme/flows', { id: 'f3', name: 'x', category: 'triggered', entry: 'when_contact_triggers_event', trigger: 'booking_completed', message: outbox('x') });
    t.match(flow.json(), { code: 'invalid_flow', detail: /booking_completed does not exist/ }, 'no flow can name it now');
  };
  await gone(h);
  t.equal((await h.admin('DELETE', '/admin/v1/orgs/acme/triggers/booking_completed')).statusCode, 404, 'a second delete: not found');
  t.equal((await h.admin('DELETE', '/admin/v1/orgs/beta/segments/vip')).statusCode, 404, "beta never had acme's segment");

  // A restart reads the tombstone: nothing comes back.
  await h.close();
  const again = await startTestApp(t, { dataDir: h.dataDir });
  await again.app.storageRole!.triggers.scan();
  await gone(again);

  // Saved again, it is live from the next version; the file is the truth, as before.
  t.match(await putQuery(again, 'triggers', 'booking_completed', BOOKING_TRIGGER), { version: 3 });
  t.equal((await again.admin('GET', '/admin/v1/orgs/acme/triggers/booking_completed')).json().status, 'live');
});

t.test('a delete never reaches through a link, and a scan racing it never restores the file', async (t) => {
  const h = await startTestApp(t);
  await h.createOrg('acme');
  const queries = join(h.dataDir, 'queries');
  const outside = join(t.testdir(), 'outside');
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.sql'), 'SELECT 1');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);

  // A link in a trigger's place is removed, never what it points to.
  symlinkSync(join(outside, 'secret.sql'), join(queries, 'acme', 'evil.sql'));
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/triggers')).json().triggers.find((x: { name: string }) => x.name === 'evil')?.status, 'file_refused');
  t.same((await h.admin('DELETE', '/admin/v1/orgs/acme/triggers/evil')).json(), { name: 'evil', deleted: true, version: null });
  t.notOk(existsSync(join(queries, 'acme', 'evil.sql')), 'the link is gone');
  t.equal(readFileSync(join(outside, 'secret.sql'), 'utf8'), 'SELECT 1', 'its target is untouched');

  // The segments folder is a link: nothing under it is removed.
  writeFileSync(join(outside, 'vip.sql'), 'SELECT 1');
  symlinkSync(outside, join(queries, 'acme', 'segments'));
  const refused = await h.admin('DELETE', '/admin/v1/orgs/acme/segments/vip');
  t.match(refused.json(), { code: 'query_file_refused', detail: /symbolic link/ });
  t.ok(existsSync(join(outside, 'vip.sql')), 'the file behind the link stays');

  // Scans race deletes and saves: a file read before a delete is never committed after it.
  for (let round = 0; round < 5; round++) {
    await putQuery(h, 'triggers', 'booking_completed', `${BOOKING_TRIGGER} -- ${round}`);
    const scans = Array.from({ length: 4 }, () => h.app.storageRole!.triggers.scan());
    const res = await h.admin('DELETE', '/admin/v1/orgs/acme/triggers/booking_completed');
    await Promise.all(scans);
    t.equal(res.statusCode, 200, `round ${round}: deleted`);
    await h.app.storageRole!.triggers.scan();
    t.equal((await h.admin('GET', '/admin/v1/orgs/acme/triggers/booking_completed')).statusCode, 404, `round ${round}: still deleted after the scans`);
    t.notOk(existsSync(join(queries, 'acme', 'booking_completed.sql')), `round ${round}: no file`);
  }
});
