#!/usr/bin/env node
/**
 * `audiencectl …`: the admin API from a terminal (src/cli/: the command table, HTTP and exit codes,
 * tables, completion). Talks HTTP to a running service at AUDIENCE_URL with AUDIENCE_ADMIN_KEY; `trigger
 * test` and `restore` work offline. docs/cli.md is the reader's guide.
 */
import { AdminClient, EXIT, Exit, settingsFrom } from './cli/client.js';
import { COMMANDS, type Command } from './cli/commands.js';
import { completeNames, completionScript, SHELLS, type Shell } from './cli/completion.js';
import { type Format, formatAnswer } from './cli/output.js';
import { GLOBAL_OPTIONS, type OptionName, optionUsage, OPTIONS, parseCommandLine, UsageError } from './cli/options.js';
import { printErr, printOut } from './cli/terminal-text.js';
import { serviceVersion } from './core/paths.js';

const FOOTER = `answers: tables on a terminal, JSON otherwise (--json, --table to choose); errors on stderr
exit codes: 0 done, 1 refused by the service, 2 bad command line or input file, 3 not found, 4 service failed or unreachable
environment: AUDIENCE_URL (default http://127.0.0.1:8080), AUDIENCE_ADMIN_KEY (or ADMIN_KEY; default: ./data/admin.key)`;

function synopsis(command: Pick<Command, 'name' | 'args'>): string {
  return ['audiencectl', command.name, ...command.args].join(' ');
}

/** One line per command (synopsis, then summary), as `--help` lists them. */
function listed(commands: readonly Command[], extra: Array<readonly [string, string]> = []): string {
  const lines = [...commands.map((c) => [synopsis(c).slice('audiencectl '.length), c.summary] as const), ...extra];
  const width = Math.min(44, Math.max(...lines.map(([s]) => s.length)));
  return lines.map(([s, summary]) => (s.length > width ? `  ${s}\n  ${''.padEnd(width)}  ${summary}` : `  ${s.padEnd(width)}  ${summary}`)).join('\n');
}

function usage(): string {
  const body = listed(COMMANDS, [['completion <bash|zsh|fish>', 'a shell completion script (docs/cli.md: where to put it)']]);
  return `usage: audiencectl <command> [options]   (audiencectl <command> --help: its options and an example)\n\n${body}\n\n${FOOTER}`;
}

function commandHelp(command: Command): string {
  const options = [...(command.options ?? []), ...GLOBAL_OPTIONS];
  const width = Math.max(...options.map((o) => optionUsage(o).length));
  const lines = options.map((o) => `  ${optionUsage(o).padEnd(width)}  ${OPTIONS[o].help}`);
  return `usage: ${synopsis(command)}${command.options?.length ? ' [options]' : ''}\n\n${command.summary}\n\noptions:\n${lines.join('\n')}\n\nexample:\n  ${command.example}\n\n${FOOTER}`;
}

/** The commands of a group (`flow` → `flow list`, `flow get`, …); none when `word` names no group. */
function groupOf(word: string): Command[] {
  return COMMANDS.filter((c) => c.name.startsWith(`${word} `));
}

/** `audiencectl flow --help`: the group's commands, as the full usage lists them. */
function groupHelp(word: string, group: Command[]): string {
  return `usage: audiencectl ${word} <${group.map((c) => c.name.split(' ')[1]).join('|')}> [options]   (audiencectl ${word} <command> --help: its options and an example)\n\n${listed(group)}\n\n${FOOTER}`;
}

/** A command is one word (`quarantine`) or two (`org create`); the longest known name wins. */
function findCommand(positionals: string[]): Command {
  const two = positionals.slice(0, 2).join(' ');
  const found = COMMANDS.find((c) => c.name === two) ?? COMMANDS.find((c) => c.name === positionals[0]);
  if (found) return found;
  const verbs = groupOf(positionals[0]!).map((c) => c.name.split(' ')[1]);
  const known = verbs.length > 0 ? `; ${positionals[0]} takes ${verbs.join(', ')}` : '';
  throw new UsageError(positionals.length === 1 && verbs.length > 0 ? `${positionals[0]} needs a command${known}` : `unknown command '${two}'${known}`);
}

/** The command being run, for the help a usage error points to. */
let current: Command | undefined;

async function main(argv: string[]): Promise<void> {
  const { values: opts, positionals } = parseCommandLine(argv);
  if (opts.version) return void printOut(serviceVersion());
  if (positionals.length === 0) {
    if (opts.help) return void printOut(usage());
    printErr(usage());
    throw new Exit(EXIT.usage);
  }
  if (positionals[0] === '__complete') {
    // Asked by the shell while the user types: at most 2 s, and silent whatever happens.
    setTimeout(() => process.exit(0), 2000).unref();
    const names = await completeNames(new AdminClient(settingsFrom(process.env), false), positionals[1] ?? '', positionals[2]).catch(() => []);
    if (names.length > 0) printOut(names.join('\n'));
    return;
  }
  if (positionals[0] === 'completion') {
    const shell = positionals[1] as Shell;
    if (!SHELLS.includes(shell) || positionals.length > 2) throw new UsageError(`completion takes one of ${SHELLS.join(', ')}`);
    return void process.stdout.write(completionScript(shell, COMMANDS));
  }
  const group = positionals.length === 1 ? groupOf(positionals[0]!) : [];
  if (opts.help && group.length > 0 && !COMMANDS.some((c) => c.name === positionals[0])) return void printOut(groupHelp(positionals[0]!, group));
  const command = (current = findCommand(positionals));
  if (opts.help) return void printOut(commandHelp(command));
  const taken = new Set<OptionName>([...(command.options ?? []), ...GLOBAL_OPTIONS]);
  const foreign = (Object.keys(opts) as OptionName[]).find((o) => !taken.has(o));
  if (foreign) throw new UsageError(`${command.name} does not take --${foreign}`);
  if (opts.json && opts.table) throw new UsageError('--json or --table, not both');
  const args = positionals.slice(command.name.split(' ').length);
  if (args.length < command.args.length) throw new UsageError(`${command.name} needs ${command.args.join(' ')}`);
  if (args.length > command.args.length) throw new UsageError(`${command.name}: unexpected argument '${args[command.args.length]}'`);

  const format: Format = opts.json ? 'json' : opts.table || process.stdout.isTTY ? 'table' : 'json';
  const client = new AdminClient(settingsFrom(process.env), format === 'table');
  await command.run({ opts, client, argv, print: (answer, forPeople) => printOut(formatAnswer(format === 'table' && forPeople ? forPeople(answer) : answer, format)) }, args);
}

try {
  await main(process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError) {
    printErr(`audiencectl: ${error.message} (see audiencectl ${current ? `${current.name} ` : ''}--help)`);
    process.exitCode = EXIT.usage;
  } else if (error instanceof Exit) process.exitCode = error.code;
  else {
    // A bug, not the user's input: one line all the same.
    printErr(`audiencectl: unexpected error: ${(error as Error).message}`);
    process.exitCode = EXIT.unavailable;
  }
}
