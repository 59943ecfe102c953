// The provider against a real OIDC client library (openid-client 6, on oauth4webapi): discovery, the
// authorization URL it builds, the code grant with its checks (state, PKCE, the ID token's signature
// against /oidc/keys, issuer, audience, nonce), refresh, userinfo, introspection and revocation. The
// login step between authorize and callback is OpenZiti's own (as SDKs do it), posted by hand.
import https from 'node:https';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT } from '../helpers/controller.js';
import { form, pathOf } from '../helpers/oidc.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let c: TlsController;
let config: client.Configuration;
const REDIRECT = 'http://127.0.0.1:7777/auth/callback';

/** fetch over https trusting the controller's CA (the library's requests go through it). */
function caFetch(ca: string): typeof fetch {
  return ((url: string, o: { method?: string; headers?: HeadersInit; body?: BodyInit | null } = {}) =>
    new Promise<Response>((resolve, reject) => {
      const headers = Object.fromEntries(new Headers(o.headers ?? {}));
      const req = https.request(url, { method: o.method ?? 'GET', headers, ca, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => {
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : String(v));
          resolve(new Response(chunks.length ? Buffer.concat(chunks) : null, { status: res.statusCode, headers: h }));
        });
      });
      req.on('error', reject);
      if (o.body !== undefined && o.body !== null) req.write(typeof o.body === 'string' ? o.body : String(o.body));
      req.end();
    })) as unknown as typeof fetch;
}

beforeAll(async () => {
  c = await startTlsController({ authRateLimitPerMinute: 0, oidcRedirectUris: ['http://127.0.0.1:*/auth/callback'] });
  config = await client.discovery(new URL(`${c.base}/oidc`), 'native', undefined, client.None(), { [client.customFetch]: caFetch(c.running.ctx.pki.caBundlePem) });
  config[client.customFetch] = caFetch(c.running.ctx.pki.caBundlePem);
});
afterAll(() => c.close());

describe('openid-client', () => {
  it('discovers the provider, runs the code flow with PKCE, refreshes, reads userinfo, introspects and revokes', async () => {
    expect(config.serverMetadata().issuer).toBe(`${c.base}/oidc`);
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT, scope: 'openid offline_access', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state, nonce,
    });
    // The user agent's part: authorize, the login page's id, the credentials, the callback.
    const start = await c.call('GET', `${url.pathname}${url.search}`, { accept: 'text/html' });
    expect(start.status).toBe(302);
    const page = await c.call('GET', pathOf(String(start.headers.location)), { accept: 'text/html' });
    expect(page.text).toMatch(/<form method="post"/);
    const id = String(page.headers['auth-request-id']);
    const login = await c.call('POST', '/oidc/login/password', { body: form({ id, username: 'admin', password: 'admin-pass-1' }), contentType: 'application/x-www-form-urlencoded', accept: 'text/html' });
    expect(login.status).toBe(302);
    const cb = await c.call('GET', pathOf(String(login.headers.location)));
    const callback = new URL(String(cb.headers.location));
    expect(callback.origin + callback.pathname).toBe(REDIRECT);

    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true });
    const idClaims = tokens.claims()!;
    expect(idClaims).toMatchObject({ iss: `${c.base}/oidc`, aud: ['native'], name: 'Default Admin', nonce });
    expect((await c.call('GET', `${CLIENT}/current-identity`, { bearer: tokens.access_token })).status).toBe(200);

    const info = await client.fetchUserInfo(config, tokens.access_token, idClaims.sub);
    expect(info).toMatchObject({ sub: idClaims.sub, name: 'Default Admin', z_ia: true });

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    expect((await c.call('GET', `${CLIENT}/current-identity`, { bearer: refreshed.access_token })).status).toBe(200);
    // The first refresh token was spent by that refresh.
    await expect(client.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });

    expect(await client.tokenIntrospection(config, refreshed.access_token)).toMatchObject({ active: true, sub: idClaims.sub });
    await client.tokenRevocation(config, refreshed.refresh_token!);
    await expect(client.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });

    // A configured redirect pattern (oidcRedirectUris) allows that port, and only that path.
    const other = client.buildAuthorizationUrl(config, { redirect_uri: 'http://127.0.0.1:7777/elsewhere', scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    expect((await c.call('GET', `${other.pathname}${other.search}`)).status).toBe(400);
  });
});
