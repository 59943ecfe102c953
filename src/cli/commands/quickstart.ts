// `ztc quickstart`: from nothing to a network that carries traffic: a running controller with its edge
// router, a logged-in CLI, the edge-router and service-edge-router policies upstream's quickstart makes,
// a demo echo service with a host and a device identity (their enrollment JWTs in the data dir), and next
// steps that really echo bytes through the router with OpenZiti's C SDK.
//
// Whatever came first, the same end: on a new data dir it starts the controller and makes everything; on
// one set up before (by `npm start` or `ztc serve`) it makes what is missing, as the host's administrator
// (local mode: no password needed); and when another process serves the data dir (`npm start` still
// running), it makes the demo network on that controller instead of starting a second one. It always says
// what it made, what was there, and what to type next, as this shell can type it (`bin/ztc` in a clone).
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import { servingPid } from '../../server/serve-lock.js';
import { ECHO_DEMO_PY } from '../demo/echo-demo.js';
import { listProfiles, saveProfile } from '../profile.js';
import { commandName } from '../self.js';
import { CliError, expectOk, httpsCall, LocalTransport, RemoteTransport, type Transport } from '../transport.js';
import { configFromOptions, logFormat, runController, serverOptions } from './serve.js';
import { readControllerId } from '../../model/resources/controllers.js';

const SAMPLE = 'quickstart-device';
const HOST = 'quickstart-host';
const SERVICE = 'quickstart-echo';
const PROFILE = 'quickstart';
const M = '/edge/management/v1';
/** A refreshed demo JWT's lifetime. */
const JWT_HOURS = 3;

/** What the first run makes, by name (a second run finds them and makes nothing). As upstream's quickstart: every identity may use the public routers, every service every router. */
const NETWORK: [path: string, body: Record<string, unknown>][] = [
  ['/edge-router-policies', { name: 'allEdgeRouters', identityRoles: ['#all'], edgeRouterRoles: ['#public'], semantic: 'AnyOf' }],
  ['/service-edge-router-policies', { name: 'allSvcAllRouters', serviceRoles: ['#all'], edgeRouterRoles: ['#all'], semantic: 'AnyOf' }],
  ['/services', { name: SERVICE, encryptionRequired: true, roleAttributes: ['quickstart-echo'] }],
  ['/service-policies', { name: `${SERVICE}-bind`, type: 'Bind', identityRoles: ['#quickstart-hosts'], serviceRoles: ['#quickstart-echo'], semantic: 'AnyOf' }],
  ['/service-policies', { name: `${SERVICE}-dial`, type: 'Dial', identityRoles: ['#quickstart'], serviceRoles: ['#quickstart-echo'], semantic: 'AnyOf' }],
];
const IDENTITIES: [name: string, roles: string[]][] = [
  [HOST, ['quickstart-hosts']],
  [SAMPLE, ['quickstart']],
];

/** A path as the user can type it from here: relative when it is under the current directory. */
function shown(p: string): string {
  const rel = path.relative(process.cwd(), p);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : p;
}

interface Made {
  made: string[];
  found: string[];
  /** Demo identities with an enrollment JWT in the data dir, and those enrolled with their identity file there. */
  jwts: Record<string, string>;
  files: Record<string, string>;
  /** Demo identities enrolled elsewhere: their identity file is not in the data dir. */
  lost: string[];
}

/** Make what the demo network lacks, through `t` as an administrator; write the demo identities' JWTs. */
async function makeNetwork(t: Transport, dataDir: string, sample: boolean): Promise<Made> {
  const out: Made = { made: [], found: [], jwts: {}, files: {}, lost: [] };
  const find = async (p: string, name: string) =>
    ((expectOk(await t.request('GET', `${M}${p}?filter=${encodeURIComponent(`name = "${name}"`)}`), `Looking up ${name}`)?.data as { id: string }[]) ?? [])[0];
  for (const [p, body] of NETWORK) {
    const name = String(body.name);
    if (await find(p, name)) out.found.push(name);
    else {
      expectOk(await t.request('POST', `${M}${p}`, body), `Creating ${name}`);
      out.made.push(name);
    }
  }
  if (!sample) return out;
  for (const [name, roles] of IDENTITIES) {
    const file = path.join(dataDir, `${name}.json`);
    let id = (await find('/identities', name))?.id;
    if (id) out.found.push(name);
    else {
      const made = expectOk(await t.request('POST', `${M}/identities`, { name, type: 'Default', isAdmin: false, roleAttributes: roles, enrollment: { ott: true } }), `Creating ${name}`);
      id = (made?.data as { id: string }).id;
      out.made.push(name);
    }
    const read = async () => (expectOk(await t.request('GET', `${M}/identities/${id}`), `Reading ${name}`)?.data as { enrollment: { ott?: { id: string; jwt: string; expiresAt: string } } }).enrollment.ott;
    let ott = await read();
    if (ott && Date.parse(ott.expiresAt) < Date.now() + 60_000) {
      // Expired (a data dir set up hours ago): the same token with a new expiry, signed again.
      const expiresAt = new Date(Date.now() + JWT_HOURS * 3_600_000).toISOString();
      expectOk(await t.request('POST', `${M}/enrollments/${ott.id}/refresh`, { expiresAt }), `Refreshing the enrollment of ${name}`);
      ott = await read();
    }
    if (ott?.jwt) {
      out.jwts[name] = path.join(dataDir, `${name}.jwt`);
      fs.writeFileSync(out.jwts[name], `${ott.jwt}\n`, { mode: 0o600 });
    } else if (fs.existsSync(file)) out.files[name] = file;
    else out.lost.push(name);
  }
  return out;
}

/** The address of the controller serving this data dir, as it registered it (localhost when it named this host). */
async function servedUrl(t: Transport, dataDir: string): Promise<string | undefined> {
  const id = readControllerId(dataDir);
  const rows = (expectOk(await t.request('GET', `${M}/controllers`), 'Listing controllers')?.data as { id: string; apiAddresses?: Record<string, { url: string }[]> }[]) ?? [];
  const url = rows.find((r) => r.id === id)?.apiAddresses?.['edge-management']?.[0]?.url;
  if (!url) return undefined;
  const u = new URL(url);
  if (u.hostname === os.hostname() && (await reachable('localhost', Number(u.port || 443)))) u.hostname = 'localhost';
  return u.origin;
}

function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port, timeout: 2000 }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
    s.on('timeout', () => {
      s.destroy();
      resolve(false);
    });
  });
}

/** The name of a saved profile whose login to `url` still works (the current one first), if any. */
async function savedLogin(url: string): Promise<string | undefined> {
  const { current, profiles } = listProfiles();
  const names = Object.keys(profiles).sort((a, b) => Number(b === current) - Number(a === current));
  for (const name of names) {
    if (profiles[name].url !== url || !profiles[name].token) continue;
    const reply = await new RemoteTransport(profiles[name], name).request('GET', `${M}/current-identity`).catch(() => undefined);
    if (reply?.status === 200 && (reply.json?.data as { isAdmin?: boolean } | undefined)?.isAdmin) return name;
  }
  return undefined;
}

/** Log this CLI in over the network, as `ztc login` would, trusting the data dir's CA; the previous current profile. */
async function logIn(url: string, caPem: string, username: string, password: string): Promise<{ before?: string } | undefined> {
  const login = await httpsCall(`${url}${M}/authenticate?method=password`, { method: 'POST', caPem, body: { username, password } });
  if (login.status !== 200) return undefined;
  const token = (expectOk(login, 'Login')?.data as { token: string }).token;
  const before = listProfiles().current;
  saveProfile(PROFILE, { url, username, token, caPem }, true);
  return { before };
}

export function quickstartCommand(): Command {
  return serverOptions(new Command('quickstart').description('start a controller with a demo network that carries traffic (an echo service and its policies, a host and a device identity with their enrollment JWTs) and log this CLI in'))
    .option('--no-sample', 'make the policies and the echo service, but not the two demo identities')
    .action(async (all: Record<string, string | undefined> & { sample?: boolean }) => {
      const { sample, ...opts } = all;
      // Request logs would bury the instructions: warnings and errors only, unless asked.
      const config = configFromOptions({ ...opts, logLevel: opts.logLevel ?? 'warn' });
      const ztc = commandName();
      const out = process.stdout;
      const dir = shown(config.dataDir);
      const holder = servingPid(config.dataDir);
      const running = holder ? undefined : await runController(config, logFormat(opts.logFormat));
      if (holder) out.write(`A controller already serves ${dir} (pid ${holder}): the demo network goes onto it, nothing else is started.\n`);
      // As given (flag, env or file), or generated by the first start and shown in the banner's box.
      const password = config.adminPassword || running?.boot.generatedPassword;
      const caPem = running?.ctx.pki.caBundlePem ?? ['intermediate.pem', 'root.pem'].map((f) => fs.readFileSync(path.join(config.dataDir, 'pki', f), 'utf8')).join('');

      // The network is made as the administrator: logged in with the password when it is known (or typed
      // at the prompt), else as the host's administrator on the data dir (what `ztc -d DIR` does).
      let url = running?.url;
      let loggedIn: { before?: string } | undefined;
      let refused = false;
      /** A saved profile already logged in to this controller, when quickstart did not log in itself. */
      let already: string | undefined;
      let local: LocalTransport | undefined;
      let made: Made;
      try {
        if (!url) {
          local = await LocalTransport.open(config);
          url = (await servedUrl(local, config.dataDir)) ?? `https://localhost:${config.port}`;
        }
        let given = password;
        if (!given && process.stdin.isTTY) {
          const { askSecret } = await import('../prompt.js');
          given = await askSecret(`This data dir was set up before: the password of '${config.adminUsername}' (shown when it was first started), or Enter to go on without logging in: `);
        }
        if (given) {
          loggedIn = await logIn(url, caPem, config.adminUsername, given);
          if (!loggedIn && running?.boot.generatedPassword) throw new CliError(`Could not log in as ${config.adminUsername} with the password just generated`);
          refused = !loggedIn;
        }
        const profile = loggedIn ? listProfiles().profiles[PROFILE] : undefined;
        if (!profile) local ??= await LocalTransport.open(config);
        made = await makeNetwork(profile ? new RemoteTransport(profile) : local!, config.dataDir, sample !== false);
        if (!loggedIn && !refused) already = await savedLogin(url);
      } finally {
        await local?.close();
      }
      const demo = path.join(config.dataDir, 'echo-demo.py');
      fs.writeFileSync(demo, ECHO_DEMO_PY);

      out.write(`\nThe demo network: ${made.made.length ? `made ${made.made.join(', ')}` : 'nothing to make'}${made.found.length ? `; there already: ${made.found.join(', ')}` : ''}.\n`);
      if (loggedIn) {
        out.write(`Ready. The CLI is logged in (profile '${PROFILE}'), so these work from another terminal:\n`);
        // Said, not silent: later commands go to this controller.
        if (loggedIn.before && loggedIn.before !== PROFILE) out.write(`  (current profile: ${PROFILE}, was: ${loggedIn.before}; back with: ${ztc} profile use ${loggedIn.before})\n`);
        out.write(`  ${ztc} identity list\n`);
      } else if (already) {
        const current = listProfiles().current === already;
        out.write(`Ready. The CLI was logged in to this controller already (profile '${already}'${current ? ', the current one' : ''}), so these work from another terminal:\n`);
        out.write(`  ${ztc} identity list${current ? '' : ` --profile ${already}`}\n`);
      } else {
        const why = refused
          ? `the password given is not ${config.adminUsername}'s. Log in with the one shown when this data dir was first started`
          : `this data dir's admin password was shown once, when it was first started (by npm start, ${ztc} serve or ${ztc} quickstart). Log in with it`;
        out.write(`Ready. The CLI is not logged in: ${why} (the command asks for it):\n`);
        out.write(`  ${ztc} login ${url} -u ${config.adminUsername}\n`);
        out.write(`  (or pass it to quickstart: --admin-password-file FILE, or ZTC_ADMIN_PASSWORD; lost: ${ztc} admin reset-password -d ${dir})\n`);
      }
      out.write(`The API reference: ${url}/docs (for a browser, trust the CA ${dir}/pki/root.pem)\n`);
      const steps = demoSteps(ztc, made, demo);
      const routerUp = running ? !!running.fabric?.edge : true;
      if (steps.length && routerUp) {
        out.write(`\nBytes through the network: ${made.jwts[HOST] || made.jwts[SAMPLE] ? 'enroll the demo identities, ' : ''}host the echo service, dial it\n`);
        out.write(`(the client is OpenZiti's own C SDK, from PyPI):\n`);
        for (const s of steps) out.write(`  ${s}\n`);
      }
      for (const name of made.lost) {
        out.write(`\n${name} is enrolled, but its identity file is not in ${dir}: for the demo, delete it (${ztc} identity delete ${name}) and run quickstart again.\n`);
      }
      if (running) {
        out.write(`Admin: ${config.adminUsername}${running.boot.generatedPassword ? ', with the generated password in the box above (shown only this once)' : password ? ' (password as given)' : ''}\n`);
        out.write(`Stop with Ctrl-C; start again with: ${ztc} serve ${restartFlags(opts, dir)}\n`);
      } else {
        out.write(`The controller keeps running where it was started (pid ${holder}).\n`);
      }
    });
}

/** The commands that echo bytes through the network with the demo identities, from what there is. */
function demoSteps(ztc: string, made: Made, demo: string): string[] {
  const file = (name: string) => made.files[name] ?? (made.jwts[name] ? made.jwts[name].replace(/\.jwt$/, '.json') : undefined);
  const host = file(HOST);
  const device = file(SAMPLE);
  if (!host || !device) return [];
  const steps = ['python3 -m pip install openziti==0.6.0'];
  for (const name of [HOST, SAMPLE]) if (made.jwts[name]) steps.push(`${ztc} enroll ${shown(made.jwts[name])} --out ${shown(file(name)!)}`);
  steps.push(`python3 ${shown(demo)} host ${shown(host)} ${SERVICE} &`);
  steps.push(`python3 ${shown(demo)} dial ${shown(device)} ${SERVICE} 1048576`);
  return steps;
}

/**
 * The flags to start the same controller again with `ztc serve`: the data dir and every server flag
 * given (a profile points at this port), but not the first start's admin flags.
 */
function restartFlags(opts: Record<string, unknown>, dataDir: string): string {
  const firstStartOnly = ['dataDir', 'adminUsername', 'adminPassword', 'adminPasswordFile', 'logLevel', 'logFormat'];
  const quote = (v: string) => (/^[\w@%+=:,./-]+$/.test(v) ? v : `'${v.replace(/'/g, `'\\''`)}'`);
  const flags = [`-d ${quote(dataDir)}`];
  for (const [k, v] of Object.entries(opts)) {
    if (firstStartOnly.includes(k) || v === undefined || v === true) continue;
    const flag = `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
    if (v === false) flags.push(`--no-${flag.slice(2)}`);
    else flags.push(`${flag} ${k === 'db' ? "'<the same --db URL>'" : quote(String(v))}`);
  }
  return flags.join(' ');
}
