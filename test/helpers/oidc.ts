// An OIDC client written from ../shared/reference/openziti-2x.md section 2.2 (not from src/): the Go SDK's
// flow (GET authorize, follow to the login page's auth-request-id, form login, code, token, RFC 8693
// exchange with client native) and the C SDK's (POST authorize with the parameters in the query, 3xx with
// authRequestID, JSON cert login, follow the Location path for the code, refresh_token grant with client
// openziti and Basic auth). No redirect is followed automatically: each step checks what it is told.
import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { TlsController } from './tls.js';

export const GO_REDIRECT = 'http://localhost:8080/auth/callback';
export const C_REDIRECT = 'http://localhost:20314/auth/callback';

export interface Pkce {
  verifier: string;
  challenge: string;
}
export const pkce = (): Pkce => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

export const form = (o: Record<string, string | string[] | undefined>) => {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(o)) for (const x of ([] as (string | undefined)[]).concat(v)) if (x !== undefined) p.append(k, x);
  return p.toString();
};

export interface Creds {
  cert?: string;
  key?: string;
}

export type Tokens = { access_token: string; refresh_token?: string; id_token?: string; expires_in: number; token_type: string; session_cert?: string; scope?: string };

/** The path (with its query) of a Location, for a request back to the controller. */
export const pathOf = (location: string) => {
  const u = new URL(location, 'https://x');
  return `${u.pathname}${u.search}`;
};

export const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8'));
export const headerOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[0], 'base64url').toString('utf8'));

export function oidcClient(c: TlsController) {
  const tokenCall = (body: Record<string, string | undefined>, o: Creds & { basic?: string } = {}) =>
    c.call('POST', '/oidc/oauth/token', { body: form(body), contentType: 'application/x-www-form-urlencoded', cert: o.cert, key: o.key, headers: o.basic ? { authorization: `Basic ${Buffer.from(`${o.basic}:`).toString('base64url')}` } : {} });

  return {
    tokenCall,
    /** Go SDK: GET authorize -> 302 -> GET login page: 200 with auth-request-id. */
    async goStart(o: { redirect?: string; method?: string; pk?: Pkce; creds?: Creds; extra?: Record<string, string> } = {}) {
      const pk = o.pk ?? pkce();
      const state = randomBytes(16).toString('base64url');
      const nonce = randomBytes(32).toString('base64url');
      const q = form({ client_id: 'native', response_type: 'code', scope: 'openid offline_access', state, code_challenge: pk.challenge, code_challenge_method: 'S256', redirect_uri: o.redirect ?? GO_REDIRECT, nonce, ...(o.method ? { method: o.method } : {}), ...o.extra });
      const r = await c.call('GET', `/oidc/authorize?${q}`, { accept: '*/*', ...o.creds });
      expect(r.status, r.text).toBe(302);
      const page = await c.call('GET', pathOf(String(r.headers.location)), { accept: '*/*', ...o.creds });
      expect(page.status).toBe(200);
      const id = String(page.headers['auth-request-id'] ?? '');
      expect(id).toBeTruthy();
      return { id, pk, state, nonce, loginPath: pathOf(String(r.headers.location)) };
    },
    /** Go SDK: form login at /oidc/login/<method>. */
    goLogin(method: string, id: string, fields: Record<string, string | string[] | undefined>, creds: Creds & { headers?: Record<string, string> } = {}) {
      return c.call('POST', `/oidc/login/${method}`, {
        body: form({ id, configTypes: undefined, envArch: 'amd64', envOs: 'linux', envOsRelease: '6.1', envOsVersion: '1', sdkAppID: 'oidc-test', sdkAppVersion: '1.0', sdkBranch: 'main', sdkRevision: 'abc', sdkType: 'ziti-sdk-golang', sdkVersion: 'v2.0.0', ...fields }),
        contentType: 'application/x-www-form-urlencoded', accept: '*/*', cert: creds.cert, key: creds.key, headers: creds.headers,
      });
    },
    /** Follow a login's 302 through the callback to the redirect URI's code (checking the state). */
    async codeFrom(loginAnswer: { status: number; headers: Record<string, unknown>; text: string }, state: string, redirect = GO_REDIRECT, creds: Creds = {}) {
      expect(loginAnswer.status, loginAnswer.text).toBe(302);
      const cb = await c.call('GET', pathOf(String(loginAnswer.headers.location)), { accept: '*/*', ...creds });
      expect(cb.status, cb.text).toBe(302);
      const to = String(cb.headers.location);
      expect(to.startsWith(`${redirect}?`)).toBe(true);
      const u = new URL(to);
      if (state) expect(u.searchParams.get('state')).toBe(state);
      return u.searchParams.get('code')!;
    },
    async goToken(code: string, pk: Pkce, o: { redirect?: string; client?: string; creds?: Creds } = {}) {
      return tokenCall({ grant_type: 'authorization_code', client_id: o.client ?? 'native', code_verifier: pk.verifier, code, redirect_uri: o.redirect ?? GO_REDIRECT }, o.creds);
    },
    /** The whole Go SDK password login: tokens. */
    async goPassword(username: string, password: string): Promise<Tokens & { nonce: string }> {
      const s = await this.goStart();
      const code = await this.codeFrom(await this.goLogin('password', s.id, { username, password }), s.state);
      const t = await this.goToken(code, s.pk);
      expect(t.status, t.text).toBe(200);
      return { ...t.body, nonce: s.nonce };
    },
    /** Go SDK refresh: RFC 8693 exchange of the refresh token (or access token) with client native. */
    exchange(subject: string, subjectType: 'refresh_token' | 'access_token', requested: 'refresh_token' | 'access_token' | 'id_token', creds: Creds = {}) {
      return tokenCall({
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', client_id: 'native', subject_token: subject,
        subject_token_type: `urn:ietf:params:oauth:token-type:${subjectType}`, requested_token_type: `urn:ietf:params:oauth:token-type:${requested}`,
      }, creds);
    },
    /** C SDK: POST authorize (query, no body) -> 3xx with authRequestID. */
    async cStart(creds: Creds = {}, pk = pkce()) {
      const state = randomBytes(30).toString('base64url');
      const q = form({ client_id: 'openziti', scope: 'openid offline_access', response_type: 'code', redirect_uri: C_REDIRECT, code_challenge: pk.challenge, code_challenge_method: 'S256', state, audience: 'openziti' });
      const r = await c.call('POST', `/oidc/authorize?${q}`, { accept: 'application/json', ...creds });
      expect(Math.floor(r.status / 100), r.text).toBe(3);
      const m = /authRequestID=([^&]+)/.exec(String(r.headers.location));
      expect(m).toBeTruthy();
      return { id: decodeURIComponent(m![1]), pk, state };
    },
    /** C SDK: JSON cert login, then GET the Location's path for the code; the token with client openziti. */
    async cCert(creds: Creds, extra: Record<string, unknown> = {}): Promise<{ tokens: Tokens; login: { status: number; headers: Record<string, unknown>; body: any } }> {
      const s = await this.cStart(creds);
      const login = await c.call('POST', `/oidc/login/cert?id=${encodeURIComponent(s.id)}`, {
        body: { sdkInfo: { type: 'ziti-sdk-c', version: '1.18.7', revision: 'x', branch: 'main', appId: 'test', appVersion: '1' }, envInfo: { os: 'Linux', arch: 'x86_64', osRelease: '6', osVersion: '1' }, ...extra },
        ...creds,
      });
      if (Math.floor(login.status / 100) !== 3) return { tokens: undefined as never, login };
      const code = await this.codeFrom(login, s.state, C_REDIRECT, creds);
      const t = await tokenCall({ state: s.state, code, grant_type: 'authorization_code', code_verifier: s.pk.verifier, client_id: 'openziti', redirect_uri: C_REDIRECT }, creds);
      expect(t.status, t.text).toBe(200);
      return { tokens: t.body, login };
    },
    /** C SDK refresh: refresh_token grant, client openziti, Basic auth, its certificate on the connection. */
    cRefresh(refresh: string, creds: Creds = {}) {
      return tokenCall({ client_id: 'openziti', grant_type: 'refresh_token', refresh_token: refresh }, { ...creds, basic: 'openziti' });
    },
  };
}
