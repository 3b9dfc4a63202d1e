/**
 * Every option of the CLI, once: parsing (node:util parseArgs, strict), each command's help and the
 * completion scripts read this table. A command lists the options it takes (commands.ts); any other
 * is refused as a usage error.
 */
import { parseArgs } from 'node:util';

export interface OptionSpec {
  type: 'string' | 'boolean';
  /** How the value is written in help, e.g. `<file.sql>`. */
  value?: string;
  help: string;
}

export const OPTIONS = {
  slug: { type: 'string', value: '<slug>', help: "the new org's slug: 2 to 40 of a-z, 0-9 and _, starting with a letter; never reused" },
  name: { type: 'string', value: '<text>', help: 'a display name' },
  save: { type: 'string', value: '<file.json>', help: 'write the answer to this new file (mode 0600); refused if it exists' },
  'audience-api': { type: 'boolean', help: 'turn the Audience API (contact lookups) on' },
  'no-audience-api': { type: 'boolean', help: 'turn the Audience API off' },
  'rate-limit': { type: 'string', value: '<n>', help: 'Audience API lookups per second' },
  currency: { type: 'string', value: '<symbol>', help: 'the currency symbol shown with amounts' },
  'content-fields': { type: 'string', value: '<a,b,c>', help: 'profile fields the Audience API answers' },
  'not-found-status': { type: 'string', value: '<404|400>', help: 'the status of a lookup that finds nobody' },
  retention: { type: 'string', value: '<eventsDays=90,…>', help: "retention overrides; '' drops them" },
  'frequency-caps': { type: 'string', value: '<3/86400@email,…>', help: "caps per contact: maxSends/withinSeconds[@channel]; '' for none" },
  'quiet-hours': { type: 'string', value: '<21:00-08:00@contact>', help: "no message in that window (each contact's zone, or one); '' for none" },
  'time-zone': { type: 'string', value: '<Europe/Lisbon>', help: "the org's time zone" },
  default: { type: 'string', value: '<subscribed|unsubscribed>', help: "a topic's status for contacts who never chose" },
  topic: { type: 'string', value: '<topic>', help: 'a subscription topic' },
  env: { type: 'string', value: '<production|staging>', help: 'the environment (default production)' },
  'event-type': { type: 'string', value: '<custom_x>', help: 'only events of this type' },
  limit: { type: 'string', value: '<n>', help: 'at most this many items' },
  cursor: { type: 'string', value: '<cursor>', help: 'the page after this cursor (the last answer’s nextCursor)' },
  status: { type: 'string', value: '<status>', help: 'only this status' },
  identity: { type: 'string', value: '<email:ada@example.com>', help: 'a contact: email:…, user_id:… or email-hash:…' },
  'created-by': { type: 'string', value: '<e-mail>', help: 'who the token is for' },
  label: { type: 'string', value: '<text>', help: 'a label to recognize the token by' },
  'expires-at': { type: 'string', value: '<2026-12-31T00:00:00Z>', help: 'when the token stops working' },
  id: { type: 'string', value: '<tok_…>', help: 'the token id' },
  last3: { type: 'string', value: '<x9Q>', help: "the token's last three characters" },
  org: { type: 'string', value: '<slug>', help: 'one org only' },
  sql: { type: 'string', value: '<file.sql>', help: 'the SQL, from this file' },
  file: { type: 'string', value: '<flow.json>', help: 'the flow definition, from this JSON file' },
  schema: { type: 'string', value: '<schema.json>', help: 'a JSON Schema (draft 2020-12), from this file' },
  mode: { type: 'string', value: '<observe|enforce>', help: 'observe: store and count violations; enforce: quarantine violating events' },
  url: { type: 'string', value: '<https://…>', help: 'where the webhook goes' },
  threshold: { type: 'string', value: '<0.05>', help: 'the quarantined share above which it alerts' },
  'min-events': { type: 'string', value: '<100>', help: 'events in the window before it may alert (default 100)' },
  'window-seconds': { type: 'string', value: '<300>', help: 'the window, in seconds (default 300)' },
  'partner-id': { type: 'string', value: '<p_…>', help: "a partner's id (its secret in AUDIENCE_PARTNER_SECRET)" },
  'write-key': { type: 'string', value: '<wk_…>', help: "an org environment's write key" },
  environments: { type: 'string', value: '<production,staging>', help: 'the environments it applies to (default production)' },
  definition: { type: 'string', value: '<flow.json>', help: 'a flow definition to use instead of the saved one' },
  data: { type: 'string', value: "<'{…}'|@file.json>", help: 'the JSON body: inline, or @ and a file' },
  events: { type: 'string', value: '<fixture.jsonl>', help: 'fixture events, one JSON object per line' },
  expect: { type: 'string', value: '<expected.json>', help: 'the rows the trigger must return' },
  stored: { type: 'boolean', help: 'use the live version from the service' },
  from: { type: 'string', value: '<2026-01-01T00:00:00Z>', help: 'where the window or range starts' },
  to: { type: 'string', value: '<2026-01-02T00:00:00Z>', help: 'where it ends' },
  bucket: { type: 'string', value: '<minute|hour|day>', help: 'count per minute, hour or day' },
  variant: { type: 'string', value: '<label>', help: "the experiment variant's message" },
  'reset-log-positions': { type: 'boolean', help: 'start compaction over from the log (a new NATS or log)' },
  archived: { type: 'boolean', help: 'the archived (deleted) ones instead' },
  yes: { type: 'boolean', help: 'yes, really' },
  suppress: { type: 'boolean', help: 'also keep its future events out and never message it' },
  wait: { type: 'boolean', help: 'wait until done and print the receipt' },
  json: { type: 'boolean', help: 'answers as JSON (the default when stdout is not a terminal)' },
  table: { type: 'boolean', help: 'answers as aligned tables (the default on a terminal)' },
  help: { type: 'boolean', help: 'this command’s usage and an example' },
  version: { type: 'boolean', help: 'the version' },
} as const satisfies Record<string, OptionSpec>;

export type OptionName = keyof typeof OPTIONS;

/** Options every command takes. */
export const GLOBAL_OPTIONS: OptionName[] = ['json', 'table', 'help'];

type Values = { [K in OptionName]?: (typeof OPTIONS)[K]['type'] extends 'boolean' ? boolean : string };

export interface CommandLine {
  values: Values;
  positionals: string[];
}

export class UsageError extends Error {}

/**
 * `--rate-limit -5` is a value, not an option: a string option followed by a negative number is joined
 * to it (`--rate-limit=-5`), and the service says what is wrong with the number.
 */
function joinNegativeValues(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const spec = arg.startsWith('--') ? (OPTIONS as Record<string, OptionSpec>)[arg.slice(2)] : undefined;
    const next = argv[i + 1];
    if (spec?.type === 'string' && next !== undefined && /^-\d/.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}

export function parseCommandLine(argv: string[]): CommandLine {
  try {
    const { values, positionals } = parseArgs({ args: joinNegativeValues(argv), allowPositionals: true, strict: true, options: { ...OPTIONS, help: { type: 'boolean', short: 'h' } } });
    return { values: values as Values, positionals };
  } catch (error) {
    throw new UsageError(commandLineProblem(error));
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

/** `--name <text>` as help shows it. */
export function optionUsage(name: OptionName): string {
  const spec: OptionSpec = OPTIONS[name];
  return spec.value ? `--${name} ${spec.value}` : `--${name}`;
}
