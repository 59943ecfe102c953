// ztc token create|list|get|revoke: API tokens for automation, from the api-tokens declaration.
// `create` prints the token (shown once: only its hash is kept); `revoke` deletes by name or id.
import { Command } from 'commander';
import { cliResource } from '../manifest.js';
import { print, parseFormat } from '../output.js';
import { CliError, expectOk } from '../transport.js';
import { targetOptions, type CommonOpts } from './common.js';
import { resolveRef, resourceCommand, withTransport } from './resources.js';

const DESCRIPTION = 'API tokens for automation: long-lived, revocable, admin or read-only; shown once when created';

export async function tokenCommand(): Promise<Command> {
  const decl = await cliResource('api-tokens');
  // list, get and delete as every resource has them; create below, because it must show the token.
  const cmd = resourceCommand({ ...decl, ops: decl.ops.filter((o) => o !== 'create') });
  cmd.name('token').description(DESCRIPTION);
  const del = cmd.commands.find((c) => c.name() === 'delete');
  if (del) del.name('revoke').alias('delete').description('revoke API tokens by name or id (several at once), or every one a filter matches (--where): they stop working at once');
  targetOptions(cmd.command('create').description('create an API token and print it: it is shown this once (store it in a secret store, or a file for ztc login --token-file)'))
    .argument('<name>', 'a name to list and revoke it by')
    .option('--read-only', 'the token reads only, whatever its identity may do')
    .option('--expires-in-days <days>', 'days until it stops working (default 90, at most 3650)')
    .option('--identity <id-or-name>', 'the admin identity it acts as (default: you)')
    .action(async (name: string, opts: CommonOpts & { readOnly?: boolean; expiresInDays?: string; identity?: string }) => {
      const format = parseFormat(opts.output);
      const days = opts.expiresInDays === undefined ? undefined : Number(opts.expiresInDays);
      if (days !== undefined && (!Number.isInteger(days) || days < 1)) throw new CliError(`--expires-in-days takes a whole number of days, got '${opts.expiresInDays}'`);
      await withTransport(opts, async (t) => {
        const body: Record<string, unknown> = { name, ...(opts.readOnly ? { readOnly: true } : {}), ...(days ? { expiresInDays: days } : {}) };
        if (opts.identity) body.identityId = await resolveRef(t, 'identities', opts.identity, 'identity');
        const made = expectOk(await t.request('POST', '/edge/management/v1/api-tokens', body), 'Creating the API token')?.data as { id: string; token: string; expiresAt: string; readOnly: boolean };
        if (format !== 'table') return print(made, format);
        process.stdout.write(`created API token '${name}' (${made.readOnly ? 'read-only' : 'admin'}, expires ${made.expiresAt}); shown only this once:\n${made.token}\n`);
      });
    });
  return cmd;
}
