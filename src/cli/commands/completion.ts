// `bianbu completion bash|zsh|fish`: scripts generated from the command tree itself, so a new
// command or option completes without anyone editing them. Board arguments complete from the
// caller's held boards (`bianbu leases -q`). A command with subcommands (`share`, `queue`, `seq`,
// `profiles`) completes their names in the word after it, and the options of all of them.
import type { Command, Option } from 'commander';
import { usage } from '../errors.ts';

const BOARD_ARGS = /board/;

interface Node {
  name: string;
  description: string;
  options: string[];
  boards: boolean;
  subs: string[];
}

const visible = (c: Command) => !(c as Command & { _hidden?: boolean })._hidden;

function nodes(program: Command): Node[] {
  return program.commands.filter(visible).map((c) => {
    const family = [c, ...c.commands.filter(visible)];
    return {
      name: c.name(),
      description: c.description().replace(/'/g, ''),
      options: [
        ...new Set(
          [...family.flatMap((x) => x.options), ...program.options].flatMap((o: Option) =>
            [o.long, o.short].filter((x): x is string => Boolean(x)),
          ),
        ),
      ],
      boards: family.some((x) => x.registeredArguments.some((a) => BOARD_ARGS.test(a.name()))),
      subs: c.commands.filter(visible).map((x) => x.name()),
    };
  });
}

function bash(program: Command): string {
  const ns = nodes(program);
  const cases = ns
    .map(
      (n) =>
        `    ${n.name}) opts="${n.options.join(' ')}"; boards=${n.boards ? 1 : 0}; subs="${n.subs.join(' ')}" ;;`,
    )
    .join('\n');
  return `# bianbu completion for bash: source <(bianbu completion bash)
_bianbu() {
  local cur cmd at opts boards subs i
  cur="\${COMP_WORDS[COMP_CWORD]}"
  cmd=""; at=0
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in -*) ;; *) cmd="\${COMP_WORDS[i]}"; at=$i; break ;; esac
  done
  if [[ -z "$cmd" ]]; then
    COMPREPLY=( $(compgen -W "${ns.map((n) => n.name).join(' ')} help" -- "$cur") )
    return
  fi
  opts=""; boards=0; subs=""
  case "$cmd" in
${cases}
  esac
  if [[ -n "$subs" && "$cur" != -* && $((at + 1)) -eq $COMP_CWORD ]]; then
    COMPREPLY=( $(compgen -W "$subs" -- "$cur") )
  elif [[ "$cur" == -* ]]; then
    COMPREPLY=( $(compgen -W "$opts --help" -- "$cur") )
  elif [[ "$boards" == 1 ]]; then
    COMPREPLY=( $(compgen -W "$(bianbu leases -q 2>/dev/null)" -- "$cur") )
  else
    COMPREPLY=( $(compgen -f -- "$cur") )
  fi
}
complete -F _bianbu bianbu
`;
}

function zsh(program: Command): string {
  return `#compdef bianbu
# bianbu completion for zsh: source <(bianbu completion zsh)
autoload -U +X bashcompinit && bashcompinit
${bash(program)}`;
}

function fish(program: Command): string {
  const ns = nodes(program);
  const lines = ['# bianbu completion for fish: bianbu completion fish | source', 'complete -c bianbu -f'];
  for (const n of ns) {
    lines.push(`complete -c bianbu -n __fish_use_subcommand -a ${n.name} -d '${n.description}'`);
    for (const o of n.options) {
      const flag = o.startsWith('--') ? `-l ${o.slice(2)}` : `-s ${o.slice(1)}`;
      lines.push(`complete -c bianbu -n '__fish_seen_subcommand_from ${n.name}' ${flag}`);
    }
    if (n.subs.length)
      lines.push(
        `complete -c bianbu -n '__fish_seen_subcommand_from ${n.name}; and not __fish_seen_subcommand_from ${n.subs.join(' ')}' -a '${n.subs.join(' ')}'`,
      );
    if (n.boards)
      lines.push(
        `complete -c bianbu -n '__fish_seen_subcommand_from ${n.name}' -a '(bianbu leases -q 2>/dev/null)'`,
      );
  }
  return `${lines.join('\n')}\n`;
}

export function registerCompletion(program: Command): void {
  program
    .command('completion <shell>')
    .description('print a completion script for bash, zsh or fish')
    .addHelpText(
      'after',
      `
Examples:
  source <(bianbu completion bash)          # add to ~/.bashrc
  bianbu completion zsh > "\${fpath[1]}/_bianbu"
  bianbu completion fish > ~/.config/fish/completions/bianbu.fish`,
    )
    .action((shell: string) => {
      const gen = { bash, zsh, fish }[shell];
      if (!gen) throw usage('completion: bash, zsh or fish');
      process.stdout.write(gen(program));
    });
}
