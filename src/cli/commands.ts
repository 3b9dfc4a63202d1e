/**
 * Every command of `audiencectl`: its arguments, the options it takes, the admin API operations it
 * calls (OpenAPI operationIds: test/cli/coverage.test.ts fails when an admin operation has no command),
 * a one-line summary and an example. Help, completion scripts and the usage line are made from it.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { type AdminClient, EXIT, Exit, fail } from './client.js';
import { type CommandLine, type OptionName, UsageError } from './options.js';

export interface Context {
  opts: CommandLine['values'];
  client: AdminClient;
  /** An answer to stdout, as JSON or a table; `forPeople` reshapes it for the table (counts over time as rows). */
  print(answer: unknown, forPeople?: (answer: unknown) => unknown): void;
  /** The words after the program name, for the next page's command. */
  argv: string[];
}

export interface Command {
  /** One word (`quarantine`) or two (`org create`). */
  name: string;
  args: string[];
  options?: OptionName[];
  /** Admin API operations it calls; an offline command calls none. */
  operations: string[];
  summary: string;
  example: string;
  run(ctx: Context, args: string[]): Promise<void>;
}

/** A slug or id goes into the path as one segment, whatever it holds. */
const seg = encodeURIComponent;
const orgPath = (slug: string) => `/admin/v1/orgs/${seg(slug)}`;

function query(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined));
  return q.size > 0 ? `?${q}` : '';
}

function usage(message: string): never {
  throw new UsageError(message);
}

function readInput(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    return fail(EXIT.usage, `cannot read ${what} ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

/** A JSON file the command sends (a flow definition): exit 2 when it is not JSON. */
function jsonFile(file: string, what: string): unknown {
  try {
    return JSON.parse(readInput(file, what));
  } catch (error) {
    if (error instanceof Exit) throw error;
    return fail(EXIT.usage, `${file} is not JSON: ${(error as Error).message}`);
  }
}

/** A page of a list; when there is more, the command for the next page goes to stderr (stdout stays clean). */
async function page(ctx: Context, path: string): Promise<void> {
  const answer = await ctx.client.call('GET', path);
  ctx.print(answer);
  const { nextCursor } = answer as { nextCursor?: unknown };
  if (typeof nextCursor !== 'string') return;
  const args = ctx.argv.filter((arg, i, all) => !arg.startsWith('--cursor') && all[i - 1] !== '--cursor');
  const quoted = [...args, '--cursor', nextCursor].map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`));
  console.error(`next page: audiencectl ${quoted.join(' ')}`);
}

const get = (path: (args: string[], ctx: Context) => string, forPeople?: (answer: unknown) => unknown) => async (ctx: Context, args: string[]) =>
  ctx.print(await ctx.client.call('GET', path(args, ctx)), forPeople);
const listed = (path: (args: string[], ctx: Context) => string) => (ctx: Context, args: string[]) => page(ctx, path(args, ctx));
const post = (method: string, path: (args: string[]) => string, body?: (ctx: Context, args: string[]) => unknown) => async (ctx: Context, args: string[]) =>
  ctx.print(await ctx.client.call(method, path(args), body?.(ctx, args)));

// --- org settings from flags -----------------------------------------------------------------------------

const ORG_SETTINGS: OptionName[] = ['name', 'audience-api', 'rate-limit', 'currency', 'content-fields', 'not-found-status', 'retention', 'frequency-caps', 'quiet-hours', 'time-zone'];

function orgSettings(opts: Context['opts']): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (opts.name !== undefined) body.name = opts.name;
  if (opts['audience-api']) body.audienceApi = true;
  if (opts['no-audience-api']) body.audienceApi = false;
  if (opts['rate-limit'] !== undefined) body.rateLimit = numberOrText(opts['rate-limit']);
  if (opts.currency !== undefined) body.currencySymbol = opts.currency;
  if (opts['content-fields'] !== undefined) body.contentFields = opts['content-fields'].split(',').map((f) => f.trim());
  if (opts['not-found-status'] !== undefined) body.notFoundStatus = numberOrText(opts['not-found-status']);
  if (opts.retention !== undefined) body.retention = retention(opts.retention);
  if (opts['frequency-caps'] !== undefined) body.frequencyCaps = frequencyCaps(opts['frequency-caps']);
  if (opts['quiet-hours'] !== undefined) body.quietHours = quietHours(opts['quiet-hours']);
  if (opts['time-zone'] !== undefined) body.timeZone = opts['time-zone'];
  return body;
}

/** A number when it reads as one, else the text: the service names what is wrong with it. */
const numberOrText = (text: string): number | string => (/^-?\d+(\.\d+)?$/.test(text.trim()) ? Number(text) : text);

/** `21:00-08:00@contact` (or @Europe/Lisbon) as the org's quietHours; '' removes them. The service checks the values. */
function quietHours(text: string): Record<string, string> | null {
  if (text.trim() === '') return null;
  const match = /^\s*(\d\d:\d\d)-(\d\d:\d\d)@(\S+)\s*$/.exec(text);
  if (!match) usage('--quiet-hours takes start-end@zone, e.g. 21:00-08:00@contact or 22:00-07:00@Europe/Lisbon');
  return { start: match[1]!, end: match[2]!, timeZone: match[3]! };
}

/** `3/86400@email,10/604800` as the org's frequencyCaps ('' for none); the service checks the values. */
function frequencyCaps(text: string): Array<Record<string, number | string>> {
  return text
    .split(',')
    .filter((cap) => cap.trim() !== '')
    .map((cap) => {
      const match = /^\s*(\d+)\/(\d+)(?:@([a-z]+))?\s*$/.exec(cap);
      if (!match) usage('--frequency-caps takes maxSends/withinSeconds[@channel] items, e.g. 3/86400@email,10/604800');
      return { maxSends: Number(match[1]), withinSeconds: Number(match[2]), ...(match[3] ? { channel: match[3] } : {}) };
    });
}

/** `eventsDays=90,quarantineDays=7` as an object ('' for none); the service checks names and values. */
function retention(text: string): Record<string, number | string> {
  const pairs = text.split(',').filter((pair) => pair.trim() !== '');
  return Object.fromEntries(
    pairs.map((pair) => {
      const [name, value] = pair.split('=').map((part) => part.trim());
      if (!name || value === undefined || value === '') usage('--retention takes name=days pairs, e.g. eventsDays=90,quarantineDays=7');
      return [name, /^\d+$/.test(value) ? Number(value) : value];
    }),
  );
}

// --- triggers, segments, flows ------------------------------------------------------------------------------

/** The query's SQL: --sql, or its file in ./queries as the service lays them out. */
function sqlFile(opts: Context['opts'], slug: string, name: string): string {
  return opts.sql ?? join('queries', slug, `${name}.sql`);
}

/** `--from`/`--to` as epoch ms (trigger test), or undefined when not given. */
function timeOption(opts: Context['opts'], name: 'from' | 'to'): number | undefined {
  const text = opts[name];
  if (text === undefined) return undefined;
  const ms = /^\d{4}-\d{2}-\d{2}/.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(ms)) usage(`--${name} takes an ISO 8601 time, e.g. 2026-01-01T00:00:00Z`);
  return ms;
}

function windowBody(opts: Context['opts']): Record<string, unknown> {
  return { ...(opts.from !== undefined ? { from: opts.from } : {}), ...(opts.to !== undefined ? { to: opts.to } : {}) };
}

function limitOption(opts: Context['opts']): Record<string, number | string> {
  return opts.limit === undefined ? {} : { limit: numberOrText(opts.limit) };
}

/** The live version's SQL, from the service. */
async function storedSql(ctx: Context, slug: string, trigger: string): Promise<string> {
  const found = (await ctx.client.call('GET', `${orgPath(slug)}/triggers/${seg(trigger)}`)) as { sql: string | null; liveVersion: number | null };
  if (found.liveVersion === null || found.sql === null) fail(EXIT.refused, `trigger ${slug}/${trigger} has no live version (audiencectl trigger get ${slug} ${trigger} says why)`);
  return found.sql;
}

/** Offline: the trigger over fixture events, against the rows expected (src/reactions/triggers/trigger-test.ts). */
async function triggerTest(ctx: Context, slug: string, trigger: string): Promise<void> {
  const { opts } = ctx;
  if (opts.events === undefined || opts.expect === undefined) usage('trigger test needs --events fixture.jsonl and --expect expected.json');
  if (opts.stored && opts.sql !== undefined) usage('trigger test takes --sql or --stored, not both');
  const from = timeOption(opts, 'from');
  const to = timeOption(opts, 'to');
  if (from !== undefined && to !== undefined && from >= to) usage('--from must be before --to: the window is (from, to]');
  const fixture = readInput(opts.events, 'the fixture');
  const expectedText = readInput(opts.expect, 'the expected rows');
  const sql = opts.stored ? await storedSql(ctx, slug, trigger) : readInput(sqlFile(opts, slug, trigger), 'the trigger SQL');
  // Loaded here, not at start: DuckDB and the compaction modules cost every other command's first call.
  const { ExpectedRefused, parseExpected } = await import('../reactions/triggers/expected-rows.js');
  const { FixtureRefused } = await import('../reactions/triggers/fixture-org.js');
  const { runTriggerTest } = await import('../reactions/triggers/trigger-test.js');
  try {
    const expected = parseExpected(expectedText);
    const result = await runTriggerTest({ org: slug, trigger, sql, fixture, expected, ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}) });
    console.log(result.lines.join('\n'));
    if (!result.passed) throw new Exit(EXIT.refused);
  } catch (error) {
    if (error instanceof ExpectedRefused) fail(EXIT.usage, `${opts.expect}: ${error.message}`);
    if (error instanceof FixtureRefused) fail(EXIT.usage, `${opts.events} ${error.message}`);
    throw error;
  }
}

/** list, get, put, versions, preview (and validate) for triggers and segments alike. */
function queryCommands(kind: 'trigger' | 'segment'): Command[] {
  const Kind = kind === 'trigger' ? 'Trigger' : 'Segment';
  const plural = `${kind}s`;
  const example = kind === 'trigger' ? 'booking_completed' : 'vip';
  const path = (slug: string, name: string) => `${orgPath(slug)}/${plural}/${seg(name)}`;
  return [
    {
      name: `${kind} list`,
      args: ['<slug>'],
      operations: [`list${Kind}s`],
      summary: `the org's ${plural}: status, live and latest version`,
      example: `audiencectl ${kind} list acme`,
      run: get(([slug]) => `${orgPath(slug!)}/${plural}`),
    },
    {
      name: `${kind} get`,
      args: ['<slug>', '<name>'],
      operations: [`get${Kind}`],
      summary: `one ${kind}: its live SQL, status and why a version was refused`,
      example: `audiencectl ${kind} get acme ${example}`,
      run: get(([slug, name]) => path(slug!, name!)),
    },
    {
      name: `${kind} put`,
      args: ['<slug>', '<name>'],
      options: ['sql'],
      operations: [`save${Kind}`],
      summary: `save the ${kind}'s SQL (--sql file, default queries/<slug>/<name>.sql); a refused version leaves the live one live`,
      example: `audiencectl ${kind} put acme ${example} --sql ${example}.sql`,
      run: post('PUT', ([slug, name]) => path(slug!, name!), ({ opts }, [slug, name]) => ({ sql: readInput(sqlFile(opts, slug!, name!), `the ${kind} SQL`) })),
    },
    {
      name: `${kind} validate`,
      args: ['<slug>', '<name>'],
      options: ['sql'],
      operations: [`preview${Kind}`],
      summary: `check SQL without saving it: exit 0 when the service would take it, 1 with the reason when not`,
      example: `audiencectl ${kind} validate acme ${example} --sql ${example}.sql`,
      async run(ctx, [slug, name]) {
        const sql = readInput(sqlFile(ctx.opts, slug!, name!), `the ${kind} SQL`);
        const answer = (await ctx.client.call('POST', `${path(slug!, name!)}/preview`, { sql, limit: 1 })) as { window: unknown };
        ctx.print({ valid: true, [kind]: name, window: answer.window });
      },
    },
    {
      name: `${kind} preview`,
      args: ['<slug>', '<name>'],
      options: ['sql', 'from', 'to', 'limit'],
      operations: [`preview${Kind}`],
      summary: `run the ${kind} (or --sql) over a window (default the last 24 h) without saving; its rows`,
      example: `audiencectl ${kind} preview acme ${example} --limit 20`,
      run: post('POST', ([slug, name]) => `${path(slug!, name!)}/preview`, ({ opts }, [slug, name]) => ({
        ...(opts.sql !== undefined ? { sql: readInput(sqlFile(opts, slug!, name!), `the ${kind} SQL`) } : {}),
        ...windowBody(opts),
        ...limitOption(opts),
      })),
    },
    {
      name: `${kind} versions`,
      args: ['<slug>', '<name>'],
      options: ['limit', 'cursor'],
      operations: [`list${Kind}Versions`],
      summary: `every version, newest first: hash, SQL, why it was refused${kind === 'trigger' ? ', rows decided and sends fired' : ''}`,
      example: `audiencectl ${kind} versions acme ${example}`,
      run: listed(([slug, name], { opts }) => `${path(slug!, name!)}/versions${query({ limit: opts.limit, cursor: opts.cursor })}`),
    },
  ];
}

/** Counts over time (GET …/activity) as a table: a row per bucket, a column per series. */
function overTime(times: string[], columns: Array<[string, number[]]>): Array<Record<string, string | number>> {
  return times.map((time, i) => Object.fromEntries([['time', time], ...columns.map(([name, counts]) => [name, counts[i] ?? 0])]));
}

interface Series {
  total: number;
  counts: number[];
}

function eventsActivityTable(answer: unknown): unknown {
  const a = answer as { range: unknown; bucket: string; times: string[]; types: Array<Series & { eventType: string }>; otherTypes: Series & { types: number }; stored: Series; quarantined: Series };
  const columns: Array<[string, number[]]> = [['stored', a.stored.counts], ['quarantined', a.quarantined.counts], ...a.types.map((t): [string, number[]] => [t.eventType, t.counts])];
  if (a.otherTypes.types > 0) columns.push([`${a.otherTypes.types} other types`, a.otherTypes.counts]);
  return { range: a.range, bucket: a.bucket, stored: a.stored.total, quarantined: a.quarantined.total, buckets: overTime(a.times, columns) };
}

function flowActivityTable(answer: unknown): unknown {
  const a = answer as { range: unknown; bucket: string; times: string[]; sends: Array<Series & { status: string }>; funnel: { skipped: Array<{ reason: string; atStep: boolean; count: number }> } & Record<string, unknown> };
  const skipped = a.funnel.skipped.map((s) => `${s.reason}${s.atStep ? ' (at a step)' : ''} ${s.count}`).join(', ') || '-';
  return { range: a.range, bucket: a.bucket, funnel: { ...a.funnel, skipped }, sends: overTime(a.times, a.sends.map((s): [string, number[]] => [s.status, s.counts])) };
}

const flowPath = (slug: string, id: string) => `${orgPath(slug)}/flows/${seg(id)}`;

// --- the table ------------------------------------------------------------------------------------------------

export const COMMANDS: Command[] = [
  {
    name: 'org create',
    args: [],
    options: ['slug', ...ORG_SETTINGS],
    operations: ['createOrg'],
    summary: 'a new org; the answer holds its partner credentials, shown this once',
    example: 'audiencectl org create --slug acme --name Acme --audience-api > acme.json',
    async run(ctx) {
      if (ctx.opts.slug === undefined) usage('org create needs --slug <slug>');
      ctx.print(await ctx.client.call('POST', '/admin/v1/orgs', { slug: ctx.opts.slug, name: ctx.opts.name ?? ctx.opts.slug, ...orgSettings(ctx.opts) }));
    },
  },
  { name: 'org list', args: [], operations: ['listOrgs'], summary: 'every org', example: 'audiencectl org list', run: get(() => '/admin/v1/orgs') },
  { name: 'org get', args: ['<slug>'], operations: ['getOrg'], summary: "one org's settings", example: 'audiencectl org get acme', run: get(([slug]) => orgPath(slug!)) },
  {
    name: 'org update',
    args: ['<slug>'],
    options: [...ORG_SETTINGS, 'no-audience-api'],
    operations: ['updateOrg'],
    summary: "change an org's settings (only those given; '' clears retention, caps and quiet hours)",
    example: 'audiencectl org update acme --rate-limit 100 --quiet-hours 21:00-08:00@contact',
    run: post('PATCH', ([slug]) => orgPath(slug!), ({ opts }) => orgSettings(opts)),
  },
  {
    name: 'org delete',
    args: ['<slug>'],
    options: ['yes'],
    operations: ['deleteOrg'],
    summary: 'the org and all its data, for good (the slug is never reused); needs --yes',
    example: 'audiencectl org delete acme --yes',
    async run(ctx, [slug]) {
      if (!ctx.opts.yes) usage('org delete needs --yes: it deletes the org and all its data');
      ctx.print(await ctx.client.call('DELETE', orgPath(slug!)));
    },
  },
  {
    name: 'org rotate',
    args: ['<slug>', '<staging|production>'],
    operations: ['rotateOrgCredentials'],
    summary: 'a new partner secret (the old one stops at once)',
    example: 'audiencectl org rotate acme production',
    run: post('POST', ([slug, env]) => `${orgPath(slug!)}/credentials/${seg(env!)}/rotate`),
  },
  {
    name: 'write-key rotate',
    args: ['<slug>', '<staging|production>'],
    operations: ['rotateWriteKey'],
    summary: 'a new write key for Segment / RudderStack / Jitsu SDKs (shown once; the old one stops at once)',
    example: 'audiencectl write-key rotate acme production',
    run: post('POST', ([slug, env]) => `${orgPath(slug!)}/credentials/${seg(env!)}/write-key/rotate`),
  },
  {
    name: 'write-key revoke',
    args: ['<slug>', '<staging|production>'],
    operations: ['revokeWriteKey'],
    summary: "stop the environment's write key",
    example: 'audiencectl write-key revoke acme staging',
    run: post('DELETE', ([slug, env]) => `${orgPath(slug!)}/credentials/${seg(env!)}/write-key`),
  },
  {
    name: 'webhook-secret',
    args: ['<slug>'],
    operations: ['getWebhookSecret'],
    summary: "the key webhook receivers verify the org's signatures with",
    example: 'audiencectl webhook-secret acme',
    run: get(([slug]) => `${orgPath(slug!)}/webhook-secret`),
  },
  {
    name: 'token create',
    args: ['<slug>'],
    options: ['created-by', 'label', 'expires-at'],
    operations: ['createToken'],
    summary: 'an Audience API token (shown this once)',
    example: 'audiencectl token create acme --created-by ops@acme.com --label web',
    async run(ctx, [slug]) {
      const { opts } = ctx;
      if (!opts['created-by']) usage('token create needs --created-by <e-mail>');
      const body = { createdBy: opts['created-by'], ...(opts.label !== undefined ? { label: opts.label } : {}), ...(opts['expires-at'] !== undefined ? { expiresAt: opts['expires-at'] } : {}) };
      ctx.print(await ctx.client.call('POST', `${orgPath(slug!)}/tokens`, body));
    },
  },
  { name: 'token list', args: ['<slug>'], operations: ['listTokens'], summary: "the org's tokens (never their secrets)", example: 'audiencectl token list acme', run: get(([slug]) => `${orgPath(slug!)}/tokens`) },
  {
    name: 'token revoke',
    args: ['<slug>'],
    options: ['id', 'last3', 'created-by'],
    operations: ['revokeToken', 'revokeTokensBySelector'],
    summary: 'stop tokens: one by --id, or those matching --last3 or --created-by',
    example: 'audiencectl token revoke acme --last3 x9Q',
    async run(ctx, [slug]) {
      const { opts } = ctx;
      const selectors = [opts.id, opts.last3, opts['created-by']].filter((v) => v !== undefined);
      if (selectors.length !== 1) usage('token revoke needs exactly one of --id, --last3, --created-by');
      if (opts.id !== undefined) ctx.print(await ctx.client.call('DELETE', `${orgPath(slug!)}/tokens/${seg(opts.id)}`));
      else ctx.print(await ctx.client.call('POST', `${orgPath(slug!)}/tokens/revoke`, opts.last3 !== undefined ? { last3: opts.last3 } : { createdBy: opts['created-by'] }));
    },
  },
  {
    name: 'events types',
    args: ['<slug>'],
    options: ['env', 'limit', 'cursor'],
    operations: ['listEventTypes'],
    summary: 'the event types the org has sent: counts and when last seen',
    example: 'audiencectl events types acme',
    run: listed(([slug], { opts }) => `${orgPath(slug!)}/events/types${query({ env: opts.env, limit: opts.limit, cursor: opts.cursor })}`),
  },
  {
    name: 'events samples',
    args: ['<slug>'],
    options: ['env', 'event-type', 'limit', 'cursor'],
    operations: ['listEventSamples'],
    summary: 'the latest events as stored, newest first',
    example: 'audiencectl events samples acme --event-type custom_booking_completed --limit 5',
    run: listed(([slug], { opts }) => `${orgPath(slug!)}/events/samples${query({ env: opts.env, eventType: opts['event-type'], limit: opts.limit, cursor: opts.cursor })}`),
  },
  {
    name: 'events activity',
    args: ['<slug>'],
    options: ['env', 'from', 'to', 'bucket'],
    operations: ['getEventActivity'],
    summary: 'events stored per type, and quarantined, per minute, hour or day (default: the last 24 h by the hour)',
    example: 'audiencectl events activity acme --bucket day --from 2026-01-01T00:00:00Z',
    run: get(([slug], { opts }) => `${orgPath(slug!)}/events/activity${query({ env: opts.env, from: opts.from, to: opts.to, bucket: opts.bucket })}`, eventsActivityTable),
  },
  {
    name: 'events pending',
    args: ['<slug>'],
    options: ['env', 'limit', 'cursor'],
    operations: ['listPendingEvents'],
    summary: 'accepted events held until an identify names their clientId, oldest first, with their age',
    example: 'audiencectl events pending acme',
    run: listed(([slug], { opts }) => `${orgPath(slug!)}/events/pending${query({ env: opts.env, limit: opts.limit, cursor: opts.cursor })}`),
  },
  {
    name: 'quarantine',
    args: ['<slug>'],
    options: ['env', 'limit', 'cursor'],
    operations: ['listQuarantine'],
    summary: 'events refused after they were accepted, with the reason',
    example: 'audiencectl quarantine acme --limit 20',
    run: listed(([slug], { opts }) => `${orgPath(slug!)}/quarantine${query({ env: opts.env, limit: opts.limit, cursor: opts.cursor })}`),
  },
  {
    name: 'contact lookup',
    args: ['<slug>'],
    options: ['identity'],
    operations: ['getOrgContact'],
    summary: "one contact's profile, every field, and its consent per topic (what the Audience API answers, and more)",
    example: 'audiencectl contact lookup acme --identity email:ada@example.com',
    async run(ctx, [slug]) {
      if (ctx.opts.identity === undefined) usage('contact lookup needs --identity email:<address> (or user_id:, email-hash:)');
      ctx.print(await ctx.client.call('GET', `${orgPath(slug!)}/contacts${query({ identity: ctx.opts.identity })}`));
    },
  },
  {
    name: 'contact import',
    args: ['<slug>', '<file.csv|file.ndjson>'],
    operations: ['importContacts'],
    summary: 'contacts and their traits from a CSV (header row) or NDJSON file',
    example: 'audiencectl contact import acme contacts.csv',
    async run(ctx, [slug, file]) {
      const type = file!.endsWith('.csv') ? 'text/csv' : /\.(ndjson|jsonl)$/.test(file!) ? 'application/x-ndjson' : undefined;
      if (!type) usage('contact import takes a .csv (with a header row) or .ndjson file');
      ctx.print(await ctx.client.call('POST', `${orgPath(slug!)}/contacts/import`, readInput(file!, 'the contacts'), type));
    },
  },
  {
    name: 'contact consent',
    args: ['<slug>'],
    options: ['identity', 'topic', 'status'],
    operations: ['putContactConsent'],
    summary: "set a contact's subscription to a topic",
    example: 'audiencectl contact consent acme --identity email:ada@example.com --topic news --status unsubscribed',
    async run(ctx, [slug]) {
      const { opts } = ctx;
      if (opts.identity === undefined || opts.topic === undefined || opts.status === undefined) usage('contact consent needs --identity, --topic and --status');
      ctx.print(await ctx.client.call('PUT', `${orgPath(slug!)}/contacts/consent`, { identity: opts.identity, topic: opts.topic, status: opts.status }));
    },
  },
  {
    name: 'contact erase',
    args: ['<slug>'],
    options: ['identity', 'suppress', 'wait'],
    operations: ['eraseContact', 'getErasure'],
    summary: 'every row of the contact, for good; --suppress keeps its future events out; --wait prints the receipt once done',
    example: 'audiencectl contact erase acme --identity email:ada@example.com --wait',
    async run(ctx, [slug]) {
      const { opts } = ctx;
      if (opts.identity === undefined) usage('contact erase needs --identity email:<address> (or email-hash:, user_id:)');
      const receipt = (await ctx.client.call('POST', `${orgPath(slug!)}/contacts/erase`, { identity: opts.identity, ...(opts.suppress ? { suppress: true } : {}) })) as { id: string };
      if (!opts.wait) return ctx.print(receipt);
      for (;;) {
        const now = (await ctx.client.call('GET', `${orgPath(slug!)}/erasures/${seg(receipt.id)}`)) as { status: string };
        if (now.status === 'done') return ctx.print(now);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    },
  },
  { name: 'erasure list', args: ['<slug>'], operations: ['listErasures'], summary: "the org's erasure receipts", example: 'audiencectl erasure list acme', run: get(([slug]) => `${orgPath(slug!)}/erasures`) },
  {
    name: 'erasure get',
    args: ['<slug>', '<erasure-id>'],
    operations: ['getErasure'],
    summary: 'one erasure receipt: what was removed, and when',
    example: 'audiencectl erasure get acme era_…',
    run: get(([slug, id]) => `${orgPath(slug!)}/erasures/${seg(id!)}`),
  },
  { name: 'topic list', args: ['<slug>'], operations: ['listTopics'], summary: 'subscription topics', example: 'audiencectl topic list acme', run: get(([slug]) => `${orgPath(slug!)}/topics`) },
  {
    name: 'topic put',
    args: ['<slug>', '<topic>'],
    options: ['name', 'default'],
    operations: ['putTopic'],
    summary: 'create or change a topic',
    example: "audiencectl topic put acme news --name 'Newsletter' --default unsubscribed",
    async run(ctx, [slug, topic]) {
      if (ctx.opts.name === undefined || ctx.opts.default === undefined) usage('topic put needs --name and --default subscribed|unsubscribed');
      ctx.print(await ctx.client.call('PUT', `${orgPath(slug!)}/topics/${seg(topic!)}`, { name: ctx.opts.name, default: ctx.opts.default }));
    },
  },
  ...queryCommands('trigger'),
  {
    name: 'trigger diff',
    args: ['<slug>', '<trigger>'],
    options: ['sql', 'from', 'to'],
    operations: ['diffTrigger'],
    summary: 'the contacts the SQL (default queries/<slug>/<trigger>.sql) adds and removes against the live version',
    example: 'audiencectl trigger diff acme booking_completed --sql booking_completed.sql',
    run: post('POST', ([slug, trigger]) => `${orgPath(slug!)}/triggers/${seg(trigger!)}/diff`, ({ opts }, [slug, trigger]) => ({
      sql: readInput(sqlFile(opts, slug!, trigger!), 'the trigger SQL'),
      ...windowBody(opts),
    })),
  },
  {
    name: 'trigger test',
    args: ['<slug>', '<trigger>'],
    options: ['events', 'expect', 'sql', 'stored', 'from', 'to'],
    operations: [],
    summary: 'offline: the SQL over fixture events in an in-memory database; exit 0 when the rows are the expected ones, 1 with the diff',
    example: 'audiencectl trigger test acme booking_completed --events fixture.jsonl --expect expected.json',
    run: (ctx, [slug, trigger]) => triggerTest(ctx, slug!, trigger!),
  },
  ...queryCommands('segment'),
  { name: 'flow list', args: ['<slug>'], operations: ['listFlows'], summary: "the org's flows and their status", example: 'audiencectl flow list acme', run: get(([slug]) => `${orgPath(slug!)}/flows`) },
  { name: 'flow get', args: ['<slug>', '<flow-id>'], operations: ['getFlow'], summary: 'one flow: definition, status, last run', example: 'audiencectl flow get acme welcome', run: get(([slug, id]) => flowPath(slug!, id!)) },
  {
    name: 'flow create',
    args: ['<slug>'],
    options: ['file'],
    operations: ['createFlow'],
    summary: 'a new flow, a draft, from a JSON definition (schemas/flow.schema.json)',
    example: 'audiencectl flow create acme --file welcome.json',
    async run(ctx, [slug]) {
      if (ctx.opts.file === undefined) usage('flow create needs --file <flow.json>');
      ctx.print(await ctx.client.call('POST', `${orgPath(slug!)}/flows`, jsonFile(ctx.opts.file, 'the flow definition')));
    },
  },
  {
    name: 'flow put',
    args: ['<slug>', '<flow-id>'],
    options: ['file'],
    operations: ['replaceFlow'],
    summary: "replace a flow's definition (its id must stay the same)",
    example: 'audiencectl flow put acme welcome --file welcome.json',
    async run(ctx, [slug, id]) {
      if (ctx.opts.file === undefined) usage('flow put needs --file <flow.json>');
      ctx.print(await ctx.client.call('PUT', flowPath(slug!, id!), jsonFile(ctx.opts.file, 'the flow definition')));
    },
  },
  {
    name: 'flow start',
    args: ['<slug>', '<flow-id>'],
    operations: ['startFlow'],
    summary: 'make the flow live (its definition is checked again first)',
    example: 'audiencectl flow start acme welcome',
    run: post('POST', ([slug, id]) => `${flowPath(slug!, id!)}/start`),
  },
  { name: 'flow pause', args: ['<slug>', '<flow-id>'], operations: ['pauseFlow'], summary: 'stop sending; start resumes where it stopped', example: 'audiencectl flow pause acme welcome', run: post('POST', ([slug, id]) => `${flowPath(slug!, id!)}/pause`) },
  {
    name: 'flow run',
    args: ['<slug>', '<flow-id>'],
    operations: ['runFlow'],
    summary: 'run a live triggered flow now, once, instead of waiting for its schedule; it sends for real',
    example: 'audiencectl flow run acme welcome',
    run: post('POST', ([slug, id]) => `${flowPath(slug!, id!)}/run`),
  },
  {
    name: 'flow preview',
    args: ['<slug>', '<flow-id>'],
    options: ['variant'],
    operations: ['getFlow', 'previewFlowMessage'],
    summary: "the flow's message rendered for the first row its trigger returns over the last 24 h; nothing is sent",
    example: 'audiencectl flow preview acme welcome',
    async run(ctx, [slug, id]) {
      const { definition } = (await ctx.client.call('GET', flowPath(slug!, id!))) as { definition: Record<string, unknown> };
      const { trigger, message, branches, experiment, name } = definition;
      if (trigger === undefined || (message === undefined && branches === undefined)) {
        fail(EXIT.refused, `flow ${id} has no trigger and message to preview (a flow with steps: preview each step's message in the console)`);
      }
      const body = { trigger, message, ...(branches ? { branches } : {}), ...(experiment ? { experiment } : {}), flowName: name, ...(ctx.opts.variant ? { variant: ctx.opts.variant } : {}) };
      ctx.print(await ctx.client.call('POST', `${orgPath(slug!)}/flows/message-preview`, body));
    },
  },
  {
    name: 'flow simulate',
    args: ['<slug>', '<flow-id>'],
    options: ['identity', 'from', 'to', 'sql', 'definition'],
    operations: ['simulateFlow'],
    summary: 'what the flow would do now for one contact (--sql, --definition: unsaved versions); nothing sent or recorded',
    example: 'audiencectl flow simulate acme welcome --identity email:ada@example.com',
    async run(ctx, [slug, id]) {
      const { opts } = ctx;
      if (!opts.identity) usage('flow simulate needs --identity (email:…, user_id:… or email-hash:…)');
      const body: Record<string, unknown> = { identity: opts.identity, ...windowBody(opts) };
      if (opts.sql !== undefined) body.sql = readInput(opts.sql, 'the trigger SQL');
      if (opts.definition !== undefined) body.definition = jsonFile(opts.definition, 'the flow definition');
      ctx.print(await ctx.client.call('POST', `${flowPath(slug!, id!)}/simulate`, body));
    },
  },
  {
    name: 'flow sends',
    args: ['<slug>', '<flow-id>'],
    options: ['status', 'identity', 'limit', 'cursor'],
    operations: ['listFlowSends'],
    summary: "the flow's sends, newest first: status, attempts, last error",
    example: 'audiencectl flow sends acme welcome --status dead',
    run: listed(([slug, id], { opts }) => `${flowPath(slug!, id!)}/sends${query({ status: opts.status, identity: opts.identity, limit: opts.limit, cursor: opts.cursor })}`),
  },
  {
    name: 'flow decisions',
    args: ['<slug>', '<flow-id>'],
    options: ['identity', 'limit', 'cursor'],
    operations: ['listFlowDecisions'],
    summary: 'what the flow decided for each trigger row: sent, or skipped and why',
    example: 'audiencectl flow decisions acme welcome --identity email:ada@example.com',
    run: listed(([slug, id], { opts }) => `${flowPath(slug!, id!)}/decisions${query({ identity: opts.identity, limit: opts.limit, cursor: opts.cursor })}`),
  },
  {
    name: 'flow results',
    args: ['<slug>', '<flow-id>'],
    options: ['from', 'to'],
    operations: ['getFlowResults'],
    summary: 'entered, sent, delivered and converted, per variant',
    example: 'audiencectl flow results acme welcome --from 2026-01-01T00:00:00Z',
    run: get(([slug, id], { opts }) => `${flowPath(slug!, id!)}/results${query({ from: opts.from, to: opts.to })}`),
  },
  {
    name: 'flow activity',
    args: ['<slug>', '<flow-id>'],
    options: ['from', 'to', 'bucket'],
    operations: ['getFlowActivity'],
    summary: 'sends per status over time, and the funnel: entered, decided, sent, delivered, skipped by reason',
    example: 'audiencectl flow activity acme welcome --bucket hour',
    run: get(([slug, id], { opts }) => `${flowPath(slug!, id!)}/activity${query({ from: opts.from, to: opts.to, bucket: opts.bucket })}`, flowActivityTable),
  },
  {
    name: 'flow waits',
    args: ['<slug>', '<flow-id>'],
    options: ['identity', 'limit'],
    operations: ['listFlowWaits'],
    summary: 'entries still in the flow: the step, what it waits for, until when',
    example: 'audiencectl flow waits acme onboarding',
    run: get(([slug, id], { opts }) => `${flowPath(slug!, id!)}/waits${query({ identity: opts.identity, limit: opts.limit })}`),
  },
  {
    name: 'flow occurrences',
    args: ['<slug>', '<flow-id>'],
    options: ['limit', 'cursor'],
    operations: ['listFlowOccurrences'],
    summary: "a scheduled or recurring flow's occurrences: status, members, progress",
    example: 'audiencectl flow occurrences acme weekly_digest',
    run: listed(([slug, id], { opts }) => `${flowPath(slug!, id!)}/occurrences${query({ limit: opts.limit, cursor: opts.cursor })}`),
  },
  {
    name: 'backup',
    args: ['<dir>'],
    options: ['org'],
    operations: ['getBackup'],
    summary: 'a consistent copy of a running service (or one org), into a new directory',
    example: 'audiencectl backup backups/2026-11-26',
    async run(ctx, [dir]) {
      if (existsSync(dir!) && readdirSync(dir!).length > 0) fail(EXIT.usage, `${dir} is not empty: a backup goes into a new or empty directory`);
      const res = await ctx.client.fetch('GET', `/admin/v1/backup${query({ org: ctx.opts.org })}`);
      if (!res.ok || !res.body) ctx.client.refused(res.status, await res.json().catch(() => null));
      mkdirSync(dir!, { recursive: true });
      const { ArchiveRefused, unpackBackup } = await import('../backup/unpack.js');
      await unpackBackup(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), dir!).catch((error: Error) =>
        fail(
          EXIT.unavailable,
          error instanceof ArchiveRefused ? `${ctx.client.baseUrl} sent an archive that is not a backup (${error.message}); delete ${dir}` : `the backup stream broke off (${error.message}): ${dir} is incomplete; take the backup again`,
        ),
      );
      const manifest = join(dir!, 'manifest.json');
      if (!existsSync(manifest)) fail(EXIT.unavailable, `the backup ended before its manifest: ${dir} is incomplete; take the backup again`);
      ctx.print(JSON.parse(readFileSync(manifest, 'utf8')));
    },
  },
  {
    name: 'restore',
    args: ['<dir|file.tar>'],
    options: ['reset-log-positions'],
    operations: [],
    summary: 'offline, service stopped: a backup into a fresh DATA_DIR (reads DATA_DIR, QUERIES_DIR and NATS_URL like the service)',
    example: 'DATA_DIR=/var/lib/audience audiencectl restore backups/2026-11-26',
    async run(ctx, [dir]) {
      const { ConfigError, readConfig } = await import('../core/config.js');
      const { RestoreError, restoreBackup } = await import('../backup/restore.js');
      const { DataDirInUseError } = await import('../core/data-dir-lock.js');
      try {
        ctx.print(await restoreBackup(dir!, readConfig(process.env), { resetLogPositions: ctx.opts['reset-log-positions'] === true }));
      } catch (error) {
        if (error instanceof ConfigError || error instanceof RestoreError || error instanceof DataDirInUseError) fail(EXIT.refused, error.message);
        throw error;
      }
    },
  },
];
