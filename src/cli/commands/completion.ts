// `ztc completion bash|zsh|fish`: a completion script generated from the command tree itself, so every
// command, subcommand and flag completes without a hand-kept list. After `NOUN get|update|delete`
// the script asks `ztc __names NOUN` (complete-names.ts) for the names of existing entities.
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

/** Resources whose get/update/delete take a name: the nouns whose entity names complete. */
async function namedNouns(root: Command): Promise<string[]> {
  const { manifest } = await import('../manifest.js');
  const withGet = new Set(root.commands.filter((c) => c.commands.some((s) => s.name() === 'get')).map((c) => c.name()));
  return Object.values(await manifest()).filter((r) => r.named).map((r) => r.name.replace(/ /g, '-')).filter((n) => withGet.has(n)).sort();
}

export function bashScript(root: Command, nouns: string[] = []): string {
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
  # An entity name after NOUN get|update|delete, from the controller of the current profile.
  local verb="\${COMP_WORDS[COMP_CWORD-1]}" noun="\${path% *}"
  if [[ "$cur" != -* && "$path" == "$noun $verb" && " get update delete " == *" $verb "* && " ${nouns.join(' ')} " == *" $noun "* ]]; then
    words="$words $("\${COMP_WORDS[0]}" __names "$noun" 2>/dev/null)"
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _ztc_complete ztc
`;
}

/** fish: the same table, a path function that skips flags, and one `complete` line per command path. */
export function fishScript(root: Command, nouns: string[] = []): string {
  const t = table(root);
  const q = (w: string) => `'${w.replace(/'/g, "\\'")}'`;
  const paths = [...t.keys()].filter(Boolean).map(q).join(' ');
  const lines = [...t].map(([p, words]) => `complete -c ztc -f -n ${q(`__ztc_is ${JSON.stringify(p)}`)} -a ${q(words.join(' '))}`);
  for (const noun of nouns) {
    for (const verb of ['get', 'update', 'delete']) lines.push(`complete -c ztc -f -n ${q(`__ztc_is "${noun} ${verb}"`)} -a ${q(`(__ztc_names ${noun})`)}`);
  }
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
function __ztc_names
  set -l words (commandline -opc)
  contains -- $words[-1] get update delete; or return
  $words[1] __names $argv[1] 2>/dev/null
end
${lines.join('\n')}
`;
}

export function completionCommand(root: () => Promise<Command>): Command {
  return new Command('completion')
    .description('print a shell completion script: source <(ztc completion bash|zsh|fish)')
    .argument('<shell>', 'bash, zsh or fish (fish: ztc completion fish | source)')
    .action(async (shell: string) => {
      if (!['bash', 'zsh', 'fish'].includes(shell)) throw new CliError(`No completion for '${shell}': use bash, zsh or fish`);
      const tree = await root();
      const nouns = await namedNouns(tree);
      if (shell === 'bash') process.stdout.write(bashScript(tree, nouns));
      // zsh runs the bash completion through its compatibility layer.
      else if (shell === 'zsh') process.stdout.write(`autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n${bashScript(tree, nouns)}`);
      else process.stdout.write(fishScript(tree, nouns));
    });
}
