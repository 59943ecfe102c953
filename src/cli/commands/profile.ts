// `ztc profile list|current|use|delete`: the saved logins (profiles.json) and which one is current.
import { Command } from 'commander';
import { CliError } from '../errors.js';
import { parseFormat, print } from '../output.js';
import { API_TOKEN_PREFIX } from '../../model/resources/api-tokens.js';
import { deleteProfile, listProfiles, missingProfile, useProfile, type Profile } from '../profile.js';
import { httpsCall, reloginCommand } from '../transport.js';

/**
 * Whether a profile's saved session or API token still works, asked of its controller (the current
 * identity: a read both kinds may make), in words with what to do next.
 */
async function sessionStatus(p: Profile, name: string): Promise<string> {
  if (!p.token) return `logged out: ${reloginCommand(p, name)}`;
  const token = p.token.startsWith(API_TOKEN_PREFIX);
  const reply = await httpsCall(`${p.url}/edge/management/v1/current-identity`, { caPem: p.caPem, headers: { 'zt-session': p.token }, timeoutMs: 5_000 }).catch((e: Error) => e);
  if (reply instanceof Error) return `not reachable: ${reply.message}`;
  if (reply.status === 200) return 'works';
  if (reply.status === 401) return token ? 'API token refused (revoked or expired): ztc token create NAME, then ztc login URL --token-file FILE' : `session ended: ${reloginCommand(p, name)}`;
  return `HTTP ${reply.status}: ${reply.json?.error?.message ?? 'unexpected answer'}`;
}

export function profileCommand(): Command {
  const cmd = new Command('profile').description('saved logins: list them, show or change the current one, delete one');
  cmd
    .command('list')
    .description('the saved profiles (* marks the current one)')
    .option('-o, --output <format>', 'table, json or yaml', 'table')
    .option('--check', "ask each profile's controller whether its session or API token still works (loggedIn only says one is saved)")
    .action(async (opts: { output: string; check?: boolean }) => {
      const format = parseFormat(opts.output);
      const { current, profiles } = listProfiles();
      const rows: Record<string, unknown>[] = Object.entries(profiles).map(([name, p]) => ({ current: name === current ? '*' : '', name, url: p.url, username: p.username, loggedIn: !!p.token }));
      if (opts.check) await Promise.all(rows.map(async (r) => (r.status = await sessionStatus(profiles[r.name as string], r.name as string))));
      await print(rows, format, { columns: ['current', 'name', 'url', 'username', 'loggedIn', ...(opts.check ? ['status'] : [])], whole: ['status'] });
    });
  cmd
    .command('current')
    .description('the profile commands use when --profile is not given')
    .action(() => {
      const { current, profiles } = listProfiles();
      if (!current) throw new CliError('No current profile: ztc login URL, or ztc profile use NAME');
      process.stdout.write(`${current}  ${profiles[current].url} as ${profiles[current].username}\n`);
    });
  cmd
    .command('use')
    .description('make a profile the current one')
    .argument('<name>')
    .action((name: string) => {
      if (!useProfile(name)) throw new CliError(missingProfile(name));
      process.stdout.write(`current profile: ${name}\n`);
    });
  cmd
    .command('delete')
    .description('forget a profile (its session is not ended: ztc logout --profile NAME first)')
    .argument('<name>')
    .action((name: string) => {
      if (!deleteProfile(name)) throw new CliError(missingProfile(name));
      process.stdout.write(`deleted profile ${name}\n`);
    });
  return cmd;
}
