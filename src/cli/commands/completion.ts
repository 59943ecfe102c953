// `ztc completion bash|zsh`: a completion script generated from the command tree itself, so every
// command, subcommand and flag completes without a hand-kept list.
import { Command } from 'commander';
import { CliError } from '../errors.js';

/** Every command path ("", "identity", "identity list", ...) with the words that may follow it. */
function table(root: Command): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const walk = (cmd: Command, prefix: string) => {
    const words = [...cmd.commands.map((c) => c.name()), ...cmd.options.flatMap((o) => [o.long, o.short].filter((f): f is string => !!f))];
    out.set(prefix, [...new Set(words)]);
    for (const c of cmd.commands) walk(c, prefix ? `${prefix} ${c.name()}` : c.name());
  };
  walk(root, '');
  return out;
}

export function bashScript(root: Command): string {
  const cases = [...table(root)].map(([p, words]) => `    "${p}") words="${words.join(' ')}" ;;`).join('\n');
  return `# ztc bash completion: source <(ztc completion bash)
_ztc_complete() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" path="" i w words
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    [[ "$w" == -* ]] && continue
    case "\${path:+$path }$w" in
      ${[...table(root).keys()].filter(Boolean).map((p) => `"${p}"`).join('|')})
        path="\${path:+$path }$w" ;;
    esac
  done
  case "$path" in
${cases}
    *) words="" ;;
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _ztc_complete ztc
`;
}

/** fish: the same table, a path function that skips flags, and one `complete` line per command path. */
export function fishScript(root: Command): string {
  const t = table(root);
  const q = (w: string) => `'${w.replace(/'/g, "\\'")}'`;
  const paths = [...t.keys()].filter(Boolean).map(q).join(' ');
  const lines = [...t].map(([p, words]) => `complete -c ztc -f -n ${q(`__ztc_is ${JSON.stringify(p)}`)} -a ${q(words.join(' '))}`);
  return `# ztc fish completion: ztc completion fish | source
set -g __ztc_paths ${paths}
function __ztc_path
  set -l words (commandline -opc)
  set -e words[1]
  set -l path
  for w in $words
    string match -q -- '-*' $w; and continue
    set -l candidate (string join ' ' $path $w)
    contains -- $candidate $__ztc_paths; and set path $path $w
  end
  string join ' ' $path
end
function __ztc_is
  set -l p (__ztc_path)
  test "$p" = "$argv[1]"
end
${lines.join('\n')}
`;
}

export function completionCommand(root: () => Promise<Command>): Command {
  return new Command('completion')
    .description('print a shell completion script: source <(ztc completion bash|zsh|fish)')
    .argument('<shell>', 'bash, zsh or fish (fish: ztc completion fish | source)')
    .action(async (shell: string) => {
      if (shell === 'bash') process.stdout.write(bashScript(await root()));
      // zsh runs the bash completion through its compatibility layer.
      else if (shell === 'zsh') process.stdout.write(`autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n${bashScript(await root())}`);
      else if (shell === 'fish') process.stdout.write(fishScript(await root()));
      else throw new CliError(`No completion for '${shell}': use bash, zsh or fish`);
    });
}
