/**
 * Shell completion for bash, zsh and fish, made from the command table: `audiencectl completion bash`
 * prints a script to source (docs/cli.md says where each shell keeps them). Commands, then their
 * options; then an org's slug, and its flows, triggers, segments, traits or topics, from the service
 * (`audiencectl __complete`, at most 2 s); files for everything else.
 */
import type { AdminClient } from './client.js';
import type { Command } from './commands.js';
import { GLOBAL_OPTIONS, type OptionName } from './options.js';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

const PROGRAM = 'audiencectl';

function groups(commands: Command[]): Map<string, string[]> {
  const byFirst = new Map<string, string[]>();
  for (const { name } of [...commands, { name: 'completion' } as Command]) {
    const [first, second] = name.split(' ');
    const seconds = byFirst.get(first!) ?? [];
    if (second) seconds.push(second);
    byFirst.set(first!, seconds);
  }
  return byFirst;
}

/** What the service can list, for the positional arguments that name it. */
export const NAMED = ['orgs', 'flows', 'triggers', 'segments', 'traits', 'topics'] as const;
type Named = (typeof NAMED)[number];

/** What each positional argument of the command names ('' for anything else). */
function argumentKinds(command: Command): string[] {
  const group = command.name.split(' ')[0];
  const kindOf = (arg: string): Named | '' =>
    arg === '<slug>' ? 'orgs' : arg === '<flow-id>' ? 'flows' : arg === '<topic>' ? 'topics' : arg === '<name>' && (group === 'trigger' || group === 'segment' || group === 'trait') ? `${group}s` : '';
  return command.args.map(kindOf);
}

/** `audiencectl __complete <kind> [slug]`: the names, one per line; nothing when the service does not answer. */
export async function completeNames(client: AdminClient, kind: string, slug: string | undefined): Promise<string[]> {
  if (!(NAMED as readonly string[]).includes(kind) || (kind !== 'orgs' && !slug)) return [];
  const org = `/admin/v1/orgs/${encodeURIComponent(slug ?? '')}`;
  const [path, list, key] =
    kind === 'orgs' ? ['/admin/v1/orgs', 'orgs', 'slug']
    : kind === 'flows' ? [`${org}/flows`, 'flows', 'id']
    : kind === 'topics' ? [`${org}/topics`, 'topics', 'topic']
    : [`${org}/${kind}`, kind, 'name'];
  const answer = (await client.call('GET', path)) as Record<string, Array<Record<string, unknown>>>;
  return (answer[list] ?? []).map((item) => String(key === 'id' ? (item.definition as { id: string }).id : item[key])).filter((name) => /^[\w.@-]+$/.test(name));
}

const optionWords = (options: OptionName[] = []) => [...options, ...GLOBAL_OPTIONS].map((o) => `--${o}`).join(' ');

function bash(commands: Command[]): string {
  const byFirst = groups(commands);
  const seconds = [...byFirst].filter(([, s]) => s.length > 0).map(([first, s]) => `    ${first}) words="${s.join(' ')}" ;;`);
  const options = commands.map((c) => `    "${c.name}") words="${optionWords(c.options)}" ;;`);
  const named = commands.filter((c) => argumentKinds(c).some(Boolean)).map((c) => `    "${c.name}") at=${c.name.split(' ').length}; kinds="${argumentKinds(c).map((k) => k || '-').join(' ')}" ;;`);
  return `# ${PROGRAM} completion for bash: source it, or save it as ~/.local/share/bash-completion/completions/${PROGRAM}
_${PROGRAM}() {
  local cur=\${COMP_WORDS[COMP_CWORD]} words=""
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "${[...byFirst.keys()].join(' ')} --help --version" -- "$cur"))
    return
  fi
  if [ "$COMP_CWORD" -eq 2 ]; then
    case "\${COMP_WORDS[1]}" in
${seconds.join('\n')}
    completion) words="${SHELLS.join(' ')}" ;;
    esac
    if [ -n "$words" ]; then COMPREPLY=($(compgen -W "$words" -- "$cur")); return; fi
  fi
  if [[ $cur == -* ]]; then
    local two="\${COMP_WORDS[1]} \${COMP_WORDS[2]}"
    case "$two" in
${options.filter((o) => o.includes(' ')).join('\n')}
    esac
    if [ -z "$words" ]; then
      case "\${COMP_WORDS[1]}" in
${options.filter((o) => !/^ {4}"[^"]* /.test(o)).join('\n')}
      esac
    fi
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
    return
  fi
  # An org, then its flow, trigger, segment, trait or topic: from the service (nothing when it does not answer).
  local at=0 kinds=""
  case "\${COMP_WORDS[1]} \${COMP_WORDS[2]}" in
${named.filter((o) => /^ {4}"[^"]* /.test(o)).join('\n')}
  esac
  if [ -z "$kinds" ]; then
    case "\${COMP_WORDS[1]}" in
${named.filter((o) => !/^ {4}"[^"]* /.test(o)).join('\n')}
    esac
  fi
  if [ -n "$kinds" ]; then
    local all=($kinds) kind
    kind=\${all[COMP_CWORD-at-1]}
    if [ -n "$kind" ] && [ "$kind" != - ]; then
      COMPREPLY=($(compgen -W "$("\${COMP_WORDS[0]}" __complete "$kind" "\${COMP_WORDS[at+1]}" 2>/dev/null)" -- "$cur"))
      return
    fi
  fi
  COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _${PROGRAM} ${PROGRAM}
`;
}

function zsh(commands: Command[]): string {
  return `#compdef ${PROGRAM}
# ${PROGRAM} completion for zsh: source it from ~/.zshrc (it uses zsh's bash completion layer)
autoload -U +X compinit && compinit
autoload -U +X bashcompinit && bashcompinit
${bash(commands).split('\n').slice(1).join('\n')}`;
}

function fish(commands: Command[]): string {
  const byFirst = groups(commands);
  const lines = [`# ${PROGRAM} completion for fish: save it as ~/.config/fish/completions/${PROGRAM}.fish`];
  lines.push(`complete -c ${PROGRAM} -n __fish_use_subcommand -a '${[...byFirst.keys()].join(' ')}'`);
  for (const [first, seconds] of byFirst) {
    const words = first === 'completion' ? [...SHELLS] : seconds;
    if (words.length > 0) lines.push(`complete -c ${PROGRAM} -n '__fish_seen_subcommand_from ${first}; and not __fish_seen_subcommand_from ${words.join(' ')}' -a '${words.join(' ')}'`);
  }
  for (const command of commands) {
    const words = command.name.split(' ');
    const condition = words.map((w) => `__fish_seen_subcommand_from ${w}`).join('; and ');
    for (const option of [...(command.options ?? []), ...GLOBAL_OPTIONS]) lines.push(`complete -c ${PROGRAM} -n '${condition}' -l ${option}`);
  }
  return `${lines.join('\n')}\n${fishNames(commands)}`;
}

/** fish: an org's slug, then its flows, triggers, segments, traits or topics, from the service (as bash's). */
function fishNames(commands: Command[]): string {
  const named = commands.filter((c) => argumentKinds(c).some(Boolean));
  const cases = (two: boolean, indent: string) =>
    named
      .filter((c) => c.name.includes(' ') === two)
      .map((c) => `${indent}case '${c.name}'\n${indent}    set at ${c.name.split(' ').length}; set kinds ${argumentKinds(c).map((k) => k || '-').join(' ')}`)
      .join('\n');
  return `# The kind of name the word being typed is, and the org's slug before it; nothing (status 1) for other words.
function __${PROGRAM}_kind
    set -l words (commandline -opc)
    string match -q -- '-*' (commandline -ct); and return 1
    set -l at 0
    set -l kinds
    switch "$words[2] $words[3]"
${cases(true, '        ')}
    end
    if test $at -eq 0
        switch "$words[2]"
${cases(false, '            ')}
        end
    end
    test $at -gt 0; or return 1
    set -l i (math (count $words) - $at)
    test $i -ge 1 -a $i -le (count $kinds); or return 1
    test "$kinds[$i]" != -; or return 1
    echo $kinds[$i]
    echo $words[(math $at + 2)]
end
function __${PROGRAM}_names
    set -l found (__${PROGRAM}_kind); or return
    set -l words (commandline -opc)
    $words[1] __complete $found[1] $found[2] 2>/dev/null
end
complete -c ${PROGRAM} -f -n '__${PROGRAM}_kind >/dev/null' -a '(__${PROGRAM}_names)'
`;
}

export function completionScript(shell: Shell, commands: Command[]): string {
  switch (shell) {
    case 'bash':
      return bash(commands);
    case 'zsh':
      return zsh(commands);
    case 'fish':
      return fish(commands);
  }
}
