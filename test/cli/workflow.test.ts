/**
 * Day one from the terminal (issue 28): an org, events, a trigger written, validated, previewed and saved,
 * a segment, a flow created from a file, previewed, simulated for one contact, started, run and watched —
 * every step a `audiencectl` process against a real app and a real webhook receiver, with the admin key
 * from AUDIENCE_ADMIN_KEY. Exit codes tell refused (1), not found (3) apart; tables align.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ADMIN_KEY, customEvent, startTestApp, STORAGE_PROCESS, waitFor } from '../helpers/app.js';
import { type CliRun, runCli } from '../helpers/cli.js';
import { BOOKING_TRIGGER } from '../helpers/flows.js';
import { startReceiver } from '../helpers/http-receiver.js';

type Run = CliRun;

function cli(url: string, args: string[]): Promise<Run> {
  // The key comes from AUDIENCE_ADMIN_KEY only: no ADMIN_KEY, and a DATA_DIR with no admin.key.
  const env: NodeJS.ProcessEnv = { ...process.env, AUDIENCE_URL: url, AUDIENCE_ADMIN_KEY: ADMIN_KEY, DATA_DIR: '/nonexistent' };
  delete env.ADMIN_KEY;
  return runCli(args, env);
}

const json = (run: Run): any => JSON.parse(run.stdout);
const problem = (run: Run): string => (JSON.parse(run.stderr) as { code: string }).code;

t.test('org, events, trigger, segment and flow from the CLI alone', async (t) => {
  const h = await startTestApp(t, { config: { ...STORAGE_PROCESS } });
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  // Not t.testdir(): the app's DATA_DIR is that directory, and asking for it again empties it.
  const dir = mkdtempSync(join(tmpdir(), 'audiencectl-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const ok = async (args: string[]) => {
    const run = await cli(url, args);
    t.equal(run.code, 0, `${args.slice(0, 2).join(' ')}: ${run.stderr}`);
    return run;
  };

  const created = json(await ok(['org', 'create', '--slug', 'acme', '--name', 'Acme', '--audience-api']));
  const cred = created.credentials.production as { partnerId: string; partnerSecret: string };
  t.equal((await cli(url, ['org', 'update', 'acme', '--rate-limit', '-5'])).code, 1, '--rate-limit -5 reaches the service, which refuses it');
  t.equal(problem(await cli(url, ['org', 'update', 'acme', '--rate-limit', '-5'])), 'invalid_request');

  const book = async (round: string) => {
    for (const email of ['ada@example.com', 'bob@example.com']) {
      const res = await h.collect(customEvent(cred, { messageId: `${round}-${email}`, clientId: `c-${email}`, traits: { email } }));
      t.equal(res.statusCode, 200);
    }
    await h.compacted();
  };
  await book('before');

  const arrived = json(await ok(['events', 'activity', 'acme']));
  t.same(arrived.stored.total, 2, 'events activity: the two bookings');
  t.same(arrived.types.map((type: { eventType: string }) => type.eventType), ['custom_booking_completed']);
  const perHour = (await ok(['events', 'activity', 'acme', '--table'])).stdout;
  t.match(perHour, /^TIME +STORED +QUARANTINED +CUSTOM_BOOKING_COMPLETED$/m, 'as a table: a column per series');
  const anonymous = await h.collect(customEvent(cred, { messageId: 'anon-1', clientId: 'visitor', traits: {} }));
  t.equal(anonymous.statusCode, 200);
  await h.compacted();
  t.match(json(await ok(['events', 'pending', 'acme'])), { count: 1, events: [{ messageId: 'anon-1', clientId: 'visitor', eventType: 'custom_booking_completed' }] }, 'events pending: the one held');
  const types = await ok(['events', 'types', 'acme', '--table']);
  const [header, row] = types.stdout.split('\n');
  t.match(header, /^EVENTTYPE +/, 'a table: upper-case column names');
  t.equal(row!.indexOf('custom_booking_completed'), 0, 'a row per type');
  t.equal(header!.search(/ [A-Z]/) < row!.length, true, 'columns aligned');

  // A trigger: refused SQL is explained and nothing is saved; good SQL validates, previews, saves.
  const bad = join(dir, 'bad.sql');
  writeFileSync(bad, 'SELECT * FROM stolen.main.events');
  const refused = await cli(url, ['trigger', 'validate', 'acme', 'booking_completed', '--sql', bad]);
  t.equal(refused.code, 1, 'invalid SQL: exit 1');
  t.equal(problem(refused), 'invalid_trigger');
  const sql = join(dir, 'booking_completed.sql');
  writeFileSync(sql, BOOKING_TRIGGER);
  t.same(json(await ok(['trigger', 'validate', 'acme', 'booking_completed', '--sql', sql])).valid, true);
  t.equal((await cli(url, ['trigger', 'get', 'acme', 'booking_completed'])).code, 3, 'validate saved nothing: not found');
  const preview = json(await ok(['trigger', 'preview', 'acme', 'booking_completed', '--sql', sql, '--limit', '5']));
  t.equal(preview.count, 2, 'preview: the two events');
  t.match(json(await ok(['trigger', 'put', 'acme', 'booking_completed', '--sql', sql])), { name: 'booking_completed', version: 1, status: 'live' });
  t.match(json(await ok(['trigger', 'list', 'acme'])), { triggers: [{ name: 'booking_completed', status: 'live' }] });
  t.match(json(await ok(['trigger', 'get', 'acme', 'booking_completed'])), { liveVersion: 1 });
  t.match(json(await ok(['trigger', 'versions', 'acme', 'booking_completed'])), { versions: [{ version: 1, status: 'valid' }] });

  const segment = join(dir, 'ada.sql');
  writeFileSync(segment, "SELECT email_address AS email FROM profiles WHERE email_address = 'ada@example.com'");
  t.match(json(await ok(['segment', 'put', 'acme', 'ada', '--sql', segment])), { status: 'live' });
  t.match(json(await ok(['segment', 'preview', 'acme', 'ada'])), { count: 1, rows: [{ email: 'ada@example.com' }] });
  t.match(json(await ok(['segment', 'list', 'acme'])), { segments: [{ name: 'ada' }] });
  t.match(json(await ok(['segment', 'get', 'acme', 'ada'])), { liveVersion: 1 });
  t.match(json(await ok(['segment', 'versions', 'acme', 'ada'])), { versions: [{ version: 1 }] });

  // A flow from a file, tried on one contact, started, run, watched.
  const flowFile = join(dir, 'welcome.json');
  const definition = {
    id: 'welcome',
    name: 'Welcome',
    category: 'triggered',
    entry: 'when_contact_triggers_event',
    trigger: 'booking_completed',
    segmentFilter: { segment: 'ada', mode: 'include' },
    scheduleSeconds: 3600,
    realTime: false,
    message: { channel: 'webhook', url: receiver.url, template: { body: { hello: '{{ contact.email_address }}' } } },
  };
  writeFileSync(flowFile, JSON.stringify(definition));
  t.match(json(await ok(['flow', 'create', 'acme', '--file', flowFile])), { definition: { id: 'welcome' }, status: 'draft' });
  t.match(json(await ok(['flow', 'list', 'acme'])), { flows: [{ definition: { id: 'welcome' } }] });
  const rendered = json(await ok(['flow', 'preview', 'acme', 'welcome']));
  t.match(rendered.rendered, { body: { hello: /@example\.com$/ } }, 'flow preview renders the message');
  const simulated = json(await ok(['flow', 'simulate', 'acme', 'welcome', '--identity', 'email:ada@example.com']));
  t.ok(JSON.stringify(simulated).includes('ada@example.com'), 'flow simulate answers for that contact');
  t.equal(receiver.received.length, 0, 'preview and simulate sent nothing');
  t.match(json(await ok(['flow', 'start', 'acme', 'welcome'])), { status: 'live' });
  await book('after'); // a flow reads the events after it went live
  await ok(['flow', 'run', 'acme', 'welcome']);
  await waitFor(() => receiver.received.length >= 1, { timeoutMs: 5_000, what: 'the webhook' });
  t.equal(receiver.received.length, 1, 'one webhook: the segment kept only Ada');
  t.match(JSON.parse(receiver.received[0]!.body), { hello: 'ada@example.com' });
  let sends: Array<{ status: string }> = [];
  await waitFor(async () => {
    sends = json(await ok(['flow', 'sends', 'acme', 'welcome'])).sends;
    return sends[0]?.status === 'delivered';
  }, { timeoutMs: 15_000, intervalMs: 100, what: 'the send recorded as delivered' });
  t.match(sends, [{ status: 'delivered' }], 'flow sends shows it delivered');
  t.match(json(await ok(['flow', 'decisions', 'acme', 'welcome'])).decisions.length, 2, 'both rows decided (one skipped by the segment)');
  const activity = json(await ok(['flow', 'activity', 'acme', 'welcome']));
  t.same(activity.funnel, { entered: 2, decided: 1, sent: 1, delivered: 1, skipped: [{ reason: 'excluded_by_segment', atStep: false, count: 1 }] }, 'flow activity: the funnel');
  t.equal(activity.bucket, 'hour', 'the last 24 hours by the hour');
  const funnelTable = (await ok(['flow', 'activity', 'acme', 'welcome', '--table', '--bucket', 'minute', '--from', new Date(Date.now() - 5 * 60_000).toISOString()])).stdout;
  t.match(funnelTable, /^funnel\.skipped +excluded_by_segment 1$/m, 'as a table: the funnel above');
  t.match(funnelTable, /^TIME +DELIVERED$/m, 'and a row per minute, a column per status');
  t.equal(funnelTable.split('\n').filter((line) => /^\d{4}-/.test(line)).length, 6, 'five minutes and the one under way');
  const wrongBucket = await cli(url, ['flow', 'activity', 'acme', 'welcome', '--bucket', 'week']);
  t.equal(wrongBucket.code, 1, 'a bucket the service does not know: refused');
  t.equal(problem(wrongBucket), 'invalid_request');
  t.match(json(await ok(['flow', 'pause', 'acme', 'welcome'])), { status: 'paused' });
  writeFileSync(flowFile, JSON.stringify({ ...definition, name: 'Welcome, renamed' }));
  t.match(json(await ok(['flow', 'put', 'acme', 'welcome', '--file', flowFile])), { definition: { name: 'Welcome, renamed' } });
  t.match(json(await ok(['flow', 'get', 'acme', 'welcome'])), { definition: { name: 'Welcome, renamed' }, status: 'paused' });
  t.equal((await cli(url, ['flow', 'get', 'acme', 'nope'])).code, 3, 'an unknown flow: exit 3');

  // Deleting: the segment the flow names is refused, naming it; the flow archived, then the segment goes.
  const inUse = await cli(url, ['segment', 'delete', 'acme', 'ada']);
  t.equal(problem(inUse), 'trigger_in_use', 'a segment a flow names: refused');
  t.match(json(await ok(['flow', 'delete', 'acme', 'welcome'])), { flow: { status: 'archived' }, stopped: { sends: 0 } });
  t.same(json(await ok(['flow', 'list', 'acme'])).flows, [], 'archived flows are not listed');
  t.match(json(await ok(['flow', 'list', 'acme', '--archived'])), { flows: [{ definition: { id: 'welcome' }, status: 'archived' }] });
  t.match(json(await ok(['segment', 'delete', 'acme', 'ada'])), { name: 'ada', deleted: true, version: 2 });
  t.equal((await cli(url, ['segment', 'get', 'acme', 'ada'])).code, 3, 'a deleted segment: not found');

  t.match(json(await ok(['contact', 'lookup', 'acme', '--identity', 'email:ada@example.com'])), { contact: { email_address: 'ada@example.com' } });
  t.match(json(await ok(['webhook-secret', 'acme'])), { secret: /\S/ });
  const tokens = await ok(['token', 'create', 'acme', '--created-by', 'ops@example.com']);
  t.match(json(tokens).token, /\S/);
  const table = await ok(['token', 'list', 'acme', '--table']);
  t.notMatch(table.stdout, new RegExp(json(tokens).token as string), 'a token list never shows the secret');
});
