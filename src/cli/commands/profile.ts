// `ztc profile list|current|use|delete`: the saved logins (profiles.json) and which one is current.
import { Command } from 'commander';
import { CliError } from '../errors.js';
import { parseFormat, print } from '../output.js';
import { deleteProfile, listProfiles, missingProfile, useProfile } from '../profile.js';

export function profileCommand(): Command {
  const cmd = new Command('profile').description('saved logins: list them, show or change the current one, delete one');
  cmd
    .command('list')
    .description('the saved profiles (* marks the current one)')
    .option('-o, --output <format>', 'table, json or yaml', 'table')
    .action(async (opts: { output: string }) => {
      const { current, profiles } = listProfiles();
      const rows = Object.entries(profiles).map(([name, p]) => ({ current: name === current ? '*' : '', name, url: p.url, username: p.username, loggedIn: !!p.token }));
      await print(rows, parseFormat(opts.output), { columns: ['current', 'name', 'url', 'username', 'loggedIn'] });
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
