// `ztc quickstart`: from nothing to a network that carries traffic: a running controller with its edge
// router, a logged-in CLI, the edge-router and service-edge-router policies upstream's quickstart makes,
// a demo echo service with a host and a device identity (their enrollment JWTs in the data dir), and next
// steps that really echo bytes through the router with OpenZiti's C SDK.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { ECHO_DEMO_PY } from '../demo/echo-demo.js';
import { listProfiles, saveProfile } from '../profile.js';
import { CliError, expectOk, httpsCall, RemoteTransport } from '../transport.js';
import { configFromOptions, logFormat, runController, serverOptions } from './serve.js';

const SAMPLE = 'quickstart-device';
const HOST = 'quickstart-host';
const SERVICE = 'quickstart-echo';
const PROFILE = 'quickstart';
const M = '/edge/management/v1';

/** What the first run makes, by name (a second run finds them and makes nothing). As upstream's quickstart: every identity may use the public routers, every service every router. */
const NETWORK: [path: string, body: Record<string, unknown>][] = [
  ['/edge-router-policies', { name: 'allEdgeRouters', identityRoles: ['#all'], edgeRouterRoles: ['#public'], semantic: 'AnyOf' }],
  ['/service-edge-router-policies', { name: 'allSvcAllRouters', serviceRoles: ['#all'], edgeRouterRoles: ['#all'], semantic: 'AnyOf' }],
  ['/services', { name: SERVICE, encryptionRequired: true, roleAttributes: ['quickstart-echo'] }],
  ['/service-policies', { name: `${SERVICE}-bind`, type: 'Bind', identityRoles: ['#quickstart-hosts'], serviceRoles: ['#quickstart-echo'], semantic: 'AnyOf' }],
  ['/service-policies', { name: `${SERVICE}-dial`, type: 'Dial', identityRoles: ['#quickstart'], serviceRoles: ['#quickstart-echo'], semantic: 'AnyOf' }],
];

export function quickstartCommand(): Command {
  return serverOptions(new Command('quickstart').description('start a controller (first run: new data dir, admin, sample identity and its enrollment JWT) and log this CLI in'))
    .option('--no-sample', 'do not create the sample identity')
    .action(async (all: Record<string, string | undefined> & { sample?: boolean }) => {
      const { sample, ...opts } = all;
      const fresh = !fs.existsSync(path.join(opts.dataDir ?? process.env.ZTC_DATA_DIR ?? '.ztc-data', 'pki'));
      const password = opts.adminPassword ?? process.env.ZTC_ADMIN_PASSWORD ?? (fresh ? randomBytes(12).toString('base64url') : undefined);
      // Request logs would bury the instructions: warnings and errors only, unless asked.
      const config = configFromOptions({ ...opts, adminPassword: password, logLevel: opts.logLevel ?? 'warn' });
      const running = await runController(config, logFormat(opts.logFormat));
      const out = process.stdout;
      if (!password) {
        out.write(`\nThis data dir was set up before: log in with  ztc login ${running.url} -u ${config.adminUsername}\n`);
        return;
      }
      // Log this CLI in over the network, exactly as `ztc login` would, trusting the CA we just made.
      const caPem = running.ctx.pki.caBundlePem;
      const url = running.url;
      const login = await httpsCall(`${url}/edge/management/v1/authenticate?method=password`, { method: 'POST', caPem, body: { username: config.adminUsername, password } });
      if (login.status !== 200) throw new CliError(`Could not log in as ${config.adminUsername}: the data dir has another admin password (pass --admin-password)`);
      const token = (expectOk(login, 'Login')?.data as { token: string }).token;
      const profile = { url, username: config.adminUsername, token, caPem };
      const before = listProfiles().current;
      saveProfile(PROFILE, profile, true);

      const t = new RemoteTransport(profile);
      const exists = async (path: string, name: string) =>
        ((expectOk(await t.request('GET', `${M}${path}?filter=${encodeURIComponent(`name = "${name}"`)}`), `Looking up ${name}`)?.data as unknown[]) ?? []).length > 0;
      for (const [p, body] of NETWORK) if (!(await exists(p, String(body.name)))) expectOk(await t.request('POST', `${M}${p}`, body), `Creating ${body.name}`);
      const jwts: Record<string, string> = {};
      if (sample !== false) {
        for (const [name, roles] of [[SAMPLE, ['quickstart']], [HOST, ['quickstart-hosts']]] as const) {
          if (await exists('/identities', name)) continue;
          const made = expectOk(await t.request('POST', `${M}/identities`, { name, type: 'Device', isAdmin: false, roleAttributes: roles, enrollment: { ott: true } }), `Creating ${name}`);
          const id = (made?.data as { id: string }).id;
          const detail = expectOk(await t.request('GET', `${M}/identities/${id}`), `Reading ${name}`)?.data as { enrollment: { ott?: { jwt: string } } };
          jwts[name] = path.join(config.dataDir, `${name}.jwt`);
          fs.writeFileSync(jwts[name], `${detail.enrollment.ott?.jwt}\n`, { mode: 0o600 });
        }
      }
      const demo = path.join(config.dataDir, 'echo-demo.py');
      fs.writeFileSync(demo, ECHO_DEMO_PY);
      const d = (f: string) => path.join(config.dataDir, f);
      out.write(`\nReady. The CLI is logged in (profile '${PROFILE}'), so these work from another terminal:\n`);
      // Said, not silent: later commands go to this controller.
      if (before && before !== PROFILE) out.write(`  (current profile: ${PROFILE}, was: ${before}; back with: ztc profile use ${before})\n`);
      out.write(`  ztc identity list\n`);
      out.write(`  open ${url}/docs                  # the API reference (the CA is in ${config.dataDir}/pki)\n`);
      if (jwts[SAMPLE] && jwts[HOST] && running.fabric?.edge) {
        out.write(`\nBytes through the network: enroll the two demo identities, host the echo service, dial it\n`);
        out.write(`(the client is OpenZiti's own C SDK, from PyPI):\n`);
        out.write(`  python3 -m pip install openziti==0.6.0\n`);
        out.write(`  ztc enroll ${jwts[HOST]} --out ${d(`${HOST}.json`)}\n`);
        out.write(`  ztc enroll ${jwts[SAMPLE]} --out ${d(`${SAMPLE}.json`)}\n`);
        out.write(`  python3 ${demo} host ${d(`${HOST}.json`)} ${SERVICE} &\n`);
        out.write(`  python3 ${demo} dial ${d(`${SAMPLE}.json`)} ${SERVICE} 1048576\n`);
      }
      out.write(`Admin: ${config.adminUsername} / ${password}${fresh && !opts.adminPassword ? '   (generated; shown only this once)' : ''}\nStop with Ctrl-C; start again with: ztc serve -d ${config.dataDir}\n`);
    });
}
