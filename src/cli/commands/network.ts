// Services, routers and policies beyond the generic commands: the edge router's enrollment JWT,
// re-enrollment, policy advice, and an identity's service configs.
import fs from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { cliResource } from '../manifest.js';
import { parseFormat, print } from '../output.js';
import { CliError, expectOk, type Transport } from '../transport.js';
import { targetOptions, type CommonOpts } from './common.js';
import { jwtFileOf, resolveId, resourceCommand, withTransport } from './resources.js';
import { routerConfigFlags, writeRouterConfig, type RouterConfigOptions } from './router-config.js';

const API = '/edge/management/v1';

/** One identity-service pair as GET /policy-advisor answers it. */
interface AdvisedPair {
  dial: { allowed: boolean; reasons: { code: string; message: string }[] };
  bind: { allowed: boolean; reasons: { code: string; message: string }[] };
}

/** Print the router's enrollment JWT, or write it (0600) to -o FILE.jwt. */
async function showRouterJwt(t: Transport, id: string, out: string | undefined) {
  const jwt = (expectOk(await t.request('GET', `${API}/edge-routers/${id}`), 'Reading the edge router')?.data as { enrollmentJwt: string | null }).enrollmentJwt;
  if (!jwt) throw new CliError('The edge router has no outstanding enrollment: `ztc edge-router re-enroll` issues a new one');
  const file = jwtFileOf(out);
  if (file) {
    fs.writeFileSync(file, jwt + '\n', { mode: 0o600 });
    process.stdout.write(`edge router ${id}: enrollment JWT written to ${file}\n`);
  } else process.stdout.write(`edge router ${id}\n${jwt}\n`);
}

/** The host of the controller a remote transport talks to (undefined in local mode). */
const profileHost = (t: Transport) => (t.describe.startsWith('https://') ? new URL(t.describe).hostname : undefined);

export async function edgeRouterCommand(): Promise<Command> {
  const edgeRouters = await cliResource('edge-routers');
  const cmd = resourceCommand(edgeRouters, {}, {
    createOptions: (c) => routerConfigFlags(c, true),
    beforeCreate: (opts) => {
      const file = opts.routerConfig as string | undefined;
      if (file !== undefined && !fs.existsSync(path.dirname(path.resolve(file)))) throw new CliError(`--router-config ${file}: no directory ${path.dirname(path.resolve(file))}`);
    },
    onCreated: async (t, id, opts) => {
      const file = opts.routerConfig as string | undefined;
      const out = jwtFileOf(opts.output);
      if (!out && !file) return false;
      const name = (expectOk(await t.request('GET', `${API}/edge-routers/${id}`), 'Reading the edge router')?.data as { name: string }).name;
      // The JWT beside the config, as the printed `ziti router enroll` names it.
      const jwt = out ?? path.join(path.dirname(file!), `${name}.jwt`);
      await showRouterJwt(t, id, jwt);
      if (file) await writeRouterConfig(t, name, file, opts as RouterConfigOptions, profileHost(t), jwt);
      return true;
    },
  });
  routerConfigFlags(targetOptions(cmd.command('config').description("write the config file of OpenZiti's router for this edge router (ziti router enroll FILE --jwt NAME.jwt; ziti router run FILE)")), false)
    .argument('<id-or-name>')
    .argument('<file>', 'the config file to write, e.g. er-1.yml')
    .action(async (ref: string, file: string, opts: CommonOpts & RouterConfigOptions) => {
      await withTransport(opts, async (t) => {
        const id = await resolveId(t, edgeRouters, ref);
        const router = expectOk(await t.request('GET', `${API}/edge-routers/${id}`), 'Reading the edge router')?.data as { name: string; enrollmentJwt: string | null; isVerified: boolean };
        await writeRouterConfig(t, router.name, file, opts, profileHost(t), undefined);
        if (!router.enrollmentJwt) process.stderr.write(`note: '${router.name}' has no outstanding enrollment${router.isVerified ? ' (it enrolled already: ziti router run needs only the files enrollment wrote)' : ''}; ztc edge-router re-enroll ${router.name} -o ${router.name}.jwt issues a new JWT\n`);
        else process.stderr.write(`note: its JWT: ztc edge-router jwt ${router.name} -o ${router.name}.jwt\n`);
      });
    });
  targetOptions(cmd.command('re-enroll').description('forget the router\'s certificates and issue a new enrollment JWT (printed, or written with -o FILE.jwt)'))
    .argument('<id-or-name>')
    .action(async (ref: string, opts: CommonOpts) => {
      jwtFileOf(opts.output); // a wrong -o is refused before the router's certificates are forgotten
      await withTransport(opts, async (t) => {
        const id = await resolveId(t, edgeRouters, ref);
        expectOk(await t.request('POST', `${API}/edge-routers/${id}/re-enroll`), `Re-enrolling edge router '${ref}'`);
        await showRouterJwt(t, id, opts.output);
      });
    });
  targetOptions(cmd.command('jwt').description('print (or write with -o FILE.jwt) the router\'s outstanding enrollment JWT'))
    .argument('<id-or-name>')
    .action(async (ref: string, opts: CommonOpts) => {
      await withTransport(opts, async (t) => showRouterJwt(t, await resolveId(t, edgeRouters, ref), opts.output));
    });
  return cmd;
}

export async function serviceCommand(): Promise<Command> {
  const cmd = resourceCommand(await cliResource('services'), { encryptionRequired: true });
  (await import('./expose.js')).addExposeCommands(cmd);
  return cmd;
}

/** `ztc identity policy-advice` and `ztc identity service-configs`, added to the identity command. */
export async function addIdentityNetworkCommands(cmd: Command) {
  const [identities, services] = await Promise.all([cliResource('identities'), cliResource('services')]);
  targetOptions(cmd.command('policy-advice').description('can an identity dial or bind a service now: the policy advisor\'s answer with its reasons, and the edge routers they share (-o json: upstream\'s policy-only advice)'))
    .argument('<identity>', 'identity id or name')
    .argument('<service>', 'service id or name')
    .action(async (identity: string, service: string, opts: CommonOpts) => {
      const format = parseFormat(opts.output);
      const { advice, pair } = await withTransport(opts, async (t) => {
        const i = await resolveId(t, identities, identity);
        const s = await resolveId(t, services, service);
        const advice = expectOk(await t.request('GET', `${API}/identities/${i}/policy-advice/${s}`), 'Reading the policy advice')?.data as Record<string, unknown>;
        // The same answer as `ztc policy-advisor`: policies, and also enrollment, routers, posture, MFA.
        const q = new URLSearchParams({ identity: i, service: s });
        const pairs = expectOk(await t.request('GET', `${API}/policy-advisor?${q}`), 'Asking the policy advisor')?.data as AdvisedPair[] | undefined;
        return { advice, pair: pairs?.[0] };
      });
      if (format !== 'table') return print(advice, format);
      const common = (advice.commonRouters as { name: string }[]).map((r) => r.name);
      const verdict = (now: boolean | undefined, byPolicies: unknown) => ((now ?? byPolicies) ? 'allowed' : byPolicies ? 'allowed by policies, but not possible yet' : 'not allowed');
      const reasons = new Map<string, string[]>();
      for (const kind of ['dial', 'bind'] as const) {
        if (!pair || pair[kind].allowed) continue;
        for (const r of pair[kind].reasons) (reasons.get(r.message) ?? reasons.set(r.message, []).get(r.message)!).push(kind);
      }
      process.stdout.write(
        [
          `dial: ${verdict(pair?.dial.allowed, advice.isDialAllowed)}   bind: ${verdict(pair?.bind.allowed, advice.isBindAllowed)}`,
          `edge routers: ${advice.identityRouterCount} for the identity, ${advice.serviceRouterCount} for the service, ${common.length} in common${common.length ? `: ${common.join(', ')}` : ''}`,
          ...[...reasons].map(([message, kinds]) => `  ${kinds.join(', ')}: ${message}`),
          ...(!advice.isDialAllowed && !advice.isBindAllowed ? ['next: add a service policy naming both (ztc service-policy create ...)'] : []),
          ...(common.length === 0 ? ['next: an edge router policy for the identity and a service edge router policy for the service must share a router'] : []),
        ].join('\n') + '\n',
      );
    });

  const configs = cmd.command('service-configs').description('configs an identity uses in place of a service\'s own');
  targetOptions(configs.command('list').description('list them'))
    .argument('<identity>')
    .action(async (identity: string, opts: CommonOpts) => {
      const rows = await withTransport(opts, async (t) => expectOk(await t.request('GET', `${API}/identities/${await resolveId(t, identities, identity)}/service-configs`), 'Listing service configs')?.data as unknown[]);
      await print(rows, parseFormat(opts.output), { columns: ['service.name', 'config.name', 'serviceId', 'configId'] });
    });
  for (const [name, method, verb] of [['add', 'POST', 'added'], ['remove', 'DELETE', 'removed']] as const) {
    targetOptions(configs.command(name).description(`${name} a service/config pair`))
      .argument('<identity>')
      .argument('<service>', 'service id or name')
      .argument('<config>', 'config id or name')
      .action(async (identity: string, service: string, config: string, opts: CommonOpts) => {
        await withTransport(opts, async (t) => expectOk(await t.request(method, `${API}/identities/${await resolveId(t, identities, identity)}/service-configs`, [{ serviceId: service, configId: config }]), `Changing service configs of '${identity}'`));
        process.stdout.write(`${verb} ${config} for ${service}\n`);
      });
  }
}
