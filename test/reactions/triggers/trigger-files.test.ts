/** Trigger files are commits (SPEC 7): hot reload, refusal keeping the last good version, PUT, list, preview. */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { customEvent, startTestApp, waitFor } from '../../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../../helpers/flows.js';

const PAGE_TRIGGER = BOOKING_TRIGGER.replace('custom_booking_completed', 'custom_page_liked');

t.test('a changed file is live for the next run; an invalid change leaves the old version live', async (t) => {
  const h = await startTestApp(t);
  const acme = await h.createOrg('acme');
  const dir = join(h.dataDir, 'queries', 'acme');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'booking_completed.sql'), BOOKING_TRIGGER);
  await h.app.storageRole!.triggers.scan();
  const list = (await h.admin('GET', '/admin/v1/orgs/acme/triggers')).json().triggers;
  t.match(list, [{ name: 'booking_completed', status: 'live', liveVersion: 1, error: null }]);
  const v1 = list[0].liveHash;

  await startFlow(h, { id: 'f1', scheduleSeconds: 3600, realTime: false, message: { channel: 'outbox', template: { t: '{{ event.event_type }}' } } });
  await h.collect(customEvent(acme.production, { messageId: 'b1' }));
  await h.collect(customEvent(acme.production, { messageId: 'p1', properties: { eventName: 'page_liked', properties: {} } }));
  t.same((await runFlow(h, 'f1')).decisions.map((d) => d.eventId), ['b1']);

  writeFileSync(join(dir, 'booking_completed.sql'), PAGE_TRIGGER);
  // The watcher polls every second; wait for it rather than calling scan, to test the real path.
  await waitFor(async () => h.app.storageRole!.triggers.live('acme', 'trigger', 'booking_completed')?.version === 2, 5000);
  await h.collect(customEvent(acme.production, { messageId: 'b2' }));
  await h.collect(customEvent(acme.production, { messageId: 'p2', properties: { eventName: 'page_liked', properties: {} } }));
  t.same((await runFlow(h, 'f1')).decisions.map((d) => d.eventId), ['p2'], 'the next run uses the new version');

  writeFileSync(join(dir, 'booking_completed.sql'), 'SELECT * FROM main.events');
  await h.app.storageRole!.triggers.scan();
  const after = (await h.admin('GET', '/admin/v1/orgs/acme/triggers/booking_completed')).json();
  t.match(after, { status: 'live_previous_version', liveVersion: 2, latestVersion: 3, error: /relation main.events is not readable/ });
  await h.collect(customEvent(acme.production, { messageId: 'p3', properties: { eventName: 'page_liked', properties: {} } }));
  t.same((await runFlow(h, 'f1')).decisions.map((d) => d.eventId), ['p3'], 'version 2 stays live');

  const sends = (await h.admin('GET', '/admin/v1/orgs/acme/flows/f1/sends')).json().sends;
  const hashes = new Set(sends.map((s: { triggerHash: string }) => s.triggerHash));
  t.equal(hashes.size, 2, 'each send records the hash of the version that fired it');
  t.ok(hashes.has(v1));
  const versions = await h.db().all<{ version: number; status: string }>("SELECT version, status FROM trigger_versions WHERE name = 'booking_completed' ORDER BY version");
  t.same(versions.map((v) => [v.version, v.status]), [[1, 'valid'], [2, 'valid'], [3, 'invalid']]);
});

t.test('PUT writes the file or answers 422 with the reason; preview runs without sending', async (t) => {
  const h = await startTestApp(t);
  const acme = await h.createOrg('acme');
  const put = await h.admin('PUT', '/admin/v1/orgs/acme/triggers/booking_completed', { sql: BOOKING_TRIGGER });
  t.equal(put.statusCode, 200);
  t.match(put.json(), { name: 'booking_completed', version: 1, status: 'live' });
  t.equal(readFileSync(join(h.dataDir, 'queries', 'acme', 'booking_completed.sql'), 'utf8'), BOOKING_TRIGGER);

  const bad = await h.admin('PUT', '/admin/v1/orgs/acme/triggers/booking_completed', { sql: "SELECT * FROM read_csv('/etc/passwd')" });
  t.equal(bad.statusCode, 422);
  t.match(bad.json(), { code: 'invalid_trigger', reason: /table function read_csv is not allowed/, liveVersion: 1, version: 2 });
  t.equal(readFileSync(join(h.dataDir, 'queries', 'acme', 'booking_completed.sql'), 'utf8'), BOOKING_TRIGGER, 'the file keeps the live version');

  await h.collect(customEvent(acme.production, { messageId: 'b1' }));
  await h.compacted();
  const preview = await h.admin('POST', '/admin/v1/orgs/acme/triggers/booking_completed/preview', {});
  t.equal(preview.statusCode, 200);
  t.match(preview.json(), { version: 1, count: 1, rows: [{ identity: 'ada@example.com', event_id: 'b1', event_raw: { messageId: 'b1' } }] });
  const adHoc = await h.admin('POST', '/admin/v1/orgs/acme/triggers/booking_completed/preview', { sql: PAGE_TRIGGER });
  t.match(adHoc.json(), { version: null, count: 0, rows: [] });
  const refused = await h.admin('POST', '/admin/v1/orgs/acme/triggers/booking_completed/preview', { sql: 'SELECT 1; SELECT 2' });
  t.equal(refused.statusCode, 422);
  t.equal(refused.json().code, 'invalid_trigger');
  const missing = await h.admin('POST', '/admin/v1/orgs/acme/triggers/nope/preview', {});
  t.equal(missing.statusCode, 404);
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/flows')).json().flows.length, 0);
  t.equal(await h.db().all('SELECT * FROM flow_sends').then((r) => r.length), 0, 'nothing sent');
});

t.test('trigger SQL of one org cannot name another org', async (t) => {
  const h = await startTestApp(t);
  await h.createOrg('acme');
  await h.createOrg('beta');
  const res = await h.admin('PUT', '/admin/v1/orgs/acme/triggers/spy', { sql: BOOKING_TRIGGER.replace('FROM event_triggers', 'FROM beta.event_triggers') });
  t.equal(res.statusCode, 422);
  t.match(res.json().reason, /belongs to another org/);
  const slug = await h.admin('POST', '/admin/v1/orgs', { slug: 'main', name: 'Main' });
  t.equal(slug.statusCode, 400, 'a slug that is a DuckDB schema name is refused');
});

t.test('segments come from files too and must return email', async (t) => {
  const h = await startTestApp(t);
  await h.createOrg('acme');
  await putQuery(h, 'segments', 'vip', 'SELECT email_address AS email FROM profiles WHERE total_lifetime_value > 100');
  const bad = await h.admin('PUT', '/admin/v1/orgs/acme/segments/bad', { sql: 'SELECT first_name FROM profiles' });
  t.equal(bad.statusCode, 422);
  t.match(bad.json().reason, /segment returns a column named email/);
  t.match((await h.admin('GET', '/admin/v1/orgs/acme/segments')).json().segments, [{ name: 'bad', status: 'invalid' }, { name: 'vip', status: 'live' }]);
});

t.test('a file saved a moment ago is what a flow created or a preview made right after uses', async (t) => {
  const h = await startTestApp(t);
  await h.createOrg('acme');
  const dir = join(h.dataDir, 'queries', 'acme');
  mkdirSync(join(dir, 'segments'), { recursive: true });
  writeFileSync(join(dir, 'booking_completed.sql'), BOOKING_TRIGGER);
  writeFileSync(join(dir, 'segments', 'vip.sql'), 'SELECT email_address AS email FROM profiles');
  // No scan and no wait for the poll: the flow names both files at once.
  const created = await h.admin('POST', '/admin/v1/orgs/acme/flows', {
    id: 'f1',
    name: 'Booking follow-up',
    category: 'triggered',
    entry: 'when_contact_triggers_event',
    trigger: 'booking_completed',
    segmentFilter: { segment: 'vip' },
    message: { channel: 'outbox', template: { t: 'x' } },
  });
  t.equal(created.statusCode, 201, created.body);
  writeFileSync(join(dir, 'booking_completed.sql'), PAGE_TRIGGER);
  const preview = await h.admin('POST', '/admin/v1/orgs/acme/triggers/booking_completed/preview', {});
  t.equal(preview.statusCode, 200);
  t.equal(preview.json().version, 2, 'the preview runs the file as saved');
  t.equal(h.app.storageRole!.triggers.live('acme', 'trigger', 'booking_completed')?.sql, PAGE_TRIGGER);
});
