// `ztc service expose|unexpose`: a whole service in one command (POST /services/expose, our
// extension), and its removal. Flags read as a person says it: --port 443, --host tcp:10.0.0.5:443.
import { Command, Option } from 'commander';
import { parseFormat, print } from '../output.js';
import { CliError, expectOk } from '../transport.js';
import { targetOptions, type CommonOpts } from './common.js';
import { withTransport } from './resources.js';

const API = '/edge/management/v1';
const list = (v: string) => v.split(',').map((s) => s.trim()).filter(Boolean);

/** '443' or '8000-8100', several with commas. */
export function portRanges(text: string): { low: number; high: number }[] {
  return list(text).map((part) => {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    const low = Number(m?.[1]);
    const high = Number(m?.[2] ?? m?.[1]);
    if (!m || low < 1 || high > 65535 || low > high) throw new CliError(`--port: '${part}' is not a port (1-65535) or a range like 8000-8100`);
    return { low, high };
  });
}

/** tcp:10.0.0.5:443 (the protocol may be left out: tcp). */
export function hostSpec(text: string): { protocol: 'tcp' | 'udp'; address: string; port: number } {
  const m = /^(?:(tcp|udp):)?(.+):(\d+)$/.exec(text.trim());
  const port = Number(m?.[3]);
  if (!m || port < 1 || port > 65535) throw new CliError(`--host: '${text}' is not PROTOCOL:ADDRESS:PORT, e.g. tcp:10.0.0.5:443`);
  return { protocol: (m[1] ?? 'tcp') as 'tcp' | 'udp', address: m[2].replace(/^\[(.*)\]$/, '$1'), port };
}

interface ExposeOpts extends CommonOpts {
  address?: string;
  port?: string;
  protocol?: string;
  host?: string;
  dial?: string;
  bind?: string;
  edgeRouters?: string;
  roleAttributes?: string;
  encryptionRequired?: string;
}

type Made = { kind: string; id: string; name: string };

export function addExposeCommands(cmd: Command) {
  targetOptions(
    cmd
      .command('expose')
      .description('create a service with its intercept and host configs, Dial and Bind policies and edge routers, all or nothing')
      .argument('<name>', 'the new service'),
  )
    .option('--address <a,b>', 'what clients intercept: host names, IP addresses or CIDRs (needs --port)')
    .option('--port <p|from-to,...>', 'intercepted ports: 443, or a range 8000-8100')
    .addOption(new Option('--protocol <tcp,udp>', 'intercepted protocols').default('tcp'))
    .option('--host <proto:address:port>', 'where the hosting identity sends the traffic, e.g. tcp:10.0.0.5:443')
    .option('--dial <roles>', "who may dial it: roles like '#staff' or '@laptop-01'")
    .option('--bind <roles>', "who hosts it: roles like '@server-01'")
    .option('--edge-routers <roles>', "edge routers that carry it: roles like '#public'")
    .option('--role-attributes <a,b>', "the service's role attributes")
    .addOption(new Option('--encryption-required <bool>', 'end-to-end encryption').choices(['true', 'false']).default('true'))
    .action(async (name: string, opts: ExposeOpts) => {
      const format = parseFormat(opts.output);
      if (!!opts.address !== !!opts.port) throw new CliError('--address and --port go together: give both (what clients intercept) or neither');
      const body = {
        name,
        ...(opts.address ? { intercept: { addresses: list(opts.address), portRanges: portRanges(opts.port!), protocols: list(opts.protocol ?? 'tcp') } } : {}),
        ...(opts.host ? { host: hostSpec(opts.host) } : {}),
        ...(opts.dial ? { dialRoles: list(opts.dial) } : {}),
        ...(opts.bind ? { bindRoles: list(opts.bind) } : {}),
        ...(opts.edgeRouters ? { edgeRouterRoles: list(opts.edgeRouters) } : {}),
        ...(opts.roleAttributes ? { roleAttributes: list(opts.roleAttributes) } : {}),
        encryptionRequired: opts.encryptionRequired !== 'false',
      };
      const result = await withTransport(opts, async (t) => expectOk(await t.request('POST', `${API}/services/expose`, body), `Exposing service '${name}'`)?.data as { made: Made[] });
      if (format !== 'table') return print(result, format);
      process.stdout.write(`exposed service ${name}; made:\n`);
      await print(result.made, 'table', { columns: ['kind', 'name', 'id'] });
      process.stdout.write(`undo with: ztc service unexpose ${name}\n`);
    });

  targetOptions(cmd.command('unexpose').description('delete a service made by `service expose` with exactly the configs and policies it made').argument('<id-or-name>')).action(
    async (ref: string, opts: CommonOpts) => {
      const format = parseFormat(opts.output);
      const result = await withTransport(opts, async (t) => expectOk(await t.request('DELETE', `${API}/services/${encodeURIComponent(ref)}/expose`), `Unexposing service '${ref}'`)?.data as { made: Made[] });
      if (format !== 'table') return print(result, format);
      process.stdout.write(`unexposed service ${ref}; deleted:\n`);
      await print(result.made, 'table', { columns: ['kind', 'name', 'id'] });
    },
  );
}
