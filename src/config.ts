// Controller configuration: command-line flags win over ZTC_* environment variables, which win over
// the config file (--config FILE, or ztc.yaml / ztc.json in the data dir), which wins over defaults.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';

export interface Config {
  dataDir: string;
  /** postgres://... selects PostgreSQL; empty means the data dir's SQLite file. */
  db: string;
  bind: string;
  port: number;
  /** Names the server certificate carries and clients use to reach us (localhost and 127.0.0.1 are always added). */
  hostnames: string[];
  /**
   * The address clients use to reach the APIs, host:port (upstream's edge.api.address): the issuer of
   * enrollment JWTs (and so the controller of identity files), /protocols and the controllers list.
   * Empty: the first of hostnames with port. Its host is added to the server certificate's names.
   */
  apiAddress: string;
  adminUsername: string;
  adminPassword: string;
  sessionTimeoutMinutes: number;
  enrollmentTtlMinutes: number;
  logLevel: string;
  /** Authentication and enrollment requests per minute from one client address (0: no limit). */
  authRateLimitPerMinute: number;
  /** Other API requests per minute per API session (or per address without one; 0: no limit). */
  apiRateLimitPerMinute: number;
  /** Crypto tasks (password checks, CSR signing) waiting for a worker before more are refused with 429. */
  cryptoQueueLimit: number;
  /** Open connections one client address may hold (0: no cap). */
  maxConnectionsPerAddress: number;
  /** Time a client has to complete the TLS handshake and send the request headers. */
  headersTimeoutSeconds: number;
  /** Time a kept-alive connection may wait for its next request before it is closed. */
  idleTimeoutSeconds: number;
  /** A file holding the default admin's password (not visible in `ps`, unlike --admin-password). */
  adminPasswordFile: string;
  /** A directory holding a build of OpenZiti's admin console (ZAC), served at /zac/; empty: not served. */
  zacDir: string;
  /** Web origins (https://host[:port]) whose pages may call the APIs from a browser (CORS); empty: none. */
  corsOrigins: string[];
  /**
   * Enforce the auth policies' updb password rules (minPasswordLength, requireNumberChar, ...) on every
   * password set. Off by default, as upstream: it stores the rules but accepts any password the API
   * document allows (5 to 100 characters on change, any on create).
   */
  enforcePasswordPolicy: boolean;
  /**
   * Hosts (as written in a signer's jwksEndpoint) whose key sets may be fetched from loopback, private or
   * link-local addresses; empty: none, so a signer cannot point the controller at its own network.
   */
  jwksPrivateHosts: string[];
  /** The largest body POST /import accepts, in MiB (a model of 100,000 identities is about 10). */
  importBodyLimitMb: number;
  /** Run the embedded edge router (SDKs connect, bind and dial through it). */
  router: boolean;
  /** Its TLS port (0: any free port). */
  routerPort: number;
  /** The host name SDKs reach it at (its certificate and supportedProtocols); empty: the first of hostnames. */
  routerAddress: string;
  /** Listen for upstream OpenZiti routers' control channels. */
  ctrl: boolean;
  /** The control channel's TLS port (0: any free port). */
  ctrlPort: number;
  /**
   * A plain-HTTP port serving only /metrics and /health-checks, without authentication, for a Prometheus
   * or load balancer on a trusted network (0: not served; /metrics on the API port needs an admin then).
   */
  metricsPort: number;
  /**
   * Count requests, logins, enrollments and store queries for /metrics (prom-client). Off: nothing is
   * counted and /metrics answers 404 (the health checks stay); for a controller scraped by nothing, and
   * for the bench that measures what metrics cost.
   */
  metrics: boolean;
  /** A JSON-lines file the events are appended to (model/events/file-sink.ts); empty: none. */
  eventsFile: string;
  /** The events file rotates when it would pass this size (MiB). */
  eventsFileMaxMb: number;
  /** Rotated events files kept (FILE.1 ... FILE.N). */
  eventsFileKeep: number;
  /** Days the stored audit (entity changes, logins, enrollments, admin recovery) is kept. */
  auditRetentionDays: number;
  /**
   * Serve the OIDC provider under /oidc and offer it in /version (OIDC_AUTH, edge-oidc): current SDKs,
   * the ziti CLI and ZAC then log in through it. Off: they use legacy zt-session logins.
   */
  oidc: boolean;
  /** Lifetime of OIDC access tokens (upstream: 30 min). */
  oidcAccessTokenMinutes: number;
  /** Lifetime of OIDC refresh tokens, and so of a JWT API session nobody refreshes (upstream: 24 h). */
  oidcRefreshTokenMinutes: number;
  /** Lifetime of OIDC ID tokens (upstream: 30 min). */
  oidcIdTokenMinutes: number;
  /**
   * Redirect URIs OIDC clients may use beside the defaults (openziti://auth/callback and
   * http(s)://localhost|127.0.0.1:PORT/auth/callback): each matched exactly, `:*` standing for any port.
   */
  oidcRedirectUris: string[];
}

export const defaults = (): Config => ({
  dataDir: path.resolve('.ztc-data'),
  db: '',
  bind: '0.0.0.0',
  port: 1280,
  hostnames: [os.hostname()],
  apiAddress: '',
  adminUsername: 'admin',
  adminPassword: '',
  sessionTimeoutMinutes: 30,
  enrollmentTtlMinutes: 180,
  logLevel: 'info',
  authRateLimitPerMinute: 300,
  apiRateLimitPerMinute: 6000,
  cryptoQueueLimit: 128,
  maxConnectionsPerAddress: 256,
  headersTimeoutSeconds: 10,
  idleTimeoutSeconds: 60,
  adminPasswordFile: '',
  zacDir: '',
  corsOrigins: [],
  enforcePasswordPolicy: false,
  jwksPrivateHosts: [],
  importBodyLimitMb: 64,
  router: true,
  routerPort: 3022,
  routerAddress: '',
  ctrl: true,
  ctrlPort: 6262,
  metricsPort: 0,
  metrics: true,
  eventsFile: '',
  eventsFileMaxMb: 100,
  eventsFileKeep: 5,
  auditRetentionDays: 90,
  oidc: true,
  oidcAccessTokenMinutes: 30,
  oidcRefreshTokenMinutes: 24 * 60,
  oidcIdTokenMinutes: 30,
  oidcRedirectUris: [],
});

type Raw = Partial<Record<keyof Config, unknown>>;

const ENV: Record<keyof Config, string> = {
  dataDir: 'ZTC_DATA_DIR',
  db: 'ZTC_DB',
  bind: 'ZTC_BIND',
  port: 'ZTC_PORT',
  hostnames: 'ZTC_HOSTNAMES',
  apiAddress: 'ZTC_API_ADDRESS',
  adminUsername: 'ZTC_ADMIN_USERNAME',
  adminPassword: 'ZTC_ADMIN_PASSWORD',
  sessionTimeoutMinutes: 'ZTC_SESSION_TIMEOUT_MINUTES',
  enrollmentTtlMinutes: 'ZTC_ENROLLMENT_TTL_MINUTES',
  logLevel: 'ZTC_LOG_LEVEL',
  authRateLimitPerMinute: 'ZTC_AUTH_RATE_LIMIT_PER_MINUTE',
  apiRateLimitPerMinute: 'ZTC_API_RATE_LIMIT_PER_MINUTE',
  cryptoQueueLimit: 'ZTC_CRYPTO_QUEUE_LIMIT',
  maxConnectionsPerAddress: 'ZTC_MAX_CONNECTIONS_PER_ADDRESS',
  headersTimeoutSeconds: 'ZTC_HEADERS_TIMEOUT_SECONDS',
  idleTimeoutSeconds: 'ZTC_IDLE_TIMEOUT_SECONDS',
  adminPasswordFile: 'ZTC_ADMIN_PASSWORD_FILE',
  zacDir: 'ZTC_ZAC_DIR',
  corsOrigins: 'ZTC_CORS_ORIGINS',
  enforcePasswordPolicy: 'ZTC_ENFORCE_PASSWORD_POLICY',
  jwksPrivateHosts: 'ZTC_JWKS_PRIVATE_HOSTS',
  importBodyLimitMb: 'ZTC_IMPORT_BODY_LIMIT_MB',
  router: 'ZTC_ROUTER',
  routerPort: 'ZTC_ROUTER_PORT',
  routerAddress: 'ZTC_ROUTER_ADDRESS',
  ctrl: 'ZTC_CTRL',
  ctrlPort: 'ZTC_CTRL_PORT',
  metricsPort: 'ZTC_METRICS_PORT',
  metrics: 'ZTC_METRICS',
  eventsFile: 'ZTC_EVENTS_FILE',
  eventsFileMaxMb: 'ZTC_EVENTS_FILE_MAX_MB',
  eventsFileKeep: 'ZTC_EVENTS_FILE_KEEP',
  auditRetentionDays: 'ZTC_AUDIT_RETENTION_DAYS',
  oidc: 'ZTC_OIDC',
  oidcAccessTokenMinutes: 'ZTC_OIDC_ACCESS_TOKEN_MINUTES',
  oidcRefreshTokenMinutes: 'ZTC_OIDC_REFRESH_TOKEN_MINUTES',
  oidcIdTokenMinutes: 'ZTC_OIDC_ID_TOKEN_MINUTES',
  oidcRedirectUris: 'ZTC_OIDC_REDIRECT_URIS',
};

import { ConfigError } from './config-error.js';

export { ConfigError };

function readFile(file: string): Raw {
  const text = fs.readFileSync(file, 'utf8');
  const parsed = file.endsWith('.json') ? JSON.parse(text) : YAML.parse(text);
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError(`${file}: expected a mapping of settings`);
  }
  return parsed as Raw;
}

function fromEnv(env: NodeJS.ProcessEnv): Raw {
  const out: Raw = {};
  for (const [key, name] of Object.entries(ENV) as [keyof Config, string][]) {
    if (env[name] !== undefined && env[name] !== '') out[key] = env[name];
  }
  return out;
}

function coerce(key: keyof Config, value: unknown, source: string): unknown {
  const base = defaults()[key];
  if (typeof base === 'boolean') {
    if (typeof value === 'boolean') return value;
    const v = String(value).trim().toLowerCase();
    if (['true', 'yes', 'on', '1'].includes(v)) return true;
    if (['false', 'no', 'off', '0'].includes(v)) return false;
    throw new ConfigError(`${source}: ${key} must be true or false, got '${value}'`);
  }
  if (typeof base === 'number') {
    const n = typeof value === 'number' ? value : Number(value);
    if (!Number.isInteger(n) || n < 0) throw new ConfigError(`${source}: ${key} must be a whole number, got '${value}'`);
    return n;
  }
  if (Array.isArray(base)) {
    const list = Array.isArray(value) ? value : String(value).split(',');
    return list.map((s) => String(s).trim()).filter(Boolean);
  }
  return String(value);
}

/** The password in a file (its first line): one setting or the other, not both. */
function readPasswordFile(file: string, given: string): string {
  if (given) throw new ConfigError('give the admin password either in a file (adminPasswordFile) or directly (adminPassword), not both');
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(`cannot read the admin password file ${file}: ${(e as Error).message}`);
  }
  const password = text.split(/\r?\n/)[0];
  if (!password) throw new ConfigError(`the admin password file ${file} is empty`);
  return password;
}

/** An origin as browsers send it (scheme://host[:port], no path): the only form the Origin header takes. */
function webOrigin(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(`corsOrigins: '${text}' is not an origin such as https://console.example.com`);
  }
  if (!/^https?:$/.test(url.protocol) || url.pathname !== '/' || url.search || url.hash || url.username || url.password) {
    throw new ConfigError(`corsOrigins: '${text}' must be a web origin such as https://console.example.com (scheme, host and port only)`);
  }
  return url.origin;
}

/** host[:port] as upstream's edge.api.address takes it (a scheme and a trailing slash are forgiven). */
function apiAddressOf(text: string): string {
  const bare = text.trim().replace(/^https:\/\//i, '').replace(/\/$/, '');
  let url: URL | undefined;
  try {
    url = new URL(`https://${bare}`);
  } catch {
    url = undefined;
  }
  if (!url || url.pathname !== '/' || url.search || url.hash || url.username || url.password || !url.hostname) {
    throw new ConfigError(`apiAddress: '${text}' must be host:port, such as ctrl.example.com:1280`);
  }
  return url.host;
}

/** A configured OIDC redirect URI: an absolute URI without a fragment (matched exactly; `:*` is any port). */
function redirectUriSetting(text: string): void {
  let url: URL | undefined;
  try {
    url = new URL(text.replace(/:\*(?=\/|$)/, ''));
  } catch {
    url = undefined;
  }
  if (!url || url.hash || url.username || url.password || /\*/.test(text.replace(/:\*(?=\/|$)/, ''))) {
    throw new ConfigError(`oidcRedirectUris: '${text}' must be an absolute URI such as http://127.0.0.1:*/auth/callback or myapp://callback (no fragment; '*' only as the port)`);
  }
}

/** The https URL clients reach the APIs at: apiAddress, or the first host name and the port served. */
export function advertisedApiUrl(config: Pick<Config, 'apiAddress' | 'hostnames' | 'port'>): string {
  return `https://${config.apiAddress || `${config.hostnames[0] ?? 'localhost'}:${config.port}`}`;
}

/** Merge layers; `flags` holds only what the user typed. */
export function loadConfig(flags: Raw & { config?: string }, env: NodeJS.ProcessEnv = process.env): Config {
  const envRaw = fromEnv(env);
  const dataDirGuess = path.resolve(String(flags.dataDir ?? envRaw.dataDir ?? defaults().dataDir));
  let file: string | undefined = flags.config ?? env.ZTC_CONFIG;
  if (!file) {
    file = ['ztc.yaml', 'ztc.yml', 'ztc.json'].map((f) => path.join(dataDirGuess, f)).find((f) => fs.existsSync(f));
  }
  const layers: [string, Raw][] = [];
  if (file) layers.push([file, readFile(file)]);
  layers.push(['environment', envRaw], ['command line', flags]);

  const cfg = defaults();
  for (const [source, raw] of layers) {
    for (const [k, v] of Object.entries(raw)) {
      if (!(k in cfg)) {
        if (source === 'command line' && k === 'config') continue;
        throw new ConfigError(`${source}: unknown setting '${k}'`);
      }
      if (v === undefined) continue;
      (cfg as unknown as Record<string, unknown>)[k] = coerce(k as keyof Config, v, source);
    }
  }
  cfg.dataDir = path.resolve(cfg.dataDir);
  if (cfg.zacDir) cfg.zacDir = path.resolve(cfg.zacDir);
  cfg.corsOrigins = cfg.corsOrigins.map(webOrigin);
  if (cfg.apiAddress) {
    cfg.apiAddress = apiAddressOf(cfg.apiAddress);
    // The certificate must name the host clients are told to use.
    const host = new URL(`https://${cfg.apiAddress}`).hostname.replace(/^\[|\]$/g, '');
    if (!cfg.hostnames.includes(host)) cfg.hostnames = [...cfg.hostnames, host];
  }
  if (cfg.port > 65535) throw new ConfigError(`port must be at most 65535, got ${cfg.port}`);
  if (cfg.routerPort > 65535) throw new ConfigError(`routerPort must be at most 65535, got ${cfg.routerPort}`);
  if (cfg.ctrlPort > 65535) throw new ConfigError(`ctrlPort must be at most 65535, got ${cfg.ctrlPort}`);
  if (cfg.ctrl && cfg.ctrlPort && (cfg.ctrlPort === cfg.port || (cfg.router && cfg.ctrlPort === cfg.routerPort))) throw new ConfigError(`ctrlPort ${cfg.ctrlPort} is taken by another listener: the control channel needs a port of its own (--ctrl-port N, or --no-ctrl)`);
  if (cfg.metricsPort > 65535) throw new ConfigError(`metricsPort must be at most 65535, got ${cfg.metricsPort}`);
  if (cfg.metricsPort && [cfg.port, cfg.router ? cfg.routerPort : 0, cfg.ctrl ? cfg.ctrlPort : 0].includes(cfg.metricsPort)) throw new ConfigError(`metricsPort ${cfg.metricsPort} is taken by another listener: metrics need a port of their own (--metrics-port N)`);
  if (cfg.router && cfg.routerPort && cfg.routerPort === cfg.port) throw new ConfigError(`routerPort and port are both ${cfg.port}: the edge router needs a port of its own (--router-port N, or --no-router)`);
  if (cfg.sessionTimeoutMinutes < 1) throw new ConfigError('sessionTimeoutMinutes must be at least 1');
  if (cfg.enrollmentTtlMinutes < 5) throw new ConfigError('enrollmentTtlMinutes must be at least 5');
  if (cfg.headersTimeoutSeconds < 1) throw new ConfigError('headersTimeoutSeconds must be at least 1');
  if (cfg.importBodyLimitMb < 1) throw new ConfigError('importBodyLimitMb must be at least 1');
  if (cfg.idleTimeoutSeconds < 1) throw new ConfigError('idleTimeoutSeconds must be at least 1');
  if (cfg.eventsFile) cfg.eventsFile = path.resolve(cfg.dataDir, cfg.eventsFile);
  if (cfg.eventsFileMaxMb < 1) throw new ConfigError('eventsFileMaxMb must be at least 1');
  if (cfg.auditRetentionDays < 1) throw new ConfigError('auditRetentionDays must be at least 1');
  for (const k of ['oidcAccessTokenMinutes', 'oidcRefreshTokenMinutes', 'oidcIdTokenMinutes'] as const) if (cfg[k] < 1) throw new ConfigError(`${k} must be at least 1`);
  for (const u of cfg.oidcRedirectUris) redirectUriSetting(u);
  if (cfg.adminPasswordFile) cfg.adminPassword = readPasswordFile(cfg.adminPasswordFile, cfg.adminPassword);
  return cfg;
}
