import { Command, Option } from 'commander';
import { loadConfig } from '../../config.js';
import type { Config } from '../../config.js';
import { startController, type Running } from '../../server/controller.js';
import { loggerOptions } from '../../server/logging.js';
import { ZAC_PATH } from '../../server/zac.js';
import { redactUrl } from '../../store/db.js';
import { VERSION } from '../../version.js';
import { progress } from '../output.js';


/** The flags `serve` and `quickstart` share. */
export function serverOptions(cmd: Command): Command {
  return cmd
    .option('-d, --data-dir <dir>', 'where the database and PKI live (env ZTC_DATA_DIR; default ./.ztc-data)')
    .option('--config <file>', 'YAML or JSON config file (default: ztc.yaml in the data dir, if present)')
    .option('-p, --port <port>', 'HTTPS port (env ZTC_PORT; default 1280)')
    .option('--db <url>', 'postgres://user:pass@host:port/db to use PostgreSQL instead of the data dir\'s SQLite file (env ZTC_DB)')
    .option('--bind <address>', 'address to listen on (env ZTC_BIND; default 0.0.0.0)')
    .option('--hostnames <names>', 'comma-separated names for the server certificate (env ZTC_HOSTNAMES)')
    .option('--admin-username <name>', 'default admin username at first start (default admin)')
    .option('--admin-password <password>', 'default admin password at first start (env ZTC_ADMIN_PASSWORD; generated when absent)')
    .option('--session-timeout-minutes <n>', 'idle lifetime of API sessions (default 30)')
    .option('--auth-rate-limit-per-minute <n>', 'logins and enrollments a minute from one address before 429 (default 300; 0: none)')
    .option('--api-rate-limit-per-minute <n>', 'requests a minute per API session before 429 (default 6000; 0: none)')
    .option('--crypto-queue-limit <n>', 'logins/enrollments waiting for a crypto worker before 429 (default 128)')
    .option('--zac-dir <dir>', 'serve this build of OpenZiti\'s admin console (ZAC) at /zac/ (env ZTC_ZAC_DIR)')
    .option('--cors-origins <origins>', 'comma-separated web origins allowed to call the APIs from a browser, e.g. https://console.example.com (env ZTC_CORS_ORIGINS; default none)')
    .addOption(new Option('--log-level <level>', 'log level').choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']));
}

export function configFromOptions(opts: Record<string, string | undefined>, overrides: Partial<Config> = {}): Config {
  const config = loadConfig({
    dataDir: opts.dataDir,
    config: opts.config,
    port: opts.port,
    db: opts.db,
    bind: opts.bind,
    hostnames: opts.hostnames,
    adminUsername: opts.adminUsername,
    adminPassword: opts.adminPassword,
    sessionTimeoutMinutes: opts.sessionTimeoutMinutes,
    authRateLimitPerMinute: opts.authRateLimitPerMinute,
    apiRateLimitPerMinute: opts.apiRateLimitPerMinute,
    cryptoQueueLimit: opts.cryptoQueueLimit,
    logLevel: opts.logLevel,
    zacDir: opts.zacDir,
    corsOrigins: opts.corsOrigins,
  });
  return { ...config, ...overrides };
}

/** Start serving, print where and how to log in, and stop cleanly on SIGTERM/SIGINT. */
export async function runController(config: Config): Promise<Running> {
  const running = await startController(config, {
    progress,
    logger: loggerOptions(config.logLevel),
  });
  const out = process.stdout;
  out.write(`ztc controller v${VERSION}\n`);
  out.write(`  data dir      ${config.dataDir}\n`);
  out.write(`  database      ${config.db ? redactUrl(config.db) : 'SQLite, ' + config.dataDir + '/ztc.db'}\n`);
  out.write(`  listening     https://${config.bind}:${config.port}\n`);
  out.write(`  client API    ${running.url}/edge/client/v1\n`);
  out.write(`  management    ${running.url}/edge/management/v1\n`);
  out.write(`  API docs      ${running.url}/docs\n`);
  if (config.zacDir) out.write(`  console       ${running.url}${ZAC_PATH}   (OpenZiti admin console, from ${config.zacDir})\n`);
  if (config.corsOrigins.length) out.write(`  CORS origins  ${config.corsOrigins.join(', ')}\n`);
  if (running.boot.generatedPassword) {
    out.write(`  admin         ${config.adminUsername} / ${running.boot.generatedPassword}   (generated; shown only this once)\n`);
  } else if (running.boot.adminCreated) {
    out.write(`  admin         ${config.adminUsername} (password as given)\n`);
  }
  const stop = async (signal: string) => {
    running.app.log.info({ signal }, 'shutting down');
    await running.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  return running;
}

export function serveCommand(): Command {
  return serverOptions(new Command('serve').description('run the controller: both Edge APIs over HTTPS on one port')).action(async (opts: Record<string, string | undefined>) => {
    const config = configFromOptions(opts);
    const running = await runController(config);
    process.stdout.write(`log in with:   ztc login ${running.url} -u ${config.adminUsername} -p <password>\n`);
  });
}
