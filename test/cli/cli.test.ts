/**
 * The `audience` CLI as a user runs it: a real process against the real app listening on a free port.
 * What scripts rely on: answers on stdout, errors on stderr, exit 0/1/2, one line and no stack trace
 * for a command line it does not understand.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import t, { type Test } from 'tap';
import { ADMIN_KEY, startTestApp } from '../helpers/app.js';
import { type CliRun, runCli } from '../helpers/cli.js';
import { BOOKING_TRIGGER } from '../helpers/flows.js';
import { ROOT } from '../helpers/paths.js';

type Run = CliRun;
const execFileAsync = promisify(execFile);

const cli = (url: string, args: string[], env: Record<string, string> = {}): Promise<Run> => runCli(args, { ...process.env, AUDIENCE_URL: url, ADMIN_KEY, ...env });

/** One line, naming the problem, with no trace of a stack. */
function oneLine(t: Test, run: Run, expected: string): void {
  t.equal(run.stdout, '', 'nothing on stdout');
  t.equal(run.stderr, `${expected}\n`, 'exactly one line on stderr');
  t.notMatch(run.stderr, /\n\s+at /, 'no stack trace');
}

t.test('the CLI against a running service', async (t) => {
  const h = await startTestApp(t);
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });

  const created = await cli(url, ['org', 'create', '--slug', 'acme', '--name', 'Acme']);
  t.equal(created.code, 0, 'org create succeeds');
  t.equal(created.stderr, '');
  const body = JSON.parse(created.stdout) as { org: { slug: string }; credentials: { production: { partnerSecret: string } } };
  t.equal(body.org.slug, 'acme', 'the answer is JSON on stdout');
  t.type(body.credentials.production.partnerSecret, 'string', 'with the secrets, so `> acme.json` keeps them');

  const again = await cli(url, ['org', 'create', '--slug', 'acme', '--name', 'Acme']);
  t.equal(again.code, 1, 'a refused call exits 1');
  t.equal(again.stdout, '', 'nothing on stdout: a redirect does not receive the error');
  const problem = JSON.parse(again.stderr) as { code: string; status: number };
  t.equal(problem.code, 'org_exists', 'the problem+json is on stderr');
  t.equal(problem.status, 409);
  t.match(again.stderr, /^\{\n {2}"/, 'pretty-printed');

  const missing = await cli(url, ['org', 'get', 'nope']);
  t.equal(missing.code, 3, 'not found exits 3');
  t.equal(missing.stdout, '');
  t.equal((JSON.parse(missing.stderr) as { code: string }).code, 'org_not_found');

  const wrongKey = await cli(url, ['org', 'list'], { ADMIN_KEY: 'wrong-key-0123456789abcdef' });
  t.equal(wrongKey.code, 1);
  t.equal(wrongKey.stdout, '');
  t.equal((JSON.parse(wrongKey.stderr) as { code: string }).code, 'invalid_admin_key');

  const listed = await cli(url, ['org', 'list']);
  t.equal(listed.code, 0);
  t.match(JSON.parse(listed.stdout), { orgs: [{ slug: 'acme' }] }, 'the org exists once');

  const retained = await cli(url, ['org', 'update', 'acme', '--retention', 'eventsDays=90, quarantineDays=7']);
  t.equal(retained.code, 0, `org update --retention ${retained.stderr}`);
  t.same(JSON.parse(retained.stdout).org.retention, { eventsDays: 90, quarantineDays: 7 }, "the org's retention is set");
  const badRetention = await cli(url, ['org', 'update', 'acme', '--retention', 'forever=1']);
  t.equal(badRetention.code, 1, 'an unknown retention member is refused by the service');
  t.equal((JSON.parse(badRetention.stderr) as { code: string }).code, 'invalid_request');
  const cleared = await cli(url, ['org', 'update', 'acme', '--retention', '']);
  t.same(JSON.parse(cleared.stdout).org.retention, {}, "--retention '' drops the overrides");

  const rotated = await cli(url, ['write-key', 'rotate', 'acme', 'production']);
  t.equal(rotated.code, 0, `write-key rotate ${rotated.stderr}`);
  const { writeKey, last4 } = JSON.parse(rotated.stdout) as { writeKey: string; last4: string };
  t.match(writeKey, /^wk_/, 'the new write key, shown once');
  const auth = { authorization: `Basic ${Buffer.from(`${writeKey}:`).toString('base64')}`, 'content-type': 'application/json' };
  const track = () => h.app.inject({ method: 'POST', url: '/v1/track', headers: auth, payload: { anonymousId: 'a', event: 'Clicked' } });
  t.equal((await track()).statusCode, 200, 'and it works');
  t.equal(JSON.parse((await cli(url, ['org', 'get', 'acme'])).stdout).credentials.production.writeKey.last4, last4, 'org get shows its last 4');
  const revoked = await cli(url, ['write-key', 'revoke', 'acme', 'production']);
  t.equal(revoked.code, 0);
  t.equal((await track()).statusCode, 401, 'write-key revoke stops it');

  const deleted = await cli(url, ['org', 'delete', 'acme', '--yes']);
  t.equal(deleted.code, 0, 'org delete --yes');
  t.match(JSON.parse(deleted.stdout), { slug: 'acme', deleted: true });
  t.equal((await cli(url, ['org', 'get', 'acme'])).code, 3, 'the org is gone');

  // A slug is one path segment: `../` cannot reach another route.
  const traversal = await cli(url, ['org', 'get', '../orgs']);
  t.equal(traversal.code, 1, 'refused (not a slug), not found elsewhere');
  t.equal(traversal.stdout, '');
});

t.test('lists a page at a time: --limit and --cursor; the command for the next page on stderr, stdout stays JSON', async (t) => {
  const h = await startTestApp(t);
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const cred = (await h.createOrg('acme')).production;
  for (const name of ['a', 'b', 'c']) {
    await h.collect({ ...cred, clientId: 'c', sentAt: Date.now(), type: 'track', event: 'custom', properties: { eventName: name, requiresIdentity: false } });
  }
  await h.compacted();

  const seen: string[] = [];
  let args = ['events', 'types', 'acme', '--env', 'production', '--limit', '2'];
  for (let page = 0; page < 3; page++) {
    const run = await cli(url, args);
    t.equal(run.code, 0, run.stderr);
    const answer = JSON.parse(run.stdout) as { types: Array<{ eventType: string }>; nextCursor: string | null };
    seen.push(...answer.types.map((x) => x.eventType));
    if (answer.nextCursor === null) {
      t.equal(run.stderr, '', 'nothing on stderr after the last page');
      break;
    }
    t.equal(run.stderr, `next page: audiencectl events types acme --env production --limit 2 --cursor ${answer.nextCursor}\n`, 'the next command, with the cursor');
    args = run.stderr.replace('next page: audiencectl ', '').trim().split(' ');
  }
  t.same(seen, ['custom_a', 'custom_b', 'custom_c'], 'every type once');

  for (const [list, member] of [['samples', 'events'], ['quarantine', 'events']] as const) {
    const run = await cli(url, list === 'samples' ? ['events', 'samples', 'acme', '--limit', '1'] : ['quarantine', 'acme', '--limit', '1']);
    t.equal(run.code, 0, `${list}: ${run.stderr}`);
    t.ok(Object.hasOwn(JSON.parse(run.stdout), member), list);
  }
  const bad = await cli(url, ['events', 'samples', 'acme', '--cursor', 'nope']);
  t.equal(bad.code, 1, 'a bad cursor is refused by the service');
  t.equal((JSON.parse(bad.stderr) as { code: string }).code, 'invalid_cursor');
  const noFlow = await cli(url, ['flow', 'sends', 'acme', 'f1', '--limit', '5']);
  t.equal(noFlow.code, 3);
  t.equal((JSON.parse(noFlow.stderr) as { code: string }).code, 'flow_not_found', 'flow sends reaches the route');
  const decisions = await cli(url, ['flow', 'decisions', 'acme', 'f1', '--identity', 'email:ada@example.com']);
  t.equal((JSON.parse(decisions.stderr) as { code: string }).code, 'flow_not_found', 'flow decisions reaches the route');
  const results = await cli(url, ['flow', 'results', 'acme', 'f1', '--from', '2026-01-01T00:00:00Z', '--to', '2026-02-01T00:00:00Z']);
  t.equal((JSON.parse(results.stderr) as { code: string }).code, 'flow_not_found', 'flow results reaches the route');
  const occurrences = await cli(url, ['flow', 'occurrences', 'acme', 'f1', '--limit', '5']);
  t.equal((JSON.parse(occurrences.stderr) as { code: string }).code, 'flow_not_found', 'flow occurrences reaches the route');
  const waits = await cli(url, ['flow', 'waits', 'acme', 'f1', '--identity', 'email:ada@example.com', '--limit', '5']);
  t.equal((JSON.parse(waits.stderr) as { code: string }).code, 'flow_not_found', 'flow waits reaches the route');
  const definition = `${t.testdir()}/flow.json`;
  writeFileSync(definition, JSON.stringify({ name: 'Draft' }));
  const simulated = await cli(url, ['flow', 'simulate', 'acme', 'f1', '--identity', 'email:ada@example.com', '--definition', definition]);
  t.equal((JSON.parse(simulated.stderr) as { code: string }).code, 'flow_not_found', 'flow simulate reaches the route with the definition');
  const noIdentity = await cli(url, ['flow', 'simulate', 'acme', 'f1']);
  t.equal(noIdentity.code, 2, 'flow simulate without --identity is a usage error');
  writeFileSync(definition, '{ not json');
  const notJson = await cli(url, ['flow', 'simulate', 'acme', 'f1', '--identity', 'email:ada@example.com', '--definition', definition]);
  t.equal(notJson.code, 2, 'a definition that is not JSON: exit 2');
  t.match(notJson.stderr, /flow\.json is not JSON/);
});

t.test('safe sending from the terminal: frequency caps, topics, consent, erasure', async (t) => {
  const h = await startTestApp(t);
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  await h.createOrg('acme');
  const caps = await cli(url, ['org', 'update', 'acme', '--frequency-caps', '3/86400@email, 10/604800']);
  t.equal(caps.code, 0, caps.stderr);
  t.same(JSON.parse(caps.stdout).org.frequencyCaps, [{ maxSends: 3, withinSeconds: 86400, channel: 'email' }, { maxSends: 10, withinSeconds: 604800 }]);
  t.equal((await cli(url, ['org', 'update', 'acme', '--frequency-caps', '3 per day'])).code, 2, 'a cap the CLI cannot read');
  t.equal((JSON.parse((await cli(url, ['org', 'update', 'acme', '--frequency-caps', '0/86400'])).stderr) as { code: string }).code, 'invalid_request', 'the service checks the values');
  t.same(JSON.parse((await cli(url, ['org', 'update', 'acme', '--frequency-caps', ''])).stdout).org.frequencyCaps, [], "'' removes the caps");
  const quiet = await cli(url, ['org', 'update', 'acme', '--quiet-hours', '21:00-08:00@contact', '--time-zone', 'Europe/Lisbon']);
  t.equal(quiet.code, 0, quiet.stderr);
  t.match(JSON.parse(quiet.stdout).org, { quietHours: { start: '21:00', end: '08:00', timeZone: 'contact' }, timeZone: 'Europe/Lisbon' });
  t.equal((await cli(url, ['org', 'update', 'acme', '--quiet-hours', 'nights'])).code, 2, 'a window the CLI cannot read');
  t.notOk('quietHours' in JSON.parse((await cli(url, ['org', 'update', 'acme', '--quiet-hours', ''])).stdout).org, "'' removes them");

  const topic = await cli(url, ['topic', 'put', 'acme', 'news', '--name', 'Newsletter', '--default', 'unsubscribed']);
  t.equal(topic.code, 0, topic.stderr);
  t.match(JSON.parse(topic.stdout), { topic: { topic: 'news', name: 'Newsletter', default: 'unsubscribed' }, created: true });
  t.same(JSON.parse((await cli(url, ['topic', 'list', 'acme'])).stdout).topics.map((x: { topic: string }) => x.topic), ['all', 'news']);
  t.equal((await cli(url, ['topic', 'put', 'acme', 'news'])).code, 2, 'topic put needs --name and --default');

  const consent = await cli(url, ['contact', 'consent', 'acme', '--identity', 'email:ada@example.com', '--topic', 'news', '--status', 'subscribed']);
  t.equal(consent.code, 0, consent.stderr);
  t.match(JSON.parse(consent.stdout), { email: 'ada@example.com', topic: 'news', status: 'subscribed', source: 'admin' });
  const unknown = await cli(url, ['contact', 'consent', 'acme', '--identity', 'email:ada@example.com', '--topic', 'nope', '--status', 'subscribed']);
  t.equal((JSON.parse(unknown.stderr) as { code: string }).code, 'topic_not_found');

  const erased = await cli(url, ['contact', 'erase', 'acme', '--identity', 'email:ada@example.com', '--suppress', '--wait']);
  t.equal(erased.code, 0, erased.stderr);
  const receipt = JSON.parse(erased.stdout) as { id: string; status: string; suppress: boolean; removed: { consent: number } };
  t.match(receipt, { status: 'done', suppress: true, removed: { consent: 1 } }, '--wait prints the receipt once done');
  // A suppressed address gets no consent again: subscribing is refused (exit 1), unsubscribing records nothing.
  const resubscribe = await cli(url, ['contact', 'consent', 'acme', '--identity', 'email:Ada@Example.com', '--topic', 'news', '--status', 'subscribed']);
  t.equal(resubscribe.code, 1);
  t.match(JSON.parse(resubscribe.stderr), { status: 409, code: 'contact_suppressed' });
  const unsubscribe = await cli(url, ['contact', 'consent', 'acme', '--identity', 'email:ada@example.com', '--topic', 'news', '--status', 'unsubscribed']);
  t.equal(unsubscribe.code, 0, unsubscribe.stderr);
  t.match(JSON.parse(unsubscribe.stdout), { status: 'unsubscribed', source: 'suppressed', changedAt: null });
  t.same(await h.db().all("SELECT * FROM contact_consent WHERE email = 'ada@example.com'"), [], 'no consent row');
  t.same(JSON.parse((await cli(url, ['erasure', 'list', 'acme'])).stdout).erasures.map((e: { id: string }) => e.id), [receipt.id]);
  t.match(JSON.parse((await cli(url, ['erasure', 'get', 'acme', receipt.id])).stdout), { id: receipt.id, status: 'done' });
  t.equal((JSON.parse((await cli(url, ['erasure', 'get', 'acme', 'era_nope'])).stderr) as { code: string }).code, 'erasure_not_found');
  t.equal((await cli(url, ['contact', 'erase', 'acme'])).code, 2, 'contact erase needs --identity');
});

t.test('a command line the CLI does not understand: one line, exit 2, nothing sent', async (t) => {
  // Nothing listens here: any request would fail differently (exit 4, "cannot reach").
  const url = 'http://127.0.0.1:9';
  const cases: Array<[string[], string]> = [
    [['org', 'create', '--slug', 'acme', '--nmae', 'Acme'], 'audiencectl: unknown option --nmae (see audiencectl --help)'],
    [['--foo'], 'audiencectl: unknown option --foo (see audiencectl --help)'],
    [['org', 'list', '-x'], 'audiencectl: unknown option -x (see audiencectl --help)'],
    [['org', 'create', '--slug'], 'audiencectl: option --slug needs a value (see audiencectl --help)'],
    [['org', 'update', 'acme', '--audience-api=no'], 'audiencectl: option --audience-api takes no value (see audiencectl --help)'],
    [['frobnicate'], "audiencectl: unknown command 'frobnicate' (see audiencectl --help)"],
    [['org'], 'audiencectl: org needs a command; org takes create, list, get, update, delete, rotate (see audiencectl --help)'],
    [['org', 'remove', 'acme'], "audiencectl: unknown command 'org remove'; org takes create, list, get, update, delete, rotate (see audiencectl --help)"],
    [['org', 'delete', 'acme'], 'audiencectl: org delete needs --yes: it deletes the org and all its data (see audiencectl org delete --help)'],
    [['org', 'get'], 'audiencectl: org get needs <slug> (see audiencectl org get --help)'],
    [['flow', 'sends', 'acme'], 'audiencectl: flow sends needs <slug> <flow-id> (see audiencectl flow sends --help)'],
    [['org', 'update', 'acme', '--retention', 'eventsDays'], 'audiencectl: --retention takes name=days pairs, e.g. eventsDays=90,quarantineDays=7 (see audiencectl org update --help)'],
    [['org', 'get', 'acme', 'extra'], "audiencectl: org get: unexpected argument 'extra' (see audiencectl org get --help)"],
    [['org', 'create', 'acme'], "audiencectl: org create: unexpected argument 'acme' (see audiencectl org create --help)"],
    [['org', 'create', '--name', 'Acme'], 'audiencectl: org create needs --slug <slug> (see audiencectl org create --help)'],
    [['token', 'create', 'acme'], 'audiencectl: token create needs --created-by <e-mail> (see audiencectl token create --help)'],
    [['org', 'list', '--limit', '5'], 'audiencectl: org list does not take --limit (see audiencectl org list --help)'],
    [['org', 'list', '--json', '--table'], 'audiencectl: --json or --table, not both (see audiencectl org list --help)'],
    [['completion', 'tcsh'], 'audiencectl: completion takes one of bash, zsh, fish (see audiencectl --help)'],
    [['trigger', 'put', 'acme', 'x', '--sql'], 'audiencectl: option --sql needs a value (see audiencectl --help)'],
    [['flow', 'create', 'acme'], 'audiencectl: flow create needs --file <flow.json> (see audiencectl flow create --help)'],
    [['contact', 'lookup', 'acme'], 'audiencectl: contact lookup needs --identity email:<address> (or user_id:, email-hash:) (see audiencectl contact lookup --help)'],
    [['contact', 'import', 'acme', '/etc/passwd'], 'audiencectl: contact import takes a .csv (with a header row) or .ndjson file (see audiencectl contact import --help)'],
  ];
  for (const [args, expected] of cases) {
    const run = await cli(url, args);
    t.equal(run.code, 2, `${args.join(' ')}: exit 2`);
    oneLine(t, run, expected);
  }
});

t.test('a file that cannot be read: one line, exit 2', async (t) => {
  const run = await cli('http://127.0.0.1:9', ['contact', 'import', 'acme', `${t.testdir()}/missing.csv`]);
  t.equal(run.code, 2);
  t.match(run.stderr, /^audiencectl: cannot read .*missing\.csv: ENOENT\n$/);
  t.notMatch(run.stderr, /\n\s+at /, 'no stack trace');
});

t.test('--version prints the package version; --help the usage', async (t) => {
  const pkg = JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as { version: string };
  const version = await cli('http://127.0.0.1:9', ['--version']);
  t.equal(version.code, 0);
  t.equal(version.stdout, `${pkg.version}\n`);
  t.equal(version.stderr, '');

  const help = await cli('http://127.0.0.1:9', ['--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /^usage: audiencectl <command>/);
  t.equal(help.stderr, '');

  const bare = await cli('http://127.0.0.1:9', []);
  t.equal(bare.code, 2, 'no command at all is a usage error');
  t.equal(bare.stdout, '');
  t.match(bare.stderr, /^usage: audiencectl <command>/, 'the usage, on stderr');

  const one = await cli('http://127.0.0.1:9', ['trigger', 'put', '--help']);
  t.equal(one.code, 0);
  t.match(one.stdout, /^usage: audiencectl trigger put <slug> <name> \[options\]\n/);
  t.match(one.stdout, /\n {2}--sql <file\.sql> +the SQL, from this file\n/, 'its options');
  t.match(one.stdout, /\nexample:\n {2}audiencectl trigger put acme /, 'and an example');

  // A group's help: its commands, each as the full usage lists it (issue 40: `flow --help` was an error).
  for (const group of ['flow', 'org', 'trigger', 'contact']) {
    const groupHelp = await cli('http://127.0.0.1:9', [group, '--help']);
    t.equal(groupHelp.code, 0, `${group} --help exits 0`);
    t.match(groupHelp.stdout, new RegExp(`^usage: audiencectl ${group} <`));
    const listed = help.stdout.split('\n').filter((line) => line.startsWith(`  ${group} `));
    t.ok(listed.length > 1 && listed.every((line) => groupHelp.stdout.includes(line.trim().split(/ {2,}/)[1]!)), `${group} --help lists each of its ${listed.length} commands`);
  }

  // The --slug help says what the API takes: its example slugs pass the org schema, one with '-' does not.
  const orgCreate = (await cli('http://127.0.0.1:9', ['org', 'create', '--help'])).stdout;
  const pattern = new RegExp((JSON.parse(readFileSync(`${ROOT}/schemas/org.schema.json`, 'utf8')) as { $defs: { slug: { pattern: string } } }).$defs.slug.pattern);
  t.match(orgCreate, /--slug <slug> +the new org's slug: 2 to 40 of a-z, 0-9 and _, starting with a letter/);
  t.ok(pattern.test('acme_eu') && !pattern.test('acme-eu') && !pattern.test('a') && pattern.test('a'.repeat(40)) && !pattern.test('a'.repeat(41)), 'and so does the schema');

  const down = await cli('http://127.0.0.1:9', ['org', 'list']);
  t.equal(down.code, 4, 'a service that cannot be reached exits 4');
  t.match(down.stderr, /^audiencectl: cannot reach http:\/\/127\.0\.0\.1:9: /);
});

t.test('api: any call with the admin key; completion names the orgs and flows the service has', async (t) => {
  const h = await startTestApp(t);
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  await h.createOrg('acme');
  await h.createOrg('beta');
  const listed = await cli(url, ['api', 'get', '/admin/v1/orgs']);
  t.equal(listed.code, 0, listed.stderr);
  t.same((JSON.parse(listed.stdout) as { orgs: Array<{ slug: string }> }).orgs.map((o) => o.slug).sort(), ['acme', 'beta']);
  const topic = await cli(url, ['api', 'PUT', '/admin/v1/orgs/acme/topics/news', '--data', '{"name": "News", "default": "subscribed"}']);
  t.match(JSON.parse(topic.stdout), { topic: { topic: 'news' } }, 'a body from --data');
  const file = `${t.testdir()}/body.json`;
  writeFileSync(file, '{"name": "Offers", "default": "unsubscribed"}');
  t.match(JSON.parse((await cli(url, ['api', 'PUT', '/admin/v1/orgs/acme/topics/offers', '--data', `@${file}`])).stdout), { topic: { default: 'unsubscribed' } }, 'or from @file');
  t.equal((await cli(url, ['api', 'GET', '/admin/v1/orgs/nope'])).code, 3, 'a 404: exit 3, as every command');
  for (const args of [['api', 'TRACE', '/admin/v1/orgs'], ['api', 'GET', 'http://evil.example/x'], ['api', 'GET', '//evil.example/x'], ['api', 'PUT', '/x', '--data', '{nope']]) {
    t.equal((await cli(url, args)).code, 2, `${args.slice(1).join(' ')}: a usage error`);
  }

  // Completion: the bash script calls the program it completes (COMP_WORDS[0]) with __complete.
  const program = `${t.testdir()}/audiencectl`;
  writeFileSync(program, `#!/bin/sh\nexec node ${JSON.stringify(`${ROOT}/dist/src/cli.js`)} "$@"\n`, { mode: 0o755 });
  const script = (await cli(url, ['completion', 'bash'])).stdout;
  const complete = async (words: string[], env: Record<string, string> = { AUDIENCE_URL: url, ADMIN_KEY }): Promise<string[]> => {
    const line = `${script}\nCOMP_WORDS=(${[program, ...words].map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length}; _audiencectl; printf '%s\\n' "\${COMPREPLY[@]}"`;
    // Not execFileSync: the service answering runs in this process.
    return (await execFileAsync('bash', ['-c', line], { encoding: 'utf8', env: { ...process.env, ...env } })).stdout.split('\n').filter(Boolean).sort();
  };
  await h.admin('PUT', '/admin/v1/orgs/acme/triggers/booking_completed', { sql: BOOKING_TRIGGER });
  await h.admin('POST', '/admin/v1/orgs/acme/flows', { id: 'welcome', name: 'W', category: 'triggered', entry: 'when_contact_triggers_event', trigger: 'booking_completed', message: { channel: 'outbox', template: { text: 'hi' } } });
  t.same(await complete(['flow', 'get', '']), ['acme', 'beta'], "an org's slug");
  t.same(await complete(['flow', 'get', 'acme', 'w']), ['welcome'], 'then its flows');
  t.same(await complete(['trigger', 'get', 'acme', '']), ['booking_completed'], 'its triggers');
  t.same(await complete(['topic', 'delete', 'acme', '']), ['all', 'news', 'offers'], 'its topics');
  t.same(await complete(['quarantine', 'a']), ['acme'], 'a one-word command');
  t.same(await complete(['flow', 'get', 'beta', '']), [], 'another org: its own flows only');
  t.same(await complete(['flow', 'get', ''], { AUDIENCE_URL: 'http://127.0.0.1:9', ADMIN_KEY }), [], 'no service: nothing, and no error');

  // fish: the same names, through fish's own completion (`complete -C`) of the same program.
  t.ok(existsSync('/usr/bin/fish'), 'fish is installed (apt-get install -y fish; .ci/run installs it)');
  const fishScript = `${program}.fish`; // beside the program (a second t.testdir() would empty the folder)
  writeFileSync(fishScript, (await cli(url, ['completion', 'fish'])).stdout);
  const fish = async (line: string, env: Record<string, string> = { AUDIENCE_URL: url, ADMIN_KEY }): Promise<string[]> => {
    const run = await execFileAsync('fish', ['--no-config', '-c', `source ${fishScript}; complete -C ${JSON.stringify(`${program} ${line}`)}`], { encoding: 'utf8', env: { ...process.env, ...env } });
    return run.stdout.split('\n').filter(Boolean).map((l) => l.split('\t')[0]!).sort();
  };
  t.same(await fish('flow get '), ['acme', 'beta'], "fish: an org's slug");
  t.same(await fish('flow get acme w'), ['welcome'], 'fish: then its flows');
  t.same(await fish('trigger get acme '), ['booking_completed'], 'fish: its triggers');
  t.same(await fish('topic delete acme '), ['all', 'news', 'offers'], 'fish: its topics');
  t.same(await fish('quarantine a'), ['acme'], 'fish: a one-word command');
  t.same(await fish('flow get beta '), [], 'fish: another org: its own flows only');
  t.ok((await fish('flow sends acme welcome --s')).includes('--status'), 'fish: options still');
  t.same(await fish('flow get ', { AUDIENCE_URL: 'http://127.0.0.1:9', ADMIN_KEY }), [], 'fish: no service: nothing, and no error');
});
