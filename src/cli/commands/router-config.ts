// The config file of an OpenZiti router (`ziti router enroll FILE --jwt NAME.jwt`, then `ziti router run
// FILE`) for a router of this network: the controller's control channel, an edge listener for SDKs, a link
// listener and dialer for other routers, the paths where enrollment writes its certificates, and the
// router's own tunneler off unless asked. Written from upstream's router config reference (version 3:
// ziti/cmd/create/config_templates/router.yml and router/env/config.go of 1.1 and 2.0), the fields a
// router with no HA needs; what upstream's `ziti create config router edge --tunnelerMode none` writes,
// less the tuning sections whose defaults are the same.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Command, Option } from 'commander';
import { CliError, expectOk, type Transport } from '../transport.js';

const API = '/edge/management/v1';
/** upstream's defaults: the edge listener SDKs connect to, and the link listener of other routers. */
export const EDGE_PORT = 3022;
export const LINK_PORT = 10080;

export interface RouterConfigOptions {
  routerConfig?: string;
  routerHost?: string;
  routerBind?: string;
  edgePort?: string;
  linkPort?: string;
  tunnelerMode?: string;
  /** One, or (the flag repeated) each controller's: several controllers on one database. */
  ctrlEndpoint?: string | string[];
}

/** The flags of `edge-router create --router-config` and `edge-router config`. */
export function routerConfigFlags(cmd: Command, withFile: boolean): Command {
  if (withFile) cmd.option('--router-config <file>', "also write the router's config file for OpenZiti's router (ziti router enroll FILE --jwt NAME.jwt; ziti router run FILE), with the JWT beside it unless -o names one");
  return cmd
    .option('--router-host <host>', 'the name or address SDKs and other routers reach the router at (default: the controller\'s host)')
    .option('--router-bind <address>', 'the IP address the router\'s edge and link listeners bind (default 0.0.0.0, every interface, as upstream\'s configs; 127.0.0.1 keeps them to this machine)')
    .option('--edge-port <port>', `the router's edge listener, for SDKs (default ${EDGE_PORT}, or the next port no router of this network has on that host)`)
    .option('--link-port <port>', `the router's link listener, for other routers (default ${LINK_PORT}, or the next free one; 0: none, the router only dials links)`)
    .addOption(new Option('--tunneler-mode <mode>', 'the router\'s own tunneler (a tunnel listener): none, host (hosts what its Router identity may Bind) or tproxy (also intercepts; needs root); the edge router must be tunneler-enabled').choices(['none', 'host', 'tproxy']).default('none'))
    .option('--ctrl-endpoint <tls:host:port>', 'where the router reaches the controller\'s control channel (default: what the controllers say, /controllers ctrlAddress of every one online); repeat it for each of several controllers on one database: the router holds a channel to each (docs/postgresql.md)', (v: string, before: string[] | undefined) => [...(before ?? []), v]);
}

export interface Where {
  /** The first control channel (the router's host defaults to its host)... */
  ctrlEndpoint: string;
  /** ...and every one, when several controllers share the database (ctrl.endpoints). */
  ctrlEndpoints?: string[];
  /** Said when the endpoint was guessed rather than told. */
  guessed?: string;
  host: string;
  /** The address the listeners bind (every interface unless told). */
  bind: string;
  edgePort: number;
  linkPort: number;
}

const portOf = (flag: string, v: string | undefined) => {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new CliError(`${flag} takes a port number, not '${v}'`);
  return n;
};

/** host:port of an address as routers write them (tls:host:port, tls://host:port, host:port, [::1]:port). */
function hostPort(address: string): [string, number] | undefined {
  const m = /^(?:[a-z]+:(?:\/\/)?)?(\[[^\]]+\]|[^:/]+):(\d+)$/.exec(address.trim());
  return m ? [m[1].replace(/^\[|\]$/g, '').toLowerCase(), Number(m[2])] : undefined;
}

/**
 * Where the router will be: the control channel's address the controller names, the host it advertises,
 * and ports no other router of the network advertises on that host (the embedded router of `ztc serve`
 * has 3022 on the controller's host, where a first router is usually tried).
 */
export async function routerPlacement(t: Transport, o: RouterConfigOptions, profileHost: string | undefined): Promise<Where> {
  const controllers = (expectOk(await t.request('GET', `${API}/controllers`), 'Listing controllers')?.data as { ctrlAddress?: string | null; isOnline?: boolean; apiAddresses?: Record<string, { url: string }[]> }[]) ?? [];
  // Every controller serving the database (several on PostgreSQL): the router is to hold a channel to each.
  const told = [...new Set(controllers.filter((c) => c.ctrlAddress && c.isOnline !== false).map((c) => c.ctrlAddress!))];
  const given = [o.ctrlEndpoint ?? []].flat();
  const endpoints = given.length ? given : told;
  let ctrlEndpoint = endpoints[0];
  let guessed: string | undefined;
  const apiHost = (() => {
    const url = controllers.find((c) => c.apiAddresses?.['edge-management']?.[0]?.url)?.apiAddresses?.['edge-management']?.[0]?.url;
    try {
      return url ? new URL(url).hostname : undefined;
    } catch {
      return undefined;
    }
  })();
  if (!ctrlEndpoint) {
    ctrlEndpoint = `tls:${profileHost ?? apiHost ?? 'localhost'}:6262`;
    guessed = `the controller did not say where its control channel listens (not running, or --no-ctrl): ctrl.endpoint is ${ctrlEndpoint}, the default port; --ctrl-endpoint tls:HOST:PORT for another`;
  }
  for (const e of endpoints.length ? endpoints : [ctrlEndpoint]) if (!/^tls:[^:]+:\d+$/.test(e) && !/^tls:\[[^\]]+\]:\d+$/.test(e)) throw new CliError(`--ctrl-endpoint takes tls:HOST:PORT, not '${e}'`);
  const ctrlHost = hostPort(ctrlEndpoint)![0];
  // Beside the controller unless told otherwise: the name its control channel is reached by.
  const host = o.routerHost ?? ctrlHost;
  // Hosts that are this machine when the router runs beside the controller.
  const local = new Set(['localhost', '127.0.0.1', '::1', ctrlHost, ...(profileHost ? [profileHost] : []), ...(apiHost ? [apiHost] : [])].map((h) => h.toLowerCase()));
  const sameMachine = (h: string) => h === host.toLowerCase() || (local.has(h) && local.has(host.toLowerCase()));
  const taken = new Set<number>([hostPort(ctrlEndpoint)![1]]);
  const routers = (expectOk(await t.request('GET', `${API}/edge-routers?limit=500`), 'Listing edge routers')?.data as { supportedProtocols?: Record<string, string> }[]) ?? [];
  for (const r of routers) for (const a of Object.values(r.supportedProtocols ?? {})) {
    const hp = hostPort(a);
    if (hp && sameMachine(hp[0])) taken.add(hp[1]);
  }
  const fabric = await t.request('GET', '/fabric/v1/routers?limit=500');
  if (fabric.status === 200) {
    for (const r of (fabric.json?.data as { listenerAddresses?: { address: string }[] }[]) ?? []) for (const l of r.listenerAddresses ?? []) {
      const hp = hostPort(l.address);
      if (hp && sameMachine(hp[0])) taken.add(hp[1]);
    }
  }
  for (const c of controllers) for (const list of Object.values(c.apiAddresses ?? {})) for (const a of list) {
    try {
      const u = new URL(a.url);
      if (sameMachine(u.hostname.toLowerCase())) taken.add(Number(u.port || 443));
    } catch {
      // not a URL: nothing taken
    }
  }
  const free = (from: number) => {
    let p = from;
    while (taken.has(p)) p++;
    taken.add(p);
    return p;
  };
  const edgePort = portOf('--edge-port', o.edgePort) ?? free(EDGE_PORT);
  const linkPort = portOf('--link-port', o.linkPort) ?? free(LINK_PORT);
  const bind = o.routerBind ?? '0.0.0.0';
  if (net.isIP(bind) === 0) throw new CliError(`--router-bind takes an IP address for the listeners to bind (0.0.0.0: every interface; 127.0.0.1: this machine only), not '${bind}'`);
  return { ctrlEndpoint, ...(new Set(endpoints).size > 1 ? { ctrlEndpoints: [...new Set(endpoints)] } : {}), guessed, host, bind, edgePort, linkPort };
}

const quoted = (s: string) => JSON.stringify(s);

/** The YAML text (comments included, so a person can read why each part is there). */
export function routerConfigYaml(name: string, file: string, w: Where, tunnelerMode: string): string {
  const dir = path.dirname(path.resolve(file));
  const at = (suffix: string) => quoted(path.join(dir, `${name}${suffix}`));
  const isIp = net.isIP(w.host) !== 0;
  const dns = ['localhost', ...(isIp || w.host === 'localhost' ? [] : [w.host])];
  const ips = ['127.0.0.1', '::1', ...(isIp && !['127.0.0.1', '::1'].includes(w.host) ? [w.host] : [])];
  const advertise = (port: number) => (net.isIPv6(w.host) ? `[${w.host}]:${port}` : `${w.host}:${port}`);
  const bindAt = (port: number) => (net.isIPv6(w.bind) ? `[${w.bind}]:${port}` : `${w.bind}:${port}`);
  const lines = [
    `# OpenZiti router '${name}' of the ztc controller${w.ctrlEndpoints ? 's' : ''} at ${(w.ctrlEndpoints ?? [w.ctrlEndpoint]).join(', ')}, written by ztc.`,
    `#   ziti router enroll ${file} --jwt ${name}.jwt   (once: makes the key, writes the certificates below)`,
    `#   ziti router run ${file}`,
    'v: 3',
    '',
    'identity:',
    `  cert:        ${at('.cert')}`,
    `  server_cert: ${at('.server.chain.cert')}`,
    `  key:         ${at('.key')}`,
    `  ca:          ${at('.cas')}`,
    '',
    ...(w.ctrlEndpoints
      ? ['# Several controllers on one database: the router holds a channel to each, and carries on through', '# the others when one stops (docs/postgresql.md).', 'ctrl:', '  endpoints:', ...w.ctrlEndpoints.map((e) => `    - ${e}`)]
      : ['ctrl:', `  endpoint:      ${w.ctrlEndpoint}`]),
    `  endpointsFile: ${at('.endpoints.yml')}`,
    '',
    '# Links to other routers: this router dials those that listen, and listens for those that dial.',
    'link:',
    '  dialers:',
    '    - binding: transport',
    ...(w.linkPort
      ? ['  listeners:', '    - binding: transport', `      bind: tls:${bindAt(w.linkPort)}`, `      advertise: tls:${advertise(w.linkPort)}`]
      : []),
    '',
    '# Where SDKs and tunnelers connect.',
    'listeners:',
    '  - binding: edge',
    `    address: tls:${bindAt(w.edgePort)}`,
    '    options:',
    `      advertise: ${quoted(advertise(w.edgePort))}`,
    ...(tunnelerMode === 'none'
      ? ['# The router\'s own tunneler (a "tunnel" listener) is off: --tunneler-mode host or tproxy adds it.']
      : ['  - binding: tunnel', '    options:', `      mode: ${tunnelerMode}`, ...(tunnelerMode === 'tproxy' ? ['      resolver: udp://127.0.0.1:53'] : [])]),
    '',
    '# What enrollment asks the controller to certify: the names SDKs reach the edge listener by.',
    'edge:',
    '  heartbeatIntervalSeconds: 60',
    '  csr:',
    '    country: US',
    '    province: NC',
    '    locality: Charlotte',
    '    organization: ztc',
    '    organizationalUnit: router',
    '    sans:',
    '      dns:',
    ...dns.map((d) => `        - ${quoted(d)}`),
    '      ip:',
    ...ips.map((i) => `        - ${quoted(i)}`),
    '',
  ];
  return lines.join('\n');
}

/** Write the router's config (0600 not needed: it holds no secret, only paths) and say what to run. */
export async function writeRouterConfig(t: Transport, name: string, file: string, o: RouterConfigOptions, profileHost: string | undefined, jwtFile: string | undefined): Promise<void> {
  const w = await routerPlacement(t, o, profileHost);
  fs.writeFileSync(file, routerConfigYaml(name, file, w, o.tunnelerMode ?? 'none'));
  const out = process.stdout;
  out.write(`router config for '${name}' written to ${file}: ${w.ctrlEndpoints ? `ctrl.endpoints ${w.ctrlEndpoints.join(', ')}` : `ctrl.endpoint ${w.ctrlEndpoint}`}, edge listener ${w.host}:${w.edgePort}${w.linkPort ? `, link listener ${w.host}:${w.linkPort}` : ', no link listener'}\n`);
  if (w.guessed) process.stderr.write(`note: ${w.guessed}\n`);
  if ((o.tunnelerMode ?? 'none') !== 'none') process.stderr.write(`note: the router's tunneler (mode ${o.tunnelerMode}) acts as its Router identity: the edge router must be tunneler-enabled (ztc edge-router update ${name} --is-tunneler-enabled; a 1.1 router exits otherwise), and that identity needs Bind policies for the services it hosts\n`);
  out.write(`next, where the router runs (OpenZiti's ziti binary):\n`);
  out.write(`  ziti router enroll ${file} --jwt ${jwtFile ?? `${name}.jwt`}\n`);
  out.write(`  ziti router run ${file}\n`);
}
