/**
 * `audiencectl trigger …`: the commands triggers share with segments, a diff against the live
 * version, and the offline test over fixture events.
 */
import { EXIT, Exit, fail } from '../client.js';
import { printOut } from '../terminal-text.js';
import { type Command, type Context, orgPath, post, readInput, seg, usage, windowBody } from './command.js';
import { queryCommands, sqlFile } from './queries.js';

/** `--from`/`--to` as epoch ms (trigger test), or undefined when not given. */
function timeOption(opts: Context['opts'], name: 'from' | 'to'): number | undefined {
  const text = opts[name];
  if (text === undefined) return undefined;
  const ms = /^\d{4}-\d{2}-\d{2}/.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(ms)) usage(`--${name} takes an ISO 8601 time, e.g. 2026-01-01T00:00:00Z`);
  return ms;
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
  const { ExpectedRefused, parseExpected } = await import('../../reactions/triggers/expected-rows.js');
  const { FixtureRefused } = await import('../../reactions/triggers/fixture-org.js');
  const { runTriggerTest } = await import('../../reactions/triggers/trigger-test.js');
  try {
    const expected = parseExpected(expectedText);
    const result = await runTriggerTest({ org: slug, trigger, sql, fixture, expected, ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}) });
    printOut(result.lines.join('\n'));
    if (!result.passed) throw new Exit(EXIT.refused);
  } catch (error) {
    if (error instanceof ExpectedRefused) fail(EXIT.usage, `${opts.expect}: ${error.message}`);
    if (error instanceof FixtureRefused) fail(EXIT.usage, `${opts.events} ${error.message}`);
    throw error;
  }
}

export const TRIGGER_COMMANDS: Command[] = [
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
];
