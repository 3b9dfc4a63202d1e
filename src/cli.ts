#!/usr/bin/env node
/**
 * `npx audience …`: the admin API from a terminal. Talks HTTP to a running service.
 * AUDIENCE_URL (default http://127.0.0.1:8080) and ADMIN_KEY (default: the contents of
 * ./data/admin.key, as generated on first start) are read once here.
 *
 * Streams and exit codes are the interface scripts rely on: an answer goes to stdout (so
 * `org create … > acme.json` keeps only credentials), every error to stderr. Exit 0 on success, 1 when
 * the service refused or could not be reached, 2 for a command line the CLI does not understand.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { serviceVersion } from './core/paths.js';

const USAGE = `usage: audience <command> [options]

  org create --slug acme --name Acme [--audience-api] [--rate-limit 50] [--currency '$']
             [--content-fields a,b,c] [--not-found-status 404] [--retention eventsDays=90,quarantineDays=7]
  org list
  org get <slug>
  org update <slug> [--name …] [--audience-api | --no-audience-api] [--rate-limit N] [--currency S]
             [--content-fields a,b] [--not-found-status 404|400] [--retention eventsDays=90 | --retention '']
             [--frequency-caps 3/86400@email,10/604800 | --frequency-caps '']
                                     caps per contact: maxSends/withinSeconds, @channel for one channel
             [--quiet-hours 21:00-08:00@contact | --quiet-hours ''] [--time-zone Europe/Lisbon]
                                     no message in that window, local time (each contact's zone, or one)
  org delete <slug> --yes            the org and all its data, for good (the slug is never reused)
  org rotate <slug> <staging|production>
                                     a new partner secret (the old one stops at once)
  write-key rotate <slug> <staging|production>
                                     a new write key for Segment / RudderStack / Jitsu SDKs (shown once;
                                     the old one stops at once)
  write-key revoke <slug> <staging|production>
  events types <slug> [--env production] [--limit 100] [--cursor …]
  events samples <slug> [--env production] [--event-type custom_x] [--limit 20] [--cursor …]
  quarantine <slug> [--env production] [--limit 100] [--cursor …]
  flow sends <slug> <flow-id> [--status dead] [--identity email:ada@example.com] [--limit 100] [--cursor …]
  flow decisions <slug> <flow-id> [--identity email:ada@example.com] [--limit 100] [--cursor …]
  flow occurrences <slug> <flow-id> [--limit 100] [--cursor …]
                                     a scheduled or recurring flow's occurrences: status, members, progress
                                     lists come a page at a time: when there is more, the answer's
                                     nextCursor is set and stderr shows the command for the next page
  flow results <slug> <flow-id> [--from 2026-01-01T00:00:00Z] [--to …]
  flow waits <slug> <flow-id> [--identity email:ada@example.com] [--limit 100]
                                     entries of a flow with steps still in them: the step, what it waits for, until when
  flow simulate <slug> <flow-id> --identity email:ada@example.com [--from …] [--to …] [--sql trigger.sql]
             [--definition flow.json]   what the flow would do now for that contact; nothing sent or recorded
  contacts import <slug> <file.csv|file.ndjson>
  trigger test <slug> <trigger> --events fixture.jsonl --expect expected.json [--sql file.sql | --stored]
             [--from 2026-01-01T00:00:00Z] [--to …]
                                     runs the trigger's SQL (default: queries/<slug>/<trigger>.sql; --stored:
                                     the live version, from the service) over the fixture's events in an
                                     in-memory database, no service needed; exit 0 when the rows are the
                                     expected ones, 1 with the diff on stdout, 2 for unusable input
  trigger diff <slug> <trigger> [--sql file.sql] [--from …] [--to …]
                                     the contacts the SQL (default: queries/<slug>/<trigger>.sql) adds and
                                     removes against the live version, over the last 24 h or the window
  topic list <slug>
  topic put <slug> <topic> --name 'Newsletter' --default subscribed|unsubscribed
  consent set <slug> --identity email:ada@example.com --topic news --status subscribed|unsubscribed
  contacts erase <slug> --identity email:ada@example.com [--suppress] [--wait]
                                     every row of the contact, for good; --suppress also keeps its future
                                     events out and never messages it; --wait prints the receipt once done
  erasure list <slug>
  erasure get <slug> <erasure-id>
  token create <slug> --created-by ops@acme.com [--label x] [--expires-at 2026-12-31T00:00:00Z]
  token list <slug>
  token revoke <slug> (--id tok_… | --last3 x9Q | --created-by ops@acme.com)
  backup <dir> [--org acme]          a consistent copy of a running storage process, into a new directory
  restore <dir|file.tar> [--reset-log-positions]
                                     a backup (folder, or the archive GET /admin/v1/backup answers) into a
                                     fresh DATA_DIR (run with the service stopped; reads DATA_DIR,
                                     QUERIES_DIR and NATS_URL like the service)
  --help, --version

answers are JSON on stdout; errors go to stderr (exit 1: refused by the service, 2: bad command line)
environment: AUDIENCE_URL (default http://127.0.0.1:8080), ADMIN_KEY (default: ./data/admin.key)`;

const HINT = '(see audience --help)';

/** The command line is wrong: one line, exit 2, never a stack trace. */
function usageError(message: string): never {
  console.error(`audience: ${message} ${HINT}`);
  process.exit(2);
}

/** The command was understood but could not be carried out. */
function fail(message: string): never {
  console.error(`audience: ${message}`);
  process.exit(1);
}

function parseCommandLine() {
  try {
    return parseArgs({
      allowPositionals: true,
      strict: true,
      options: {
        slug: { type: 'string' },
        name: { type: 'string' },
        'audience-api': { type: 'boolean' },
        'no-audience-api': { type: 'boolean' },
        'rate-limit': { type: 'string' },
        currency: { type: 'string' },
        'content-fields': { type: 'string' },
        'not-found-status': { type: 'string' },
        retention: { type: 'string' },
        'frequency-caps': { type: 'string' },
        'quiet-hours': { type: 'string' },
        'time-zone': { type: 'string' },
        default: { type: 'string' },
        topic: { type: 'string' },
        env: { type: 'string' },
        'event-type': { type: 'string' },
        limit: { type: 'string' },
        cursor: { type: 'string' },
        status: { type: 'string' },
        identity: { type: 'string' },
        'created-by': { type: 'string' },
        label: { type: 'string' },
        'expires-at': { type: 'string' },
        id: { type: 'string' },
        last3: { type: 'string' },
        org: { type: 'string' },
        sql: { type: 'string' },
        definition: { type: 'string' },
        events: { type: 'string' },
        expect: { type: 'string' },
        stored: { type: 'boolean' },
        from: { type: 'string' },
        to: { type: 'string' },
        'reset-log-positions': { type: 'boolean' },
        yes: { type: 'boolean' },
        suppress: { type: 'boolean' },
        wait: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
      },
    });
  } catch (error) {
    usageError(commandLineProblem(error));
  }
}

/** node:util's parse errors are long and suggest `--`; say only what is wrong. */
function commandLineProblem(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  const option = /'(-[^' ]*)/.exec(message)?.[1];
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown option ${option ?? message}`;
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    return /argument missing/.test(message) ? `option ${option} needs a value` : `option ${option} takes no value`;
  }
  return message.split('\n')[0]!;
}

const { values: opts, positionals } = parseCommandLine();

const baseUrl = (process.env.AUDIENCE_URL ?? 'http://127.0.0.1:8080').replace(/\/$/, '');

function adminKey(): string {
  if (process.env.ADMIN_KEY) return process.env.ADMIN_KEY;
  try {
    return readFileSync(`${process.env.DATA_DIR ?? './data'}/admin.key`, 'utf8').trim();
  } catch {
    fail('set ADMIN_KEY, or run from the directory whose data/admin.key the service generated');
  }
}

/** Org settings from flags (only those given). */
function orgSettings(): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (opts.name !== undefined) body.name = opts.name;
  if (opts['audience-api']) body.audienceApi = true;
  if (opts['no-audience-api']) body.audienceApi = false;
  if (opts['rate-limit'] !== undefined) body.rateLimit = Number(opts['rate-limit']);
  if (opts.currency !== undefined) body.currencySymbol = opts.currency;
  if (opts['content-fields'] !== undefined) body.contentFields = opts['content-fields'].split(',').map((f) => f.trim());
  if (opts['not-found-status'] !== undefined) body.notFoundStatus = Number(opts['not-found-status']);
  if (opts.retention !== undefined) body.retention = retention(opts.retention);
  if (opts['frequency-caps'] !== undefined) body.frequencyCaps = frequencyCaps(opts['frequency-caps']);
  if (opts['quiet-hours'] !== undefined) body.quietHours = quietHours(opts['quiet-hours']);
  if (opts['time-zone'] !== undefined) body.timeZone = opts['time-zone'];
  return body;
}

/** `21:00-08:00@contact` (or @Europe/Lisbon) as the org's quietHours; '' removes them. The service checks the values. */
function quietHours(text: string): Record<string, string> | null {
  if (text.trim() === '') return null;
  const match = /^\s*(\d\d:\d\d)-(\d\d:\d\d)@(\S+)\s*$/.exec(text);
  if (!match) usageError('--quiet-hours takes start-end@zone, e.g. 21:00-08:00@contact or 22:00-07:00@Europe/Lisbon');
  return { start: match[1]!, end: match[2]!, timeZone: match[3]! };
}

/** `3/86400@email,10/604800` as the org's frequencyCaps ('' for none); the service checks the values. */
function frequencyCaps(text: string): Array<Record<string, number | string>> {
  return text
    .split(',')
    .filter((cap) => cap.trim() !== '')
    .map((cap) => {
      const match = /^\s*(\d+)\/(\d+)(?:@([a-z]+))?\s*$/.exec(cap);
      if (!match) usageError(`--frequency-caps takes maxSends/withinSeconds[@channel] items, e.g. 3/86400@email,10/604800`);
      return { maxSends: Number(match[1]), withinSeconds: Number(match[2]), ...(match[3] ? { channel: match[3] } : {}) };
    });
}

/** `eventsDays=90,quarantineDays=7` as an object ('' for none); the service checks names and values. */
function retention(text: string): Record<string, number | string> {
  const pairs = text.split(',').filter((pair) => pair.trim() !== '');
  return Object.fromEntries(
    pairs.map((pair) => {
      const [name, value] = pair.split('=').map((part) => part.trim());
      if (!name || value === undefined || value === '') usageError(`--retention takes name=days pairs, e.g. eventsDays=90,quarantineDays=7`);
      return [name, /^\d+$/.test(value) ? Number(value) : value];
    }),
  );
}

function query(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined));
  return q.size > 0 ? `?${q}` : '';
}

/** A slug or id goes into the path as one segment, whatever it holds. */
const seg = encodeURIComponent;

function pretty(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/**
 * JSON bodies by default; a string body is sent as is with its own content type (imports).
 * The answer goes to stdout when the service accepted the call, else (problem+json) to stderr.
 */
async function call(method: string, path: string, body?: unknown, contentType = 'application/json', print = true): Promise<string> {
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(baseUrl + path, {
    method,
    headers: { authorization: `Bearer ${adminKey()}`, ...(payload !== undefined ? { 'content-type': contentType } : {}) },
    ...(payload !== undefined ? { body: payload } : {}),
  }).catch((error: Error) => fail(`cannot reach ${baseUrl}: ${(error.cause as Error | undefined)?.message ?? error.message}`));
  const text = pretty(await res.text());
  if (res.ok) {
    if (print) console.log(text);
    return text;
  }
  console.error(text);
  process.exit(1);
}

/** GET /admin/v1/backup, unpacked into `dir`; the manifest (the archive's last entry) is printed. */
async function backup(dir: string): Promise<void> {
  if (existsSync(dir) && readdirSync(dir).length > 0) fail(`${dir} is not empty: a backup goes into a new or empty directory`);
  const res = await fetch(`${baseUrl}/admin/v1/backup${query({ org: opts.org })}`, { headers: { authorization: `Bearer ${adminKey()}` } }).catch((error: Error) =>
    fail(`cannot reach ${baseUrl}: ${(error.cause as Error | undefined)?.message ?? error.message}`),
  );
  if (!res.ok || !res.body) {
    console.error(pretty(await res.text()));
    process.exit(1);
  }
  mkdirSync(dir, { recursive: true });
  const { ArchiveRefused, unpackBackup } = await import('./backup/unpack.js');
  await unpackBackup(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), dir).catch((error: Error) =>
    fail(error instanceof ArchiveRefused ? `${baseUrl} sent an archive that is not a backup (${error.message}); delete ${dir}` : `the backup stream broke off (${error.message}): ${dir} is incomplete; take the backup again`),
  );
  const manifest = join(dir, 'manifest.json');
  if (!existsSync(manifest)) fail(`the backup ended before its manifest: ${dir} is incomplete; take the backup again`);
  console.log(readFileSync(manifest, 'utf8').trimEnd());
}

/** Offline: the backup in `dir` (a folder or an archive) into this machine's DATA_DIR (and QUERIES_DIR, control plane). */
async function restore(dir: string): Promise<void> {
  const { ConfigError, readConfig } = await import('./core/config.js');
  const { RestoreError, restoreBackup } = await import('./backup/restore.js');
  const { DataDirInUseError } = await import('./core/data-dir-lock.js');
  try {
    const report = await restoreBackup(dir, readConfig(process.env), { resetLogPositions: opts['reset-log-positions'] === true });
    console.log(JSON.stringify(report, null, 2));
  } catch (error) {
    if (error instanceof ConfigError || error instanceof RestoreError || error instanceof DataDirInUseError) fail(error.message);
    throw error;
  }
}

/** A page of a list; when there is more, the command for the next page goes to stderr (stdout stays JSON). */
async function page(path: string): Promise<void> {
  const { nextCursor } = JSON.parse(await call('GET', path)) as { nextCursor?: unknown };
  if (typeof nextCursor !== 'string') return;
  const args = process.argv.slice(2).filter((arg, i, all) => !arg.startsWith('--cursor') && all[i - 1] !== '--cursor');
  const quoted = [...args, '--cursor', nextCursor].map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`));
  console.error(`next page: audience ${quoted.join(' ')}`);
}

function readInput(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    fail(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

/** A JSON file the command sends (a flow definition): one line and exit 2 when it is not JSON. */
function parseJsonFile(file: string): unknown {
  try {
    return JSON.parse(readInput(file));
  } catch (error) {
    return unusable(`${file} is not JSON: ${(error as Error).message}`);
  }
}

/** Input the command cannot use (a missing or malformed file): one line, exit 2, as for a bad command line. */
function unusable(message: string): never {
  console.error(`audience: ${message}`);
  process.exit(2);
}

function readOrUnusable(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    unusable(`cannot read ${what} ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

/** `--from`/`--to` as epoch ms (trigger test), or undefined when not given. */
function timeOption(name: 'from' | 'to'): number | undefined {
  const text = opts[name];
  if (text === undefined) return undefined;
  const ms = /^\d{4}-\d{2}-\d{2}/.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(ms)) usageError(`--${name} takes an ISO 8601 time, e.g. 2026-01-01T00:00:00Z`);
  return ms;
}

/** The trigger's SQL: --sql, or its file in ./queries as the service lays them out. */
function triggerSqlFile(slug: string, trigger: string): string {
  return opts.sql ?? join('queries', slug, `${trigger}.sql`);
}

/** The live version's SQL, from the service. */
async function storedSql(slug: string, trigger: string): Promise<string> {
  const found = JSON.parse(await call('GET', `/admin/v1/orgs/${seg(slug)}/triggers/${seg(trigger)}`, undefined, 'application/json', false)) as {
    sql: string | null;
    liveVersion: number | null;
  };
  if (found.liveVersion === null || found.sql === null) fail(`trigger ${slug}/${trigger} has no live version (GET …/triggers/${trigger} says why)`);
  return found.sql;
}

/** Offline: the trigger over fixture events, against the rows expected (src/reactions/triggers/trigger-test.ts). */
async function triggerTest(slug: string, trigger: string): Promise<void> {
  if (opts.events === undefined || opts.expect === undefined) usageError('trigger test needs --events fixture.jsonl and --expect expected.json');
  if (opts.stored && opts.sql !== undefined) usageError('trigger test takes --sql or --stored, not both');
  const from = timeOption('from');
  const to = timeOption('to');
  if (from !== undefined && to !== undefined && from >= to) usageError('--from must be before --to: the window is (from, to]');
  const fixture = readOrUnusable(opts.events, 'the fixture');
  const expectedText = readOrUnusable(opts.expect, 'the expected rows');
  const sql = opts.stored ? await storedSql(slug, trigger) : readOrUnusable(triggerSqlFile(slug, trigger), 'the trigger SQL');
  // Loaded here, not at start: DuckDB and the compaction modules cost every other command's first call.
  const { ExpectedRefused, parseExpected } = await import('./reactions/triggers/expected-rows.js');
  const { FixtureRefused } = await import('./reactions/triggers/fixture-org.js');
  const { runTriggerTest } = await import('./reactions/triggers/trigger-test.js');
  try {
    const expected = parseExpected(expectedText);
    const result = await runTriggerTest({ org: slug, trigger, sql, fixture, expected, ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}) });
    console.log(result.lines.join('\n'));
    if (!result.passed) process.exit(1);
  } catch (error) {
    if (error instanceof ExpectedRefused) unusable(`${opts.expect}: ${error.message}`);
    if (error instanceof FixtureRefused) unusable(`${opts.events} ${error.message}`);
    throw error;
  }
}

/** One command: the positionals it needs after its name, and what it does with them. */
interface Command {
  args: string[];
  run(args: string[]): Promise<unknown>;
}

const commands: Record<string, Command> = {
  'org create': {
    args: [],
    async run() {
      if (opts.slug === undefined) usageError('org create needs --slug <slug>');
      await call('POST', '/admin/v1/orgs', { slug: opts.slug, name: opts.name ?? opts.slug, ...orgSettings() });
    },
  },
  'org list': { args: [], run: () => call('GET', '/admin/v1/orgs') },
  'org get': { args: ['<slug>'], run: ([slug]) => call('GET', `/admin/v1/orgs/${seg(slug!)}`) },
  'org update': { args: ['<slug>'], run: ([slug]) => call('PATCH', `/admin/v1/orgs/${seg(slug!)}`, orgSettings()) },
  'org delete': {
    args: ['<slug>'],
    async run([slug]) {
      if (!opts.yes) usageError('org delete needs --yes: it deletes the org and all its data');
      await call('DELETE', `/admin/v1/orgs/${seg(slug!)}`);
    },
  },
  'org rotate': {
    args: ['<slug>', '<staging|production>'],
    run: ([slug, env]) => call('POST', `/admin/v1/orgs/${seg(slug!)}/credentials/${seg(env!)}/rotate`),
  },
  'write-key rotate': {
    args: ['<slug>', '<staging|production>'],
    run: ([slug, env]) => call('POST', `/admin/v1/orgs/${seg(slug!)}/credentials/${seg(env!)}/write-key/rotate`),
  },
  'write-key revoke': {
    args: ['<slug>', '<staging|production>'],
    run: ([slug, env]) => call('DELETE', `/admin/v1/orgs/${seg(slug!)}/credentials/${seg(env!)}/write-key`),
  },
  'events types': {
    args: ['<slug>'],
    run: ([slug]) => page(`/admin/v1/orgs/${seg(slug!)}/events/types${query({ env: opts.env, limit: opts.limit, cursor: opts.cursor })}`),
  },
  'events samples': {
    args: ['<slug>'],
    run: ([slug]) =>
      page(`/admin/v1/orgs/${seg(slug!)}/events/samples${query({ env: opts.env, eventType: opts['event-type'], limit: opts.limit, cursor: opts.cursor })}`),
  },
  quarantine: {
    args: ['<slug>'],
    run: ([slug]) => page(`/admin/v1/orgs/${seg(slug!)}/quarantine${query({ env: opts.env, limit: opts.limit, cursor: opts.cursor })}`),
  },
  'flow sends': {
    args: ['<slug>', '<flow-id>'],
    run: ([slug, id]) =>
      page(`/admin/v1/orgs/${seg(slug!)}/flows/${seg(id!)}/sends${query({ status: opts.status, identity: opts.identity, limit: opts.limit, cursor: opts.cursor })}`),
  },
  'flow decisions': {
    args: ['<slug>', '<flow-id>'],
    run: ([slug, id]) => page(`/admin/v1/orgs/${seg(slug!)}/flows/${seg(id!)}/decisions${query({ identity: opts.identity, limit: opts.limit, cursor: opts.cursor })}`),
  },
  'flow occurrences': {
    args: ['<slug>', '<flow-id>'],
    run: ([slug, id]) => page(`/admin/v1/orgs/${seg(slug!)}/flows/${seg(id!)}/occurrences${query({ limit: opts.limit, cursor: opts.cursor })}`),
  },
  'flow results': {
    args: ['<slug>', '<flow-id>'],
    run: ([slug, id]) => call('GET', `/admin/v1/orgs/${seg(slug!)}/flows/${seg(id!)}/results${query({ from: opts.from, to: opts.to })}`),
  },
  'flow waits': {
    args: ['<slug>', '<flow-id>'],
    run: ([slug, id]) => call('GET', `/admin/v1/orgs/${seg(slug!)}/flows/${seg(id!)}/waits${query({ identity: opts.identity, limit: opts.limit })}`),
  },
  'flow simulate': {
    args: ['<slug>', '<flow-id>'],
    async run([slug, id]) {
      if (!opts.identity) usageError('flow simulate needs --identity (email:…, user_id:… or email-hash:…)');
      const body: Record<string, unknown> = { identity: opts.identity };
      if (opts.from !== undefined) body.from = opts.from;
      if (opts.to !== undefined) body.to = opts.to;
      if (opts.sql !== undefined) body.sql = readInput(opts.sql);
      if (opts.definition !== undefined) body.definition = parseJsonFile(opts.definition);
      await call('POST', `/admin/v1/orgs/${seg(slug!)}/flows/${seg(id!)}/simulate`, body);
    },
  },
  'contacts import': {
    args: ['<slug>', '<file.csv|file.ndjson>'],
    async run([slug, file]) {
      const type = file!.endsWith('.csv') ? 'text/csv' : /\.(ndjson|jsonl)$/.test(file!) ? 'application/x-ndjson' : undefined;
      if (!type) usageError('contacts import takes a .csv (with a header row) or .ndjson file');
      await call('POST', `/admin/v1/orgs/${seg(slug!)}/contacts/import`, readInput(file!), type);
    },
  },
  'token create': {
    args: ['<slug>'],
    async run([slug]) {
      if (!opts['created-by']) usageError('token create needs --created-by <e-mail>');
      await call('POST', `/admin/v1/orgs/${seg(slug!)}/tokens`, {
        createdBy: opts['created-by'],
        ...(opts.label !== undefined ? { label: opts.label } : {}),
        ...(opts['expires-at'] !== undefined ? { expiresAt: opts['expires-at'] } : {}),
      });
    },
  },
  'topic list': { args: ['<slug>'], run: ([slug]) => call('GET', `/admin/v1/orgs/${seg(slug!)}/topics`) },
  'topic put': {
    args: ['<slug>', '<topic>'],
    async run([slug, topic]) {
      if (opts.name === undefined || opts.default === undefined) usageError('topic put needs --name and --default subscribed|unsubscribed');
      await call('PUT', `/admin/v1/orgs/${seg(slug!)}/topics/${seg(topic!)}`, { name: opts.name, default: opts.default });
    },
  },
  'consent set': {
    args: ['<slug>'],
    async run([slug]) {
      if (opts.identity === undefined || opts.topic === undefined || opts.status === undefined) usageError('consent set needs --identity, --topic and --status');
      await call('PUT', `/admin/v1/orgs/${seg(slug!)}/contacts/consent`, { identity: opts.identity, topic: opts.topic, status: opts.status });
    },
  },
  'contacts erase': {
    args: ['<slug>'],
    async run([slug]) {
      if (opts.identity === undefined) usageError('contacts erase needs --identity email:<address> (or email-hash:, user_id:)');
      const body = { identity: opts.identity, ...(opts.suppress ? { suppress: true } : {}) };
      const receipt = JSON.parse(await call('POST', `/admin/v1/orgs/${seg(slug!)}/contacts/erase`, body, 'application/json', !opts.wait)) as { id: string };
      if (!opts.wait) return;
      for (;;) {
        const now = await call('GET', `/admin/v1/orgs/${seg(slug!)}/erasures/${seg(receipt.id)}`, undefined, 'application/json', false);
        if ((JSON.parse(now) as { status: string }).status === 'done') return void console.log(now);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    },
  },
  'erasure list': { args: ['<slug>'], run: ([slug]) => call('GET', `/admin/v1/orgs/${seg(slug!)}/erasures`) },
  'erasure get': { args: ['<slug>', '<erasure-id>'], run: ([slug, id]) => call('GET', `/admin/v1/orgs/${seg(slug!)}/erasures/${seg(id!)}`) },
  'trigger test': { args: ['<slug>', '<trigger>'], run: ([slug, trigger]) => triggerTest(slug!, trigger!) },
  'trigger diff': {
    args: ['<slug>', '<trigger>'],
    run: ([slug, trigger]) =>
      call('POST', `/admin/v1/orgs/${seg(slug!)}/triggers/${seg(trigger!)}/diff`, {
        sql: readOrUnusable(triggerSqlFile(slug!, trigger!), 'the trigger SQL'),
        ...(opts.from !== undefined ? { from: opts.from } : {}),
        ...(opts.to !== undefined ? { to: opts.to } : {}),
      }),
  },
  backup: { args: ['<dir>'], run: ([dir]) => backup(dir!) },
  restore: { args: ['<dir|file.tar>'], run: ([dir]) => restore(dir!) },
  'token list': { args: ['<slug>'], run: ([slug]) => call('GET', `/admin/v1/orgs/${seg(slug!)}/tokens`) },
  'token revoke': {
    args: ['<slug>'],
    async run([slug]) {
      const selectors = [opts.id, opts.last3, opts['created-by']].filter((v) => v !== undefined);
      if (selectors.length !== 1) usageError('token revoke needs exactly one of --id, --last3, --created-by');
      if (opts.id !== undefined) await call('DELETE', `/admin/v1/orgs/${seg(slug!)}/tokens/${seg(opts.id)}`);
      else await call('POST', `/admin/v1/orgs/${seg(slug!)}/tokens/revoke`, opts.last3 !== undefined ? { last3: opts.last3 } : { createdBy: opts['created-by'] });
    },
  },
};

if (opts.version) {
  console.log(serviceVersion());
} else if (opts.help || positionals.length === 0) {
  console.log(USAGE);
} else {
  // A command is one word (`quarantine`) or two (`org create`); the longest known name wins.
  const two = positionals.slice(0, 2).join(' ');
  const name = commands[two] ? two : commands[positionals[0]!] ? positionals[0]! : undefined;
  if (name === undefined) {
    const verbs = Object.keys(commands).filter((known) => known.startsWith(`${positionals[0]} `));
    const known = verbs.length > 0 ? `; ${positionals[0]} takes ${verbs.map((v) => v.split(' ')[1]).join(', ')}` : '';
    usageError(`unknown command '${two}'${known}`);
  }
  const command = commands[name]!;
  const args = positionals.slice(name.split(' ').length);
  if (args.length < command.args.length) usageError(`${name} needs ${command.args.join(' ')}`);
  if (args.length > command.args.length) usageError(`${name}: unexpected argument '${args[command.args.length]}'`);
  await command.run(args);
}
