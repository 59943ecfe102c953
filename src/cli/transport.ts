// The CLI speaks the Management API through one of two transports with the same interface:
// remote (HTTPS to a saved profile, CA pinned) or local (fastify inject on a data dir, no server).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import type { Config } from '../config.js';
import type { Progress } from '../model/pki/pki.js';
import type { App } from '../server/app.js';
import { apiOfPath, type MountedApi } from '../server/api-paths.js';
import { API_TOKEN_PREFIX } from '../model/resources/api-tokens.js';
import { CliError } from './errors.js';
import { httpsCall, nameProfile, parseReply, type Reply } from './https.js';
import { refreshProfile } from './oidc-login.js';
import { currentProfileName, loadProfile, missingProfile, type Profile } from './profile.js';
import type { Reader } from './local-read.js';
import type { Ctx } from '../model/context.js';

export interface Transport {
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Reply>;
  /**
   * A GET whose 200 body goes to `sink` as it arrives (a large export); any other answer is read
   * whole and returned, for expectOk.
   */
  download(path: string, accept: string, sink: (chunk: string) => void): Promise<Reply>;
  close(): Promise<void>;
  describe: string;
}

export { CliError, httpsCall, type Reply };

/** How a token is presented: an OIDC access token (a JWT) as Authorization: Bearer, as upstream takes it; others in zt-session. */
export const authHeader = (token: string): Record<string, string> => (/^ey[\w-]*\.[\w-]+\.[\w-]+$/.test(token) ? { authorization: `Bearer ${token}` } : { 'zt-session': token });

/** What to type to log in again, set when a remote transport opens (for the hint on a 401). */
let loginAgain = 'ztc login URL -u USER';

/** What to type to log in again with a profile's saved way of logging in. */
export const reloginCommand = (profile: Profile, name?: string) =>
  `${profile.relogin ?? `ztc login ${profile.url} -u ${profile.username}`}${profile.mfa ? ' --mfa-code CODE' : ''}${name ? ` --profile ${name}` : ''}`;

/** The profile a remote command uses, to name it in hints. */
let profileName: string | undefined;
/** Whether that profile holds an API token rather than a session (the hint after a 401 differs). */
let tokenProfile = false;

export class RemoteTransport implements Transport {
  readonly describe: string;
  constructor(private profile: Profile, private name?: string) {
    this.describe = profile.url;
    loginAgain = reloginCommand(profile, name);
    profileName = name ?? currentProfileName();
    nameProfile(profileName);
    tokenProfile = profile.token.startsWith(API_TOKEN_PREFIX);
  }
  async request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    await this.fresh();
    return httpsCall(this.profile.url + path, { method, body, caPem: this.profile.caPem, headers: { ...authHeader(this.profile.token), ...headers } });
  }
  async download(p: string, accept: string, sink: (chunk: string) => void): Promise<Reply> {
    await this.fresh();
    return httpsCall(this.profile.url + p, { caPem: this.profile.caPem, headers: { accept, ...authHeader(this.profile.token) }, sink });
  }
  /** An OIDC login's access token about to expire is renewed with its refresh token (and saved) first. */
  private async fresh() {
    const p = this.profile;
    if (!p.refreshToken || !p.expiresAt || Date.parse(p.expiresAt) - Date.now() > 60_000) return;
    this.profile = await refreshProfile(p, this.name);
  }
  async close() {}
}

export class LocalTransport implements Transport {
  readonly describe: string;
  /** Reads of declared resources, answered from the store without the app (local-read.ts); undefined when it cannot. */
  private reader?: Promise<Reader | undefined>;
  /** The data dir opened as the server opens it (PKI, first-start checks), and the admin's in-process token: made on the first request the reader does not answer. */
  private full?: Promise<{ ctx: Ctx; token: string; close: () => Promise<void> }>;
  /** One app per API, each built on the first call to it: a command pays only for the routes it calls. */
  private apps = new Map<MountedApi, Promise<App>>();
  private opened?: { ctx: Ctx };
  private constructor(private config: Config, private progress?: Progress) {
    this.describe = `data dir ${config.dataDir}`;
  }

  static async open(config: Config, progress?: Progress): Promise<LocalTransport> {
    const t = new LocalTransport(config, progress);
    t.reader = import('./local-read.js').then((m) => m.openReader(config));
    // A damaged database is said now, as by every open.
    await t.reader;
    return t;
  }

  /** The events hub of the opened data dir, once a request needed it (admin recovery records into it). */
  get events(): Ctx['events'] | undefined {
    return this.opened?.ctx.events;
  }

  private openFull() {
    this.full ??= (async () => {
      // The server is loaded only here: remote commands and local reads start without it.
      const { openDataDir } = await import('../server/controller.js');
      // A command's few writes checkpoint in their commits (SQLite's default): a thread for it would cost more.
      // No metrics: a command's own process is gone before anything could scrape what it counted, and
      // prom-client's default collectors (event-loop monitor, GC observer) cost it start-up time.
      const opened = await openDataDir({ ...this.config, metrics: false }, { progress: this.progress, checkpointThread: false, local: true });
      if (opened.boot.generatedPassword) {
        this.progress?.(`initialised ${this.config.dataDir}: default admin '${this.config.adminUsername}', password ${opened.boot.generatedPassword} (shown only this once)`);
      }
      this.opened = opened;
      return { ctx: opened.ctx, token: randomBytes(32).toString('base64url'), close: () => opened.close() };
    })();
    return this.full;
  }

  private app(path: string): Promise<App> {
    const api = apiOfPath(path);
    let app = this.apps.get(api);
    if (!app) {
      app = (async () => {
        const [{ ctx, token }, { buildApp }] = await Promise.all([this.openFull(), import('../server/app.js')]);
        const admin = await ctx.store.db.selectFrom('identities').select(['id', 'name']).where('isDefaultAdmin', '=', 1).executeTakeFirstOrThrow();
        return buildApp(ctx, { localAdmin: { token, identityId: admin.id, identityName: admin.name }, apis: [api] });
      })();
      this.apps.set(api, app);
    }
    return app;
  }

  async request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    if (method === 'GET' && body === undefined) {
      const answered = await (await this.reader)?.get(path);
      if (answered) return answered;
    }
    const app = await this.app(path);
    const { token } = await this.openFull();
    const res = await app.inject({
      method: method as 'GET',
      url: path,
      headers: { 'zt-session': token, accept: 'application/json', ...(body !== undefined && typeof body !== 'string' ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(body !== undefined ? { payload: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
    return { status: res.statusCode, headers: res.headers, text: res.body, json: parseReply(res.body) };
  }

  async download(p: string, accept: string, sink: (chunk: string) => void): Promise<Reply> {
    const app = await this.app(p);
    const { token } = await this.openFull();
    const res = await app.inject({ method: 'GET', url: p, headers: { 'zt-session': token, accept }, payloadAsStream: true });
    let text = '';
    // A character may be split between two chunks.
    const decoder = new StringDecoder('utf8');
    for await (const chunk of res.stream()) {
      const s = Buffer.isBuffer(chunk) ? decoder.write(chunk) : String(chunk);
      if (res.statusCode === 200) sink(s);
      else text += s;
    }
    if (res.statusCode === 200) sink(decoder.end());
    else text += decoder.end();
    return { status: res.statusCode, headers: res.headers, text, json: parseReply(text) };
  }

  async close() {
    for (const app of this.apps.values()) await (await app.catch(() => undefined))?.close();
    if (this.full) {
      const full = await this.full.catch(() => undefined);
      // Stored events still queued (admin recovery) reach the database before it closes.
      await full?.ctx.events.flush();
      await full?.close();
    }
    await (await this.reader?.catch(() => undefined))?.close();
  }
}

export interface TargetOptions {
  dataDir?: string;
  profile?: string;
  config?: string;
  /** Local mode on PostgreSQL: the database URL (the data dir still holds the PKI). */
  db?: string;
}

/** --data-dir means local; otherwise the saved profile. */
export async function openTransport(o: TargetOptions, progress?: Progress): Promise<Transport> {
  if (o.dataDir || o.config) {
    const { loadConfig } = await import('../config.js');
    const config = loadConfig({ dataDir: o.dataDir, config: o.config, ...(o.db ? { db: o.db } : {}) });
    // Only serve and quickstart make a controller; a typo in -d must not quietly start a new one.
    if (!fs.existsSync(path.join(config.dataDir, 'pki'))) {
      throw new CliError(`${config.dataDir} holds no controller (no pki/ in it): check the path, or create one with \`ztc serve -d ${config.dataDir}\` or \`ztc quickstart -d ${config.dataDir}\``);
    }
    return LocalTransport.open(config, progress);
  }
  const profile = loadProfile(o.profile);
  if (!profile && o.profile) throw new CliError(missingProfile(o.profile));
  if (!profile) throw new CliError('Not logged in: run `ztc login <url> -u <user> -p <password>`, or pass --data-dir DIR to work on a local data dir');
  if (!profile.token) throw new CliError(`Logged out of ${profile.url}: run \`${reloginCommand(profile, o.profile)}\` again`);
  return new RemoteTransport(profile, o.profile);
}

/** The body of a 2xx answer, or a CliError carrying the server's message. */
export function expectOk(reply: Reply, what: string): Reply['json'] {
  if (reply.status >= 200 && reply.status < 300) return reply.json ?? {};
  const e = reply.json?.error;
  if (e) {
    const hint = what === 'Login' || (reply.status !== 401 && reply.status !== 403) ? '' : accessHint(e.message);
    throw new CliError(`${what} failed: ${e.message} [${e.code}, HTTP ${reply.status}]${hint}`);
  }
  throw new CliError(`${what} failed: HTTP ${reply.status} ${reply.text.slice(0, 200)}`);
}

/** Why a controller could not be reached, in words that say what to check next. */

/**
 * What to do after a 401/403, chosen by its cause: logging in again helps an expired session, not an
 * identity that lacks the rights (the server says "not an admin" then).
 */
function accessHint(message: string): string {
  if (/not an admin/i.test(message)) {
    const who = profileName ? `profile '${profileName}'` : 'this profile';
    return `\nthe identity of ${who} may not do this (logging in again will not change that): use an admin's profile (ztc profile list; --profile NAME), or have an admin run ztc identity update NAME --is-admin`;
  }
  if (/read-only/i.test(message)) {
    const who = profileName ? `profile '${profileName}'` : 'this profile';
    return `\n${who} may only read (logging in again will not change that): use an admin's profile for changes (ztc profile list; --profile NAME)`;
  }
  // An API token has no session to renew: logging in again with the same file fails the same way.
  if (tokenProfile) {
    const who = profileName ? `profile '${profileName}'` : 'this profile';
    return `\nthe API token of ${who} no longer works: an admin creates another (ztc token create NAME), then log in with it: ztc login URL --token-file FILE${profileName ? ` --profile ${profileName}` : ''}`;
  }
  if (/expired|not authorized|session/i.test(message)) return `\nsession expired or ended, log in again: ${loginAgain}`;
  return '';
}
