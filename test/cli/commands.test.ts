/**
 * The CLI cannot fall behind the API: every admin operation of the served OpenAPI document has a command,
 * every operation a command names exists, each command has an example of itself, and the completion
 * scripts offer what the table holds (bash run for real; zsh and fish read as text, neither is installed).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { COMMANDS } from '../../src/cli/commands.js';
import { completionScript } from '../../src/cli/completion.js';
import { OPTIONS } from '../../src/cli/options.js';
import { startTestApp } from '../helpers/app.js';
import { ROOT } from '../helpers/entry.js';

interface Operation {
  operationId: string;
  security?: Array<Record<string, unknown>>;
}

t.test('every admin operation of the OpenAPI document has a command, and every named operation exists', async (t) => {
  const h = await startTestApp(t);
  const document = (await h.app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, Record<string, Operation>> };
  const admin = new Set<string>();
  const all = new Set<string>();
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const operation of Object.values(methods)) {
      if (path.startsWith('/admin/')) admin.add(operation.operationId);
      all.add(operation.operationId);
    }
  }
  t.ok(admin.size >= 50, `${admin.size} admin operations found (the document was read)`);
  const covered = new Set(COMMANDS.flatMap((c) => c.operations));
  t.same([...admin].filter((id) => !covered.has(id)).sort(), [], 'no admin operation without a command');
  // Commands call admin operations, and `partner status` a partner's own.
  t.same([...covered].filter((id) => !all.has(id)).sort(), [], 'no command names an operation the API lacks');
});

t.test('each command: a summary, an example of itself, only known options, a unique name', async (t) => {
  const names = COMMANDS.map((c) => c.name);
  t.equal(new Set(names).size, names.length, 'names are unique');
  for (const command of COMMANDS) {
    t.match(command.summary, /\S{3}/, `${command.name}: summary`);
    t.match(command.example, new RegExp(`(^|\\s)audiencectl ${command.name}( |$)`), `${command.name}: its example runs it`);
    for (const option of command.options ?? []) t.ok(Object.hasOwn(OPTIONS, option), `${command.name}: --${option} is a known option`);
  }
});

t.test('bash completion, run in bash: commands, then subcommands, then that command’s options', async (t) => {
  const script = join(t.testdir(), 'audiencectl.bash');
  writeFileSync(script, completionScript('bash', COMMANDS));
  const complete = (words: string[]): string[] => {
    const line = `source ${script}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _audiencectl; printf '%s\\n' "\${COMPREPLY[@]}"`;
    return execFileSync('bash', ['-c', line], { encoding: 'utf8' }).split('\n').filter(Boolean).sort();
  };
  t.same(complete(['audiencectl', 'tr']), ['trait', 'trigger'], 'the first word');
  t.same(complete(['audiencectl', 'trigger', '']), ['delete', 'diff', 'get', 'list', 'preview', 'put', 'test', 'validate', 'versions'], 'the trigger subcommands');
  t.same(complete(['audiencectl', 'flow', 'sends', 'acme', 'welcome', '--s']), ['--status'], "flow sends' options");
  t.same(complete(['audiencectl', 'quarantine', 'acme', '--']), ['--cursor', '--env', '--help', '--json', '--limit', '--table'], 'a one-word command');
  t.same(complete(['audiencectl', 'completion', '']), ['bash', 'fish', 'zsh']);
});

t.test('zsh and fish scripts name every command and option', async (t) => {
  const zsh = completionScript('zsh', COMMANDS);
  t.match(zsh, /^#compdef audiencectl\n/);
  t.match(zsh, /bashcompinit/);
  const fish = completionScript('fish', COMMANDS);
  for (const command of COMMANDS) {
    const [first, second] = command.name.split(' ');
    t.match(fish, new RegExp(`__fish_use_subcommand -a '[^']*\\b${first}\\b`), `fish: ${first}`);
    if (second) t.match(fish, new RegExp(`__fish_seen_subcommand_from ${first}; and not [^']*' -a '[^']*\\b${second}\\b`), `fish: ${command.name}`);
    for (const option of command.options ?? []) t.ok(fish.includes(`-l ${option}\n`), `fish: ${command.name} --${option}`);
  }
});

t.test('docs/cli.md names every command', async (t) => {
  const guide = readFileSync(join(ROOT, 'docs', 'cli.md'), 'utf8');
  for (const command of COMMANDS) t.ok(guide.includes(`\`${command.name}\``), `docs/cli.md: ${command.name}`);
});
