import net from 'node:net';
import { Command, Option } from 'commander';
import { loadConfig } from '../../config.js';
import type { Config } from '../../config.js';
import { startController, type Running } from '../../server/controller.js';
import { loggerOptions } from '../../server/logging.js';
import { ZAC_PATH } from '../../server/zac.js';
import { redactUrl } from '../../store/db.js';
import { VERSION } from '../../version.js';
import { consoleLogStream } from '../../server/console-log.js';
import { DataDirBusy } from '../../server/serve-lock.js';
import { sha256Fingerprint } from '../../model/pki/fingerprint.js';
import { CliError } from '../errors.js';
import { progress } from '../output.js';
import { commandName } from '../self.js';

export type LogFormat = 'text' | 'json';


/** The flags `serve` and `quickstart` share. */
export function serverOptions(cmd: Command): Command {
  return cmd
    .option('-d, --data-dir <dir>', 'where the database and PKI live (env ZTC_DATA_DIR; default ./.ztc-data)')
    .option('--config <file>', 'YAML or JSON config file (default: ztc.yaml in the data dir, if present)')
    .option('-p, --port <port>', 'HTTPS port (env ZTC_PORT; default 1280)')
    .option('--db <url>', 'postgres://user:pass@host:port/db to use PostgreSQL instead of the data dir\'s SQLite file (env ZTC_DB)')
    .option('--bind <address>', 'address to listen on (env ZTC_BIND; default 0.0.0.0)')
    .option('--hostnames <names>', 'comma-separated names for the server certificate (env ZTC_HOSTNAMES)')
    .option('--api-address <host:port>', 'the address clients reach the APIs at, put in enrollment JWTs (env ZTC_API_ADDRESS; default: the first of --hostnames and --port)')
    .option('--admin-username <name>', 'default admin username at first start (default admin)')
    .option('--admin-password <password>', 'default admin password at first start (generated when absent; visible in ps: prefer the file or env ZTC_ADMIN_PASSWORD)')
    .option('--admin-password-file <file>', 'read the default admin password from the first line of a file (env ZTC_ADMIN_PASSWORD_FILE)')
    .option('--session-timeout-minutes <n>', 'idle lifetime of API sessions (default 30)')
    .option('--auth-rate-limit-per-minute <n>', 'logins and enrollments a minute from one address before 429 (default 300; 0: none)')
    .option('--api-rate-limit-per-minute <n>', 'requests a minute per API session before 429 (default 6000; 0: none)')
    .option('--crypto-queue-limit <n>', 'logins/enrollments waiting for a crypto worker before 429 (default 128)')
    .option('--max-connections-per-address <n>', 'open connections one client address may hold (default 256; 0: no cap)')
    .option('--headers-timeout-seconds <n>', 'time to complete the TLS handshake and send the headers (default 10)')
    .option('--idle-timeout-seconds <n>', 'time a kept-alive connection may wait for its next request (default 60)')
    .option('--zac-dir <dir>', 'serve this build of OpenZiti\'s admin console (ZAC) at /zac/ (env ZTC_ZAC_DIR)')
    .option('--router-port <port>', 'TLS port of the embedded edge router that SDKs connect through (env ZTC_ROUTER_PORT; default 3022)')
    .option('--router-address <host>', 'host name SDKs reach the edge router at, put in its certificate (env ZTC_ROUTER_ADDRESS; default: the first of --hostnames)')
    .option('--no-router', 'do not run the embedded edge router (env ZTC_ROUTER=false)')
    .option('--ctrl-port <port>', 'TLS port where upstream OpenZiti routers connect their control channel (env ZTC_CTRL_PORT; default 6262)')
    .option('--no-ctrl', 'do not listen for upstream routers (env ZTC_CTRL=false)')
    .option('--enforce-password-policy', 'refuse passwords that break their auth policy\'s updb rules (env ZTC_ENFORCE_PASSWORD_POLICY; default off, as upstream)')
    .option('--metrics-port <port>', 'also serve /metrics and /health-checks over plain HTTP on this port, without authentication, for Prometheus and load balancers on a trusted network (env ZTC_METRICS_PORT; default: not served; /metrics on the API port needs an admin)')
    .option('--no-metrics', 'count nothing for /metrics: it answers 404 (env ZTC_METRICS=false; the health checks stay)')
    .option('--events-file <path>', 'append events (entity changes, logins, API sessions, sessions, enrollments) to this JSON-lines file, rotated by size (env ZTC_EVENTS_FILE; config eventsFile; default: none)')
    .option('--events-file-max-mb <n>', 'rotate the events file at this size in MiB (env ZTC_EVENTS_FILE_MAX_MB; default 100)')
    .option('--events-file-keep <n>', 'rotated events files kept (env ZTC_EVENTS_FILE_KEEP; default 5)')
    .option('--audit-retention-days <n>', 'days the stored audit (ztc audit) is kept (env ZTC_AUDIT_RETENTION_DAYS; default 90)')
    .option('--cors-origins <origins>', 'comma-separated web origins allowed to call the APIs from a browser, e.g. https://console.example.com (env ZTC_CORS_ORIGINS; default none)')
    .option('--jwks-private-hosts <hosts>', 'comma-separated hosts of external JWT signers\' JWKS endpoints that may be on loopback, private or link-local addresses (env ZTC_JWKS_PRIVATE_HOSTS; default none)')
    .option('--no-oidc', 'do not serve the OIDC provider at /oidc nor offer it in /version: clients log in the legacy way (env ZTC_OIDC=false; config oidc: false)')
    .option('--import-body-limit-mb <n>', 'largest model document POST /import (ztc import) accepts, in MiB (env ZTC_IMPORT_BODY_LIMIT_MB; default 64)')
    .addOption(new Option('--log-level <level>', 'log level').choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']))
    .addOption(new Option('--log-format <format>', 'text: one short line per request (default on a terminal); json: pino JSON lines (default otherwise; env ZTC_LOG_FORMAT)').choices(['text', 'json']));
}

export function configFromOptions(opts: Record<string, string | undefined>, overrides: Partial<Config> = {}): Config {
  const config = loadConfig({
    dataDir: opts.dataDir,
    config: opts.config,
    port: opts.port,
    db: opts.db,
    bind: opts.bind,
    hostnames: opts.hostnames,
    apiAddress: opts.apiAddress,
    adminUsername: opts.adminUsername,
    adminPassword: opts.adminPassword,
    adminPasswordFile: opts.adminPasswordFile,
    sessionTimeoutMinutes: opts.sessionTimeoutMinutes,
    authRateLimitPerMinute: opts.authRateLimitPerMinute,
    apiRateLimitPerMinute: opts.apiRateLimitPerMinute,
    cryptoQueueLimit: opts.cryptoQueueLimit,
    maxConnectionsPerAddress: opts.maxConnectionsPerAddress,
    headersTimeoutSeconds: opts.headersTimeoutSeconds,
    idleTimeoutSeconds: opts.idleTimeoutSeconds,
    logLevel: opts.logLevel,
    zacDir: opts.zacDir,
    corsOrigins: opts.corsOrigins,
    enforcePasswordPolicy: (opts as Record<string, unknown>).enforcePasswordPolicy === true ? true : undefined,
    jwksPrivateHosts: opts.jwksPrivateHosts,
    importBodyLimitMb: opts.importBodyLimitMb,
    routerPort: opts.routerPort,
    routerAddress: opts.routerAddress,
    // commander sets router=true unless --no-router: only the "no" is the user's.
    router: (opts as Record<string, unknown>).router === false ? false : undefined,
    ctrlPort: opts.ctrlPort,
    ctrl: (opts as Record<string, unknown>).ctrl === false ? false : undefined,
    metricsPort: opts.metricsPort,
    metrics: (opts as Record<string, unknown>).metrics === false ? false : undefined,
    eventsFile: opts.eventsFile,
    eventsFileMaxMb: opts.eventsFileMaxMb,
    eventsFileKeep: opts.eventsFileKeep,
    auditRetentionDays: opts.auditRetentionDays,
    // commander sets oidc=true unless --no-oidc: only the "no" is the user's.
    oidc: (opts as Record<string, unknown>).oidc === false ? false : undefined,
  });
  return { ...config, ...overrides };
}

/** text on a terminal, JSON when the output goes to a file, a pipe or a log collector. */
export function logFormat(flag: string | undefined): LogFormat {
  const f = flag || process.env.ZTC_LOG_FORMAT || (process.stdout.isTTY ? 'text' : 'json');
  if (f !== 'text' && f !== 'json') throw new CliError(`Unknown log format '${f}': use text or json`);
  return f;
}

/** The one-time password, framed so it cannot be missed (bold on a terminal). */
function passwordBox(username: string, password: string): string {
  const line = `admin password for '${username}': ${password}   (generated; shown only this once)`;
  const bold = (t: string) => (process.stdout.isTTY ? `\x1b[1m${t}\x1b[0m` : t);
  const bar = '─'.repeat(line.length + 2);
  return `\n  ┌${bar}┐\n  │ ${bold(line)} │\n  └${bar}┘\n\n`;
}

/** The ports a controller with this configuration listens on, with what holds each and how to move it. */
function listeners(config: Config): { port: number; what: string; move: string }[] {
  const all = [
    { port: config.port, what: 'the APIs', move: '--port N (env ZTC_PORT)' },
    config.router && config.routerPort ? { port: config.routerPort, what: 'the edge router', move: '--router-port N (env ZTC_ROUTER_PORT), or --no-router' } : undefined,
    config.ctrl && config.ctrlPort ? { port: config.ctrlPort, what: "routers' control channel", move: '--ctrl-port N (env ZTC_CTRL_PORT), or --no-ctrl' } : undefined,
    config.metricsPort ? { port: config.metricsPort, what: 'metrics and health checks', move: '--metrics-port N (env ZTC_METRICS_PORT)' } : undefined,
  ];
  return all.filter((l): l is NonNullable<typeof l> => !!l);
}

/**
 * Every port of this controller that another program holds, said at once (one at a time, a user
 * freed or moved one, started again, and met the next). Each is tried after the failed start has
 * closed what it had opened.
 */
async function portsInUse(config: Config): Promise<string> {
  const taken = (port: number) =>
    new Promise<boolean>((resolve) => {
      const probe = net.createServer();
      probe.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'EADDRINUSE'));
      probe.listen(port, config.bind, () => probe.close(() => resolve(false)));
    });
  const busy = [];
  for (const l of listeners(config)) if (await taken(l.port)) busy.push(l);
  if (!busy.length) return `A port on ${config.bind} was in use when the controller started, and is free now: start it again.`;
  const lines = busy.map((l) => `  ${l.port}  ${l.what}: ${l.move}`);
  return `${busy.length === 1 ? 'This port' : 'These ports'} on ${config.bind} ${busy.length === 1 ? 'is' : 'are'} already in use (another ztc, an OpenZiti controller or router, or another program). Stop what holds ${busy.length === 1 ? 'it' : 'them'}, or choose another:\n${lines.join('\n')}`;
}

/** The longest a stop (SIGTERM, SIGINT) may take before the process exits anyway (1), naming what had not finished. */
export const STOP_DEADLINE_MS = 10_000;
/** A second signal within this of the first is the same request delivered twice. */
const REPEAT_MS = 1000;

function unfinished(running: Running): string {
  const parts = running.unfinished();
  return parts.length ? ` (not finished: ${parts.join(', ')})` : '';
}

/** Start serving, print where and how to log in (in one write), and stop cleanly on SIGTERM/SIGINT. */
export async function runController(config: Config, format: LogFormat = logFormat(undefined)): Promise<Running> {
  let running: Running;
  try {
    running = await startController(config, {
      progress,
      logger: loggerOptions(config.logLevel, format === 'text' ? consoleLogStream() : undefined),
    });
  } catch (err) {
    if (err instanceof DataDirBusy) throw new CliError(err.message);
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new CliError(await portsInUse(config));
    if ((err as NodeJS.ErrnoException).code === 'EACCES') {
      const low = listeners(config).filter((l) => l.port < 1024);
      const lines = (low.length ? low : listeners(config).slice(0, 1)).map((l) => `  ${l.port}  ${l.what}: ${l.move}`);
      throw new CliError(`Not allowed to listen on ${low.length > 1 ? 'these ports' : 'this port'} on ${config.bind}: ports below 1024 need privileges (root, or CAP_NET_BIND_SERVICE). Choose another:\n${lines.join('\n')}`);
    }
    throw err;
  }
  const lines = [
    `ztc controller v${VERSION}`,
    `  data dir      ${config.dataDir}`,
    `  database      ${config.db ? redactUrl(config.db) : 'SQLite, ' + config.dataDir + '/ztc.db'}`,
    `  listening     https://${config.bind}:${config.port}`,
    `  client API    ${running.url}/edge/client/v1`,
    `  management    ${running.url}/edge/management/v1`,
    `  API docs      ${running.url}/docs`,
    `  root CA       SHA-256 ${sha256Fingerprint(running.ctx.pki.rootPem)}   (what ztc login asks you to trust)`,
  ];
  const edge = running.fabric?.edge;
  if (edge) lines.push(`  edge router   ${edge.url}   ('${edge.name}': SDKs connect, bind and dial here)`);
  if (running.fabric?.ctrlPort) lines.push(`  routers ctrl  tls:${config.hostnames[0] ?? 'localhost'}:${running.fabric.ctrlPort}   (ctrl.endpoint for upstream routers: ziti router run)`);
  if (config.metricsPort && config.metrics) lines.push(`  metrics       http://${config.bind}:${config.metricsPort}/metrics   (and /health-checks, open: keep this port on a trusted network)`);
  else if (config.metricsPort) lines.push(`  health        http://${config.bind}:${config.metricsPort}/health-checks   (metrics off: --no-metrics)`);
  if (config.eventsFile) lines.push(`  events file   ${config.eventsFile}   (JSON lines, one event each; ztc events -f streams them live)`);
  if (config.zacDir) lines.push(`  console       ${running.url}${ZAC_PATH}   (OpenZiti admin console, from ${config.zacDir})`);
  if (config.corsOrigins.length) lines.push(`  CORS origins  ${config.corsOrigins.join(', ')}`);
  if (running.boot.generatedPassword) lines.push(`  admin         ${config.adminUsername} (password below)`);
  else if (running.boot.adminCreated) lines.push(`  admin         ${config.adminUsername} (password as given)`);
  // One write: request log lines cannot land in the middle of the banner or the password.
  process.stdout.write(lines.join('\n') + '\n' + (running.boot.generatedPassword ? passwordBox(config.adminUsername, running.boot.generatedPassword) : ''));
  let stoppingSince: number | undefined;
  const stop = (signal: string) => {
    const log = running.app.log;
    if (stoppingSince !== undefined) {
      // The same signal twice at once is one request: sent to the process group and passed on by npm
      // (npm start), or Ctrl-C's SIGINT likewise. Asked again later: at once.
      if (Date.now() - stoppingSince < REPEAT_MS) return;
      log.warn({ signal }, `stopping at once, asked again${unfinished(running)}`);
      process.exit(1);
    }
    stoppingSince = Date.now();
    log.info({ signal }, 'shutting down');
    // Each part of the stop is bounded but the database's close; whatever hangs, the process ends.
    setTimeout(() => {
      log.error({ signal }, `shutdown did not finish in ${STOP_DEADLINE_MS / 1000} s: exiting anyway${unfinished(running)}`);
      process.exit(1);
    }, STOP_DEADLINE_MS);
    running.close().then(
      () => {
        log.info({ ms: Date.now() - stoppingSince! }, 'stopped');
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, `shutdown failed${unfinished(running)}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  return running;
}

export function serveCommand(): Command {
  return serverOptions(new Command('serve').description('run the controller: both Edge APIs over HTTPS on one port')).action(async (opts: Record<string, string | undefined>) => {
    const format = logFormat(opts.logFormat);
    const config = configFromOptions(opts);
    const running = await runController(config, format);
    // No password on the command line (ps shows it): `ztc login` asks for it.
    process.stdout.write(`log in with:   ${commandName()} login ${running.url} -u ${config.adminUsername}   (asks for the password)\n`);
  });
}
