// `ztc login` through a controller's OIDC provider, when its /version offers it (OIDC_AUTH and the
// edge-oidc API), as upstream's `ziti edge login` does since 2.0: the authorization code flow with PKCE,
// the credentials posted to /oidc/login/{password,cert,ext-jwt} (the Go SDK's way, which the ziti CLI
// uses), TOTP when the login owes it, and the code received on a callback listening on 127.0.0.1. The
// profile then holds the access token (sent as Authorization: Bearer) and the refresh token, which
// renews it when it is about to expire (transport.ts).
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import { readIdentityFile } from './identity-file.js';
import { currentProfileName, saveProfile, type Profile } from './profile.js';
import { ask } from './prompt.js';
import { CliError } from './errors.js';
import { httpsCall, type Reply } from './https.js';

export const OIDC_CLIENT = 'openziti';

/** Whether the controller offers the OIDC login current clients choose (OIDC_AUTH and edge-oidc in /version). */
export async function offersOidc(base: string, caPem: string): Promise<boolean> {
  const v = await httpsCall(`${base}/version`, { caPem }).catch(() => undefined);
  const data = v?.json?.data as { capabilities?: string[]; apiVersions?: Record<string, { v1?: { path?: string } }> } | undefined;
  return !!data?.capabilities?.includes('OIDC_AUTH') && !!data.apiVersions?.['edge-oidc']?.v1?.path;
}

export interface OidcTokens {
  accessToken: string;
  refreshToken?: string;
  /** When the access token expires (ISO). */
  expiresAt: string;
  identityName?: string;
}

const form = (o: Record<string, string | undefined>) => new URLSearchParams(Object.entries(o).filter((e): e is [string, string] => e[1] !== undefined)).toString();
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** A local callback on 127.0.0.1 that waits for the redirect carrying the code (and checks its state). */
async function callbackServer(state: string): Promise<{ uri: string; code: Promise<string>; close: () => void }> {
  let settle!: (v: string) => void;
  let fail!: (e: Error) => void;
  const code = new Promise<string>((resolve, reject) => ((settle = resolve), (fail = reject)));
  const server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (u.pathname !== '/auth/callback') return void res.writeHead(404).end();
    const error = u.searchParams.get('error');
    if (error) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end(`login failed: ${error}`);
      return fail(new CliError(`Login failed: ${error}: ${u.searchParams.get('error_description') ?? ''}`));
    }
    if (u.searchParams.get('state') !== state || !u.searchParams.get('code')) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('unexpected callback');
      return fail(new CliError('Login failed: the callback carried another state or no code'));
    }
    res.writeHead(200, { 'content-type': 'text/plain' }).end('logged in: you may close this page');
    settle(u.searchParams.get('code')!);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { uri: `http://127.0.0.1:${port}/auth/callback`, code, close: () => server.close() };
}

const why = (r: Reply) => {
  const j = r.json as { error?: unknown; error_description?: string } | undefined;
  const e = j?.error as { message?: string; code?: string } | string | undefined;
  if (typeof e === 'string') return `${e}${j?.error_description ? `: ${j.error_description}` : ''} (HTTP ${r.status})`;
  return e?.message ? `${e.message} [${e.code}, HTTP ${r.status}]` : `HTTP ${r.status} ${r.text.slice(0, 200)}`;
};

export interface OidcLogin {
  method: 'password' | 'cert' | 'ext-jwt';
  username?: string;
  password?: string;
  tls?: { cert?: string; key?: string };
  extJwt?: string;
  mfaCode?: string;
}

export async function oidcLogin(base: string, caPem: string, o: OidcLogin): Promise<OidcTokens> {
  const tls = o.tls ?? {};
  const verifier = randomBytes(32).toString('base64url');
  const state = randomBytes(16).toString('base64url');
  const cb = await callbackServer(state);
  try {
    const q = form({
      client_id: OIDC_CLIENT, response_type: 'code', scope: 'openid offline_access', state, redirect_uri: cb.uri, method: o.method,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256', nonce: randomBytes(16).toString('base64url'),
    });
    const start = await httpsCall(`${base}/oidc/authorize?${q}`, { caPem, ...tls });
    const id = /authRequestID=([^&]+)/.exec(String(start.headers.location ?? ''))?.[1];
    if (start.status !== 302 || !id) throw new CliError(`Login failed: the controller did not start an OIDC login (${why(start)})`);
    const authRequestId = decodeURIComponent(id);
    const headers = { ...FORM, ...(o.extJwt ? { authorization: `Bearer ${o.extJwt}` } : {}) };
    let step = await httpsCall(`${base}/oidc/login/${o.method}`, { method: 'POST', caPem, ...tls, headers, body: form({ id: authRequestId, username: o.username, password: o.password }) });
    if (step.status === 401 && o.method === 'password') {
      throw new CliError(
        `Login failed: the controller refused username '${o.username}' with that password [${(step.json?.error as { code?: string })?.code ?? 'INVALID_AUTH'}, HTTP 401]: check both (-u NAME). ` +
          `A lost admin password is reset on the controller's host: ztc admin reset-password -d DATA_DIR (see docs/operations.md, "Lost admin password").`,
      );
    }
    if (step.status === 200 && step.headers['totp-required']) {
      const enrolled = (step.json as { authQueries?: { typeId?: string; isTotpEnrolled?: boolean }[] } | undefined)?.authQueries?.find((a) => a.typeId === 'TOTP')?.isTotpEnrolled;
      if (enrolled === false) throw new CliError('This identity must enroll MFA before it may log in: log in with --legacy (a session that may enroll MFA), run ztc mfa enable and ztc mfa verify CODE, then log in again');
      let code = o.mfaCode;
      if (!code) {
        if (!process.stdin.isTTY) throw new CliError('This identity needs MFA: pass --mfa-code CODE (a code from the authenticator app, or a recovery code)');
        code = (await ask('MFA code (or a recovery code): ')).trim();
      }
      step = await httpsCall(`${base}/oidc/login/totp`, { method: 'POST', caPem, ...tls, headers: FORM, body: form({ id: authRequestId, code }) });
      if (step.status !== 302) throw new CliError(`MFA failed: ${why(step)}: check the device's clock, or use one of the recovery codes`);
    }
    if (step.status !== 302) throw new CliError(`Login failed: ${why(step)}`);
    // The login's redirect leads through the controller's callback to ours, which takes the code.
    const back = await httpsCall(new URL(String(step.headers.location), base).toString(), { caPem, ...tls });
    const location = String(back.headers.location ?? '');
    if (back.status !== 302 || !location.startsWith(cb.uri)) throw new CliError(`Login failed: no code came back (${why(back)})`);
    await new Promise<void>((resolve, reject) => http.get(location, (res) => (res.resume(), res.on('end', resolve))).on('error', reject));
    const code = await cb.code;
    const tok = await httpsCall(`${base}/oidc/oauth/token`, {
      method: 'POST', caPem, ...tls, headers: FORM,
      body: form({ grant_type: 'authorization_code', client_id: OIDC_CLIENT, code, code_verifier: verifier, redirect_uri: cb.uri }),
    });
    if (tok.status !== 200) throw new CliError(`Login failed: the token request was refused: ${why(tok)}`);
    return tokensOf(tok);
  } finally {
    cb.close();
  }
}

function tokensOf(r: Reply): OidcTokens {
  const t = JSON.parse(r.text) as { access_token: string; refresh_token?: string; expires_in?: number; id_token?: string };
  const name = t.id_token ? (claims(t.id_token).name as string | undefined) : undefined;
  return { accessToken: t.access_token, refreshToken: t.refresh_token, expiresAt: new Date(Date.now() + (t.expires_in ?? 0) * 1000).toISOString(), identityName: name };
}

export const claims = (jwt: string): Record<string, unknown> => {
  try {
    return JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8'));
  } catch {
    return {};
  }
};

/** A JWT (an OIDC access token) rather than a zt-session token or an API token. */
export const isJwt = (token: string) => /^ey[\w-]*\.[\w-]+\.[\w-]+$/.test(token);

/** New tokens for a refresh token (single use: the answer carries the next one), or undefined when refused. */
export async function refreshTokens(base: string, caPem: string, refreshToken: string, tls: { cert?: string; key?: string } = {}): Promise<OidcTokens | undefined> {
  const r = await httpsCall(`${base}/oidc/oauth/token`, {
    method: 'POST', caPem, ...tls, headers: { ...FORM, authorization: `Basic ${Buffer.from(`${OIDC_CLIENT}:`).toString('base64')}` },
    body: form({ grant_type: 'refresh_token', client_id: OIDC_CLIENT, refresh_token: refreshToken }),
  }).catch(() => undefined);
  return r?.status === 200 ? tokensOf(r) : undefined;
}

/**
 * Renew an OIDC profile's access token with its refresh token (a certificate login presents its
 * certificate again: its tokens are bound to it) and save it; the profile as it was when refused.
 */
export async function refreshProfile(p: Profile, name?: string): Promise<Profile> {
  let tls: { cert?: string; key?: string } = {};
  try {
    if (p.tlsFiles?.identity) tls = readIdentityFile(p.tlsFiles.identity);
    else if (p.tlsFiles?.cert && p.tlsFiles.key) tls = { cert: fs.readFileSync(p.tlsFiles.cert, 'utf8'), key: fs.readFileSync(p.tlsFiles.key, 'utf8') };
  } catch {
    // The files moved: the renewal is refused, and the 401 that follows says how to log in again.
  }
  const t = await refreshTokens(p.url, p.caPem, p.refreshToken!, { cert: tls.cert, key: tls.key });
  if (!t) return p;
  const next: Profile = { ...p, token: t.accessToken, refreshToken: t.refreshToken ?? p.refreshToken, expiresAt: t.expiresAt };
  saveProfile(name ?? currentProfileName() ?? 'default', next);
  return next;
}
