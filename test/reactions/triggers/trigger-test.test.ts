/**
 * Issue 26, part 4: `audiencectl trigger test` — a trigger's SQL over fixture events in an in-memory
 * database, no service, exit 0 / 1 with a readable diff / 2 for unusable input. The CLI is spawned as a
 * user runs it (on the repo's example triggers in docs/examples/triggers, and on broken copies of them);
 * the comparison's finer points run in this process.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ADMIN_KEY, startTestApp } from '../../helpers/app.js';
import { type CliRun, runCli } from '../../helpers/cli.js';
import { ROOT } from '../../helpers/entry.js';
import { putQuery } from '../../helpers/flows.js';
import { parseExpected, ExpectedRefused } from '../../../src/reactions/triggers/expected-rows.js';
import { FixtureRefused } from '../../../src/reactions/triggers/fixture-org.js';
import { runTriggerTest } from '../../../src/reactions/triggers/trigger-test.js';

const EXAMPLES = join(ROOT, 'docs/examples/triggers');
const FIXTURE = readFileSync(join(EXAMPLES, 'tests/bookings.jsonl'), 'utf8');
const BOOKING_SQL = readFileSync(join(EXAMPLES, 'queries/acme/booking_completed.sql'), 'utf8');

/** In the team's folder, not the repo's. */
const cli = (cwd: string, args: string[], env: Record<string, string> = {}): Promise<CliRun> => runCli(args, { ...process.env, ...env }, cwd);

t.test('the repo example triggers pass their tests, from their own folder', async (t) => {
  const [booking, repeat] = await Promise.all(
    ['booking_completed', 'repeat_booking'].map((trigger) =>
      cli(EXAMPLES, ['trigger', 'test', 'acme', trigger, '--events', 'tests/bookings.jsonl', '--expect', `tests/${trigger}.expected.json`]),
    ),
  );
  t.equal(booking!.code, 0, booking!.stdout + booking!.stderr);
  t.equal(
    booking!.stdout,
    'ok acme/booking_completed: 4 rows on identity, event_id, city ' +
      '(7 events stored, 1 waiting for an identify (not in event_triggers), 1 duplicate dropped; window: every fixture event)\n',
  );
  t.equal(booking!.stderr, '');
  t.equal(repeat!.code, 0, repeat!.stdout + repeat!.stderr);
  t.match(repeat!.stdout, /^ok acme\/repeat_booking: 1 row on identity, event_id, ts /);
});

t.test('a difference exits 1 with the rows missing and unexpected; a refused query exits 1 with the reason', async (t) => {
  const dir = t.testdir({
    'wrong.json': JSON.stringify([
      { identity: 'ada@example.com', event_id: 'm-ada-1' },
      { identity: 'grace@example.com', event_id: 'm-grace-1' },
      { identity: 'linus@example.com', event_id: 'm-linus-1' },
      { identity: 'bob@example.com', event_id: 'm-bob-1' },
    ]),
    'shifted.sql': BOOKING_SQL.replace('ts > {cursor_start_time}', 'ts > {cursor_start_time} - INTERVAL 1 HOUR'),
  });
  const args = ['--events', join(EXAMPLES, 'tests/bookings.jsonl'), '--sql', join(EXAMPLES, 'queries/acme/booking_completed.sql')];
  const [wrong, shifted, early] = await Promise.all([
    cli(dir, ['trigger', 'test', 'acme', 'booking_completed', ...args, '--expect', 'wrong.json']),
    cli(dir, ['trigger', 'test', 'acme', 'booking_completed', '--events', join(EXAMPLES, 'tests/bookings.jsonl'), '--sql', 'shifted.sql', '--expect', 'wrong.json']),
    // Linus's booking waits for his identify (10:10) and is visible from then: outside a window ending at 10:05.
    cli(dir, ['trigger', 'test', 'acme', 'booking_completed', ...args, '--expect', join(EXAMPLES, 'tests/booking_completed.expected.json'), '--to', '2026-01-01T10:05:00Z']),
  ]);
  t.equal(wrong!.code, 1);
  t.equal(
    wrong!.stdout,
    [
      'FAIL acme/booking_completed: 4 rows on identity, event_id: 1 missing, 1 unexpected',
      '- {"event_id":"m-bob-1","identity":"bob@example.com"}    (expected, not returned)',
      '+ {"event_id":"m-ada-2","identity":"ada@example.com"}    (returned, not expected)',
      '  (7 events stored, 1 waiting for an identify (not in event_triggers), 1 duplicate dropped; window: every fixture event)',
      '',
    ].join('\n'),
  );
  t.equal(shifted!.code, 1);
  t.match(shifted!.stdout, /^FAIL acme\/booking_completed: the service refuses this SQL \(422 invalid_trigger\): \{cursor_start_time\} is arithmetic \(-\) on a window placeholder/);
  t.match(shifted!.stdout, '{ "wait": { "seconds": 3600 } }');
  t.equal(early!.code, 1);
  t.match(early!.stdout, /^FAIL acme\/booking_completed: 2 rows on identity, event_id, city: 2 missing\n/);
  t.match(early!.stdout, '- {"city":"Faro","event_id":"m-linus-1","identity":"linus@example.com"}');
  t.match(early!.stdout, 'window (1970-01-01T00:00:00.000000Z, 2026-01-01T10:05:00.000000Z]');
});

t.test('unusable input exits 2 with one line naming it', async (t) => {
  const dir = t.testdir({
    'bad-email.jsonl': FIXTURE + '{"clientId": "c-x", "sentAt": 1767261600000, "type": "identify", "traits": {"email": "not an address"}}\n',
    'not-json.jsonl': '{"clientId": \n',
    'mixed.json': JSON.stringify([{ identity: 'a' }, { event_id: 'b' }]),
    'ok.json': '[]',
  });
  const sql = ['--sql', join(EXAMPLES, 'queries/acme/booking_completed.sql')];
  const runs = await Promise.all([
    cli(dir, ['trigger', 'test', 'acme', 'booking_completed', ...sql, '--expect', 'ok.json']),
    cli(dir, ['trigger', 'test', 'acme', 'booking_completed', ...sql, '--events', 'bad-email.jsonl', '--expect', 'ok.json']),
    cli(dir, ['trigger', 'test', 'acme', 'booking_completed', ...sql, '--events', 'not-json.jsonl', '--expect', 'ok.json']),
    cli(dir, ['trigger', 'test', 'acme', 'booking_completed', ...sql, '--events', 'bad-email.jsonl', '--expect', 'mixed.json']),
    cli(dir, ['trigger', 'test', 'acme', 'booking_completed', '--events', 'bad-email.jsonl', '--expect', 'ok.json']),
    cli(dir, ['trigger', 'test', 'acme', 'booking_completed', ...sql, '--events', 'x.jsonl', '--expect', 'ok.json', '--from', 'yesterday']),
  ]);
  const expected = [
    'audiencectl: trigger test needs --events fixture.jsonl and --expect expected.json (see audiencectl trigger test --help)',
    'audiencectl: bad-email.jsonl line 10: the service refuses this event (412 schema_violation): /traits/email must match format "email"',
    /^audiencectl: not-json\.jsonl line 1: not JSON \(.*\); a fixture holds one event per line$/,
    'audiencectl: mixed.json: row 2 names event_id; every row names the same columns as row 1 (identity)',
    'audiencectl: cannot read the trigger SQL queries/acme/booking_completed.sql: ENOENT',
    'audiencectl: --from takes an ISO 8601 time, e.g. 2026-01-01T00:00:00Z (see audiencectl trigger test --help)',
  ];
  for (const [i, run] of runs.entries()) {
    t.equal(run.code, 2, `case ${i + 1}`);
    t.equal(run.stdout, '');
    t.match(run.stderr.trimEnd(), typeof expected[i] === 'string' ? new RegExp(`^${escape(expected[i])}$`) : expected[i]!);
    t.notMatch(run.stderr, /\n\s+at /, 'no stack trace');
  }
});

t.test('--stored tests the live version, read from the service', async (t) => {
  const h = await startTestApp(t);
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  await h.createOrg('acme');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_SQL);
  const env = { AUDIENCE_URL: url, ADMIN_KEY };
  const [stored, none, diff] = await Promise.all([
    cli(EXAMPLES, ['trigger', 'test', 'acme', 'booking_completed', '--stored', '--events', 'tests/bookings.jsonl', '--expect', 'tests/booking_completed.expected.json'], env),
    cli(EXAMPLES, ['trigger', 'test', 'acme', 'nothing_here', '--stored', '--events', 'tests/bookings.jsonl', '--expect', 'tests/booking_completed.expected.json'], env),
    // trigger diff sends the file in queries/acme/ to the service: the live version itself, so nothing changes.
    cli(EXAMPLES, ['trigger', 'diff', 'acme', 'booking_completed'], env),
  ]);
  t.equal(diff!.code, 0, diff!.stderr);
  t.match(JSON.parse(diff!.stdout), { liveVersion: 1, added: [], removed: [], unchanged: 0, truncated: false });
  t.equal(stored!.code, 0, stored!.stdout + stored!.stderr);
  t.match(stored!.stdout, /^ok acme\/booking_completed: 4 rows/);
  t.equal(none!.code, 3, 'an unknown trigger: not found');
  t.match(JSON.parse(none!.stderr), { code: 'trigger_not_found' });
});

t.test('the comparison: a multiset by default, in order on request; columns and values as the preview shows them', async (t) => {
  const run = (expected: unknown, sql = BOOKING_SQL) =>
    runTriggerTest({ org: 'acme', trigger: 'b', sql, fixture: FIXTURE, expected: parseExpected(JSON.stringify(expected)) });
  const rows = [
    { identity: 'linus@example.com', event_id: 'm-linus-1' },
    { identity: 'ada@example.com', event_id: 'm-ada-1' },
    { identity: 'ada@example.com', event_id: 'm-ada-2' },
    { identity: 'grace@example.com', event_id: 'm-grace-1' },
  ];
  t.ok((await run(rows)).passed, 'any order');
  const ordered = await run({ rows, ordered: true });
  t.notOk(ordered.passed);
  t.match(ordered.lines[0], /: 4 rows on identity, event_id, in order: in another order$/);
  t.ok(ordered.lines.includes('  1. {"event_id":"m-linus-1","identity":"linus@example.com"}'));
  t.ok((await run({ rows: [rows[1], rows[3], rows[0], rows[2]], ordered: true })).passed, 'in the order of ts');
  const twice = await run([...rows, rows[0]]);
  t.notOk(twice.passed, 'a row expected twice is missing once');
  t.equal(twice.lines[1], '- {"event_id":"m-linus-1","identity":"linus@example.com"}    (expected, not returned)');
  const empty = await run([]);
  t.match(empty.lines[0], /: 4 rows on identity, event_type: 4 unexpected$/, 'no rows expected: identity and event_type are shown');
  const raw = await run([{ event_id: 'm-ada-1', event_raw: { messageId: 'm-ada-1', clientId: 'c-ada', sentAt: 1767261660000, type: 'track', event: 'custom', partnerId: 'fixture', properties: { eventName: 'booking_completed', properties: { nights: 3, city: 'Lisbon' } } } }], BOOKING_SQL.replace("'custom_booking_completed'", "'custom_booking_completed' AND event_id = 'm-ada-1'"));
  t.ok(raw.passed, `event_raw compares as the parsed event, members in any order: ${raw.lines.join('\n')}`);
  const absent = await run([{ identity: 'ada@example.com', nights: 3 }]);
  t.equal(absent.lines[0], 'FAIL acme/b: expected.json compares nights, which the query does not return (it returns identity, identity_type, ts, event_type, event_id, event_raw, city)');
  t.throws(() => parseExpected('{"rows": [], "sorted": true}'), ExpectedRefused);
  t.throws(() => parseExpected('[1, 2]'), ExpectedRefused);
  await t.rejects(runTriggerTest({ org: 'acme', trigger: 'b', sql: BOOKING_SQL, fixture: '{"type": "track"}\n', expected: parseExpected('[]') }), FixtureRefused);
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
