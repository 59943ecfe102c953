// The ztc program: `serve` runs the controller, every other command manages it (locally or remotely).
// Only the command being run is loaded (see registry.ts); the help lists the others by name.
import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config-error.js';
import { ApiError } from '../model/errors.js';
import { VERSION } from '../version.js';
import { CliError } from './errors.js';
import { COMMANDS } from './registry.js';

function root(): Command {
  return new Command('ztc')
    .description('ztc: the control plane of a zero-trust overlay network (OpenZiti Edge APIs)')
    .version(VERSION, '-V, --version')
    .exitOverride();
}

/** The whole command tree, every command loaded (for shell completion and tests). */
export async function fullProgram(): Promise<Command> {
  const p = root();
  for (const c of await Promise.all(COMMANDS.map((e) => e.load()))) p.addCommand(c);
  p.addCommand((await import('./commands/completion.js')).completionCommand(fullProgram));
  return p;
}

/** Errors of every subcommand come back to main() (which adds hints) instead of exiting there. */
function overridingExit(c: Command): Command {
  c.exitOverride();
  for (const sub of c.commands) overridingExit(sub);
  return c;
}

/**
 * The arguments part of a usage line, for a command listed but not loaded: commander reads the text after
 * the name as arguments, so option words (`--follow [--type T]`) would show as `<--follow> [--typ] <T]>`.
 */
function stubArguments(usage: string): string {
  return usage.replace(/\[-[^\]]*\]/g, '').replace(/(^|\s)--?\S+/g, '').replace(/\s+/g, ' ').trim();
}

/** The program for these arguments: the named command loaded, the others as help entries. */
export async function program(argv: string[]): Promise<Command> {
  const args = argv.slice(2);
  const first = args.findIndex((a) => !a.startsWith('-'));
  let wanted = first < 0 ? undefined : args[first];
  if (wanted === 'help') wanted = args[first + 1];
  if (wanted === 'completion') return fullProgram();
  const p = root();
  for (const e of COMMANDS) {
    if (e.name === wanted) p.addCommand(overridingExit(await e.load()));
    else p.command(`${e.name}${e.usage ? ` ${stubArguments(e.usage)}` : ''}`).description(e.description);
  }
  p.command('completion <shell>').description('print a shell completion script: source <(ztc completion bash|zsh|fish)');
  return p;
}

/** Options every command takes, also accepted before the command (`ztc --profile lab service list`, as kubectl's). */
const GLOBAL_WITH_VALUE = new Set(['--profile', '-o', '--output', '-d', '--data-dir']);

/**
 * Move global options given before the command to its end, where the command's parser finds them.
 * `moved` says where they start (argv.length when none moved).
 */
export function hoistGlobalOptions(argv: string[]): { argv: string[]; moved: number } {
  const [node, script, ...args] = argv;
  const moved: string[] = [];
  const rest: string[] = [];
  let i = 0;
  for (; i < args.length && args[i].startsWith('-'); i++) {
    const a = args[i];
    const name = a.split('=')[0];
    if (!GLOBAL_WITH_VALUE.has(name)) {
      rest.push(a);
      continue;
    }
    moved.push(a);
    if (!a.includes('=') && i + 1 < args.length) moved.push(args[++i]);
  }
  if (!moved.length || i >= args.length) return { argv, moved: argv.length };
  const front = [node, script, ...rest, ...args.slice(i)];
  return { argv: [...front, ...moved], moved: front.length };
}

/** The command these arguments run (`identity list` in `ztc identity list --all`): the deepest one named. */
function commandOf(p: Command, args: string[]): Command {
  let cmd = p;
  for (const a of args) {
    if (a.startsWith('-')) continue;
    const sub = cmd.commands.find((c) => c.name() === a || c.aliases().includes(a));
    if (!sub) break;
    cmd = sub;
  }
  return cmd;
}

/**
 * Global options moved behind a command that has no such option are left out: `ztc --profile pg enroll
 * x.jwt` enrolls (enroll uses no profile), as kubectl's global flags apply where they mean something.
 */
function keepKnownGlobals(p: Command, argv: string[], moved: number): string[] {
  if (moved >= argv.length) return argv;
  const cmd = commandOf(p, argv.slice(2, moved));
  const takes = (flag: string) => cmd.options.some((o) => o.long === flag || o.short === flag);
  const kept: string[] = [];
  const tail = argv.slice(moved);
  for (let i = 0; i < tail.length; i++) {
    const name = tail[i].split('=')[0];
    const value = tail[i].includes('=') ? [] : tail.slice(i + 1, i + 2);
    if (takes(name)) kept.push(tail[i], ...value);
    i += value.length;
  }
  return [...argv.slice(0, moved), ...kept];
}

export async function main(argv = process.argv) {
  // `ztc identity list | head`: a closed pipe ends the program quietly.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
  // Called by the completion scripts on every TAB: no command tree, no help, never an error.
  if (argv[2] === '__names') return (await import('./complete-names.js')).printNames(argv[3]);
  const hoisted = hoistGlobalOptions(argv);
  argv = hoisted.argv;
  try {
    const p = await program(argv);
    argv = keepKnownGlobals(p, argv, hoisted.moved);
    await p.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.unknownOption' && argv.some((a) => a === '--filter' || a.startsWith('--filter='))) {
        process.stderr.write(`hint: filters are for lists: ztc ${argv[2] ?? 'identity'} list --filter 'type = "Default"' (or the filter as its argument; see docs/filters.md)\n`);
      }
      process.exit(err.exitCode);
    }
    if (err instanceof CliError || err instanceof ConfigError) {
      process.stderr.write(`error: ${err.message}\n`);
      process.exit(err instanceof CliError ? err.exitCode : 2);
    }
    // Problems the operator fixes (a damaged database, a read-only data dir): the message, not a stack.
    // Imported here, on the error path, so that start-up does not load the store.
    const [{ DamagedDatabase }, { DataDirNotWritable, DatabaseElsewhere }, { HalfRenewedPki }, { MigrationFailed }] = await Promise.all([
      import('../store/sqlite-health.js'),
      import('../server/data-dir.js'),
      import('../model/pki/pki-switch.js'),
      import('../store/db.js'),
    ]);
    if (err instanceof DamagedDatabase || err instanceof DataDirNotWritable || err instanceof HalfRenewedPki || err instanceof DatabaseElsewhere || err instanceof MigrationFailed) {
      process.stderr.write(`error: ${(err as Error).message}\n`);
      process.exit(1);
    }
    if (err instanceof ApiError) {
      process.stderr.write(`error: ${err.message} [${err.code}]\n`);
      process.exit(1);
    }
    process.stderr.write(`error: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  }
}
