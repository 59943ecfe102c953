// The OIDC provider over real TLS, driven by a client written from the reference (test/helpers/oidc.ts):
// both SDK flows, refresh and exchange, JWT API sessions on both APIs, and what must fail.
import { X509Certificate } from 'node:crypto';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, MGMT } from '../helpers/controller.js';
import { ecCsr } from '../helpers/certs.js';
import { claimsOf, form, GO_REDIRECT, headerOf, oidcClient, pathOf, pkce } from '../helpers/oidc.js';
import { startTestController } from '../helpers/controller.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';
import { redactRequestUrl } from '../../src/server/logging.js';

let c: TlsController;
let admin: string;
let oidc: ReturnType<typeof oidcClient>;

beforeAll(async () => {
  c = await startTlsController({ authRateLimitPerMinute: 0, apiRateLimitPerMinute: 0 });
  admin = await c.login();
  oidc = oidcClient(c);
});
afterAll(() => c.close());

/** As the admin (logged in again when the clock moved past its legacy session). */
async function mgmt(method: string, path: string, body?: unknown) {
  let r = await c.call(method, `${MGMT}${path}`, { token: admin, body });
  if (r.status === 401) {
    admin = await c.login();
    r = await c.call(method, `${MGMT}${path}`, { token: admin, body });
  }
  return r;
}

async function user(name: string, password = 'password-1') {
  const made = await mgmt('POST', '/identities', { name, type: 'User', isAdmin: false });
  expect(made.status, made.text).toBe(201);
  const id = made.body.data.id;
  expect((await mgmt('POST', '/authenticators', { method: 'updb', identityId: id, username: name, password })).status).toBe(201);
  return id as string;
}

async function enrolled(name: string) {
  const made = await mgmt('POST', '/identities', { name, type: 'Device', isAdmin: false, enrollment: { ott: true } });
  const ott = (await mgmt('GET', `/identities/${made.body.data.id}`)).body.data.enrollment.ott;
  const { csrPem, keyPem } = ecCsr(name);
  const e = await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token: ott.token, clientCsr: csrPem } });
  expect(e.status, e.text).toBe(200);
  return { id: made.body.data.id as string, cert: e.body.data.cert as string, key: keyPem };
}

describe('offered in /version and discovery', () => {
  it('lists OIDC_AUTH, OIDC_AUTH_WITH_CSR and edge-oidc, never HA_CONTROLLER', async () => {
    const v = (await c.call('GET', '/version')).body.data;
    expect(v.capabilities).toEqual(expect.arrayContaining(['OIDC_AUTH', 'OIDC_AUTH_WITH_CSR']));
    expect(v.capabilities).not.toContain('HA_CONTROLLER');
    expect(v.apiVersions['edge-oidc'].v1.path).toBe('/oidc');
    expect(v.apiVersions['edge-oidc'].v1.apiBaseUrls.every((u: string) => u.endsWith('/oidc'))).toBe(true);
  });
  it('serves discovery at /oidc and at the root, for the host the client reached', async () => {
    for (const p of ['/oidc/.well-known/openid-configuration', '/.well-known/openid-configuration']) {
      const d = (await c.call('GET', p)).body;
      expect(d.issuer).toBe(`${c.base}/oidc`);
      expect(d.authorization_endpoint).toBe(`${c.base}/oidc/authorize`);
      expect(d.token_endpoint).toBe(`${c.base}/oidc/oauth/token`);
      expect(d.code_challenge_methods_supported).toEqual(['S256']);
      expect(d.openziti_endpoints).toMatchObject({ password: `${c.base}/oidc/login/password`, cert: `${c.base}/oidc/login/cert`, totp: `${c.base}/oidc/login/totp`, auth_queries: `${c.base}/oidc/login/auth-queries` });
    }
  });
});

describe('the Go SDK flow (password, native client, token exchange)', () => {
  it('logs in, and the tokens are upstream\'s JWTs signed with the server certificate key', async () => {
    const t = await oidc.goPassword('admin', 'admin-pass-1');
    const h = headerOf(t.access_token);
    const serverKid = new X509Certificate(c.running.ctx.pki.serverPem).fingerprint.replace(/:/g, '').toLowerCase();
    expect(h.kid).toBe(serverKid);
    const jwks = (await c.call('GET', '/oidc/keys')).body;
    const { payload } = await jwtVerify(t.access_token, createLocalJWKSet(jwks), { currentDate: c.clock.now() });
    expect(payload).toMatchObject({ z_t: 'a', iss: `${c.base}/oidc`, aud: ['native'], z_ia: true, client_id: 'native' });
    expect(typeof payload.z_asid).toBe('string');
    expect(payload.exp! - payload.iat!).toBe(30 * 60);
    expect(claimsOf(t.refresh_token!)).toMatchObject({ z_t: 'r', z_asid: payload.z_asid });
    expect(claimsOf(t.refresh_token!).exp - claimsOf(t.refresh_token!).iat).toBe(24 * 3600);
    const id = claimsOf(t.id_token!);
    expect(id).toMatchObject({ nonce: t.nonce, name: 'Default Admin', sub: payload.sub });
  });

  it('is an API session on both APIs (Bearer), listed with the others', async () => {
    const t = await oidc.goPassword('admin', 'admin-pass-1');
    const asid = claimsOf(t.access_token).z_asid;
    const me = await c.call('GET', `${CLIENT}/current-identity`, { bearer: t.access_token });
    expect(me.status, me.text).toBe(200);
    expect(me.body.data.name).toBe('Default Admin');
    const s = await c.call('GET', `${CLIENT}/current-api-session`, { bearer: t.access_token });
    expect(s.body.data.id).toBe(asid);
    expect((await c.call('GET', `${MGMT}/identities?limit=1`, { bearer: t.access_token })).status).toBe(200);
    const listed = await mgmt('GET', `/api-sessions?filter=${encodeURIComponent(`id = "${asid}"`)}`);
    expect(listed.body.data).toHaveLength(1);
    // In zt-session too, as the SDKs that carry the JWT there do.
    expect((await c.call('GET', `${CLIENT}/current-identity`, { token: t.access_token })).status).toBe(200);
  });

  it('refreshes by token exchange: refresh for tokens, then the same refresh token for an ID token', async () => {
    const t = await oidc.goPassword('admin', 'admin-pass-1');
    c.clock.advance(60_000);
    const ex = await oidc.exchange(t.refresh_token!, 'refresh_token', 'refresh_token');
    expect(ex.status, ex.text).toBe(200);
    expect(ex.body).toMatchObject({ token_type: 'Bearer', issued_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' });
    expect(claimsOf(ex.body.access_token).z_asid).toBe(claimsOf(t.access_token).z_asid);
    expect(claimsOf(ex.body.refresh_token).z_t).toBe('r');
    const id = await oidc.exchange(t.refresh_token!, 'refresh_token', 'id_token');
    expect(id.status, id.text).toBe(200);
    expect(id.body.token_type).toBe('N_A');
    expect(claimsOf(id.body.access_token)).toMatchObject({ name: 'Default Admin', aud: ['native'] });
    // An access token for an access token (the Go SDK without a refresh token).
    const acc = await oidc.exchange(ex.body.access_token, 'access_token', 'access_token');
    expect(acc.status, acc.text).toBe(200);
    expect((await c.call('GET', `${CLIENT}/current-identity`, { bearer: acc.body.access_token })).status).toBe(200);
    // ... but not an access token for a refresh token.
    expect((await oidc.exchange(ex.body.access_token, 'access_token', 'refresh_token')).status).toBe(400);
  });

  it('a wrong password is refused as on /authenticate, and counts against the login budget', async () => {
    await user('oidc-wrong');
    const s = await oidc.goStart();
    const r = await oidc.goLogin('password', s.id, { username: 'oidc-wrong', password: 'nope-nope' });
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('INVALID_AUTH');
    // The request takes no second identity once one logged in.
    const ok = await oidc.goLogin('password', s.id, { username: 'oidc-wrong', password: 'password-1' });
    expect(ok.status).toBe(302);
    expect((await oidc.goLogin('password', s.id, { username: 'admin', password: 'admin-pass-1' })).status).toBe(400);
  });
});

describe('the C SDK flow (cert, openziti client, refresh_token grant)', () => {
  it('logs in with its certificate, refreshes once per refresh token, and only with that certificate', async () => {
    const dev = await enrolled('oidc-c-dev');
    const { tokens: t } = await oidc.cCert(dev);
    const a = claimsOf(t.access_token);
    expect(a).toMatchObject({ z_t: 'a', aud: ['openziti'], sub: dev.id, amr: ['cert'] });
    const fp = new X509Certificate(dev.cert).fingerprint.replace(/:/g, '').toLowerCase();
    expect(a.z_cfs).toEqual([fp]);
    expect(a.z_sdk).toMatchObject({ type: 'ziti-sdk-c' });
    c.clock.advance(60_000);
    const r1 = await oidc.cRefresh(t.refresh_token!, dev);
    expect(r1.status, r1.text).toBe(200);
    expect(claimsOf(r1.body.access_token).z_asid).toBe(a.z_asid);
    // The refresh token was spent: a second use is refused.
    const again = await oidc.cRefresh(t.refresh_token!, dev);
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_grant');
    // Bound to the certificate (z_cfs): refused without it.
    const bare = await oidc.cRefresh(r1.body.refresh_token);
    expect(bare.status).toBe(403);
    expect(bare.body.error).toBe('access_denied');
    expect((await oidc.cRefresh(r1.body.refresh_token, dev)).status).toBe(200);
    // The identity's sdkInfo came from the login.
    expect((await mgmt('GET', `/identities/${dev.id}`)).body.data.sdkInfo).toMatchObject({ type: 'ziti-sdk-c' });
  });

  it('signs a CSR sent with the login (OIDC_AUTH_WITH_CSR): session_cert, bound in z_cfs', async () => {
    const dev = await enrolled('oidc-c-csr');
    const { csrPem } = ecCsr('session');
    const { tokens: t } = await oidc.cCert(dev, { csrPem });
    expect(t.session_cert).toMatch(/BEGIN CERTIFICATE/);
    const fp = new X509Certificate(t.session_cert!).fingerprint.replace(/:/g, '').toLowerCase();
    expect(claimsOf(t.access_token).z_cfs).toContain(fp);
    const certs = await c.call('GET', `${CLIENT}/current-api-session/certificates`, { bearer: t.access_token });
    expect(certs.body.data.map((x: { fingerprint: string }) => x.fingerprint)).toContain(fp);
    // A CSR that is not one is refused at the login.
    const bad = await oidc.cCert(dev, { csrPem: 'not a csr' });
    expect(bad.login.status).toBe(400);
    expect(bad.login.body.error.code).toBe('COULD_NOT_VALIDATE');
  });
});

describe('TOTP during the login', () => {
  const code = (secret: string) => generate({ secret, epoch: Math.floor(c.clock.now().getTime() / 1000) });
  const secretOf = (url: string) => new URL(url).searchParams.get('secret')!;

  it('an identity with verified TOTP: totp-required with its auth query, then the code (Go SDK: JSON), then the code flow', async () => {
    await user('oidc-mfa');
    const legacy = (await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'oidc-mfa', password: 'password-1' } })).body.data.token;
    expect((await c.call('POST', `${CLIENT}/current-identity/mfa`, { token: legacy })).status).toBe(201);
    const secret = secretOf((await c.call('GET', `${CLIENT}/current-identity/mfa`, { token: legacy })).body.data.provisioningUrl);
    expect((await c.call('POST', `${CLIENT}/current-identity/mfa/verify`, { token: legacy, body: { code: await code(secret) } })).status).toBe(200);
    c.clock.advance(30_000);

    const s = await oidc.goStart();
    const login = await oidc.goLogin('password', s.id, { username: 'oidc-mfa', password: 'password-1' });
    expect(login.status).toBe(200);
    expect(login.headers['totp-required']).toBe('true');
    expect(login.body.authQueries).toEqual([expect.objectContaining({ typeId: 'TOTP', isTotpEnrolled: true, httpMethod: 'POST' })]);
    // No code for a login that owes TOTP.
    const early = await c.call('GET', `/oidc/authorize/callback?id=${encodeURIComponent(s.id)}`);
    expect(String(early.headers.location)).toMatch(/error=access_denied/);
    expect((await c.call('GET', `/oidc/login/auth-queries?id=${encodeURIComponent(s.id)}`)).headers['totp-required']).toBe('true');
    const wrong = await c.call('POST', '/oidc/login/totp', { body: { id: s.id, code: '000000' } });
    expect(wrong.status).toBe(400);
    const right = await c.call('POST', '/oidc/login/totp', { body: { id: s.id, code: await code(secret) } });
    const t = await oidc.goToken(await oidc.codeFrom(right, s.state), s.pk);
    expect(t.status, t.text).toBe(200);
    expect(claimsOf(t.body.access_token).amr).toEqual(['password', 'totp']);
    const session = await c.call('GET', `${CLIENT}/current-api-session`, { bearer: t.body.access_token });
    expect(session.body.data).toMatchObject({ isMfaRequired: true, isMfaComplete: true });
  });

  it('five wrong codes end the login (C SDK: form)', async () => {
    await user('oidc-mfa-guess');
    const legacy = (await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'oidc-mfa-guess', password: 'password-1' } })).body.data.token;
    await c.call('POST', `${CLIENT}/current-identity/mfa`, { token: legacy });
    const secret = secretOf((await c.call('GET', `${CLIENT}/current-identity/mfa`, { token: legacy })).body.data.provisioningUrl);
    await c.call('POST', `${CLIENT}/current-identity/mfa/verify`, { token: legacy, body: { code: await code(secret) } });
    c.clock.advance(30_000);
    const s = await oidc.goStart();
    expect((await oidc.goLogin('password', s.id, { username: 'oidc-mfa-guess', password: 'password-1' })).status).toBe(200);
    for (let i = 0; i < 5; i++) {
      const r = await c.call('POST', '/oidc/login/totp', { body: form({ id: s.id, code: '111111' }), contentType: 'application/x-www-form-urlencoded' });
      expect(r.status).toBe(400);
    }
    const late = await c.call('POST', '/oidc/login/totp', { body: form({ id: s.id, code: await code(secret) }), contentType: 'application/x-www-form-urlencoded' });
    expect(late.status).toBe(401);
  });

  it('a policy that requires TOTP of an identity without it: enroll during the login, verify, then the code', async () => {
    const policy = await mgmt('POST', '/auth-policies', {
      name: 'totp-required',
      primary: { cert: { allowed: true, allowExpiredCerts: false }, extJwt: { allowed: false, allowedSigners: [] }, updb: { allowed: true, lockoutDurationMinutes: 0, maxAttempts: 0, minPasswordLength: 5, requireMixedCase: false, requireNumberChar: false, requireSpecialChar: false } },
      secondary: { requireTotp: true },
    });
    expect(policy.status, policy.text).toBe(201);
    const id = await user('oidc-enroll');
    expect((await mgmt('PATCH', `/identities/${id}`, { authPolicyId: policy.body.data.id })).status).toBe(200);
    const s = await oidc.goStart();
    const login = await oidc.goLogin('password', s.id, { username: 'oidc-enroll', password: 'password-1' });
    expect(login.headers['totp-required']).toBe('true');
    expect(login.body.authQueries[0]).toMatchObject({ typeId: 'TOTP', isTotpEnrolled: false });
    const started = await c.call('POST', '/oidc/login/totp/enroll', { body: { id: s.id } });
    expect(started.status, started.text).toBe(201);
    expect(started.body.provisioningUrl).toMatch(/^otpauth:\/\/totp\//);
    expect(started.body.recoveryCodes).toHaveLength(20);
    const secret = secretOf(started.body.provisioningUrl);
    const verified = await c.call('POST', '/oidc/login/totp/enroll/verify', { body: { id: s.id, code: await code(secret) } });
    const t = await oidc.goToken(await oidc.codeFrom(verified, s.state), s.pk);
    expect(t.status, t.text).toBe(200);
    expect(claimsOf(t.body.access_token).amr).toContain('totp');
    // The enrollment is the identity's now: a legacy login asks for its code too.
    const legacy = await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'oidc-enroll', password: 'password-1' } });
    expect(legacy.body.data.isMfaRequired).toBe(true);
    // Enrolling needs a login first.
    const other = await oidc.goStart();
    expect((await c.call('POST', '/oidc/login/totp/enroll', { body: { id: other.id } })).status).toBe(401);
  });
});

describe('what must fail', () => {
  it('PKCE is mandatory and S256 only; a wrong verifier gets no tokens', async () => {
    const pk = pkce();
    const base = { client_id: 'native', response_type: 'code', scope: 'openid', state: 's1', redirect_uri: GO_REDIRECT };
    const none = await c.call('GET', `/oidc/authorize?${form(base)}`);
    expect(none.status).toBe(302);
    expect(String(none.headers.location)).toMatch(/^http:\/\/localhost:8080\/auth\/callback\?error=invalid_request/);
    const plain = await c.call('GET', `/oidc/authorize?${form({ ...base, code_challenge: pk.verifier, code_challenge_method: 'plain' })}`);
    expect(String(plain.headers.location)).toMatch(/error=invalid_request/);
    const s = await oidc.goStart();
    const code = await oidc.codeFrom(await oidc.goLogin('password', s.id, { username: 'admin', password: 'admin-pass-1' }), s.state);
    const wrong = await oidc.goToken(code, pkce());
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toBe('invalid_grant');
  });

  it('a code is single-use: a replay is refused and ends the session the first use opened', async () => {
    const s = await oidc.goStart();
    const code = await oidc.codeFrom(await oidc.goLogin('password', s.id, { username: 'admin', password: 'admin-pass-1' }), s.state);
    const first = await oidc.goToken(code, s.pk);
    expect(first.status).toBe(200);
    expect((await c.call('GET', `${CLIENT}/current-identity`, { bearer: first.body.access_token })).status).toBe(200);
    const replay = await oidc.goToken(code, s.pk);
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_grant');
    expect((await c.call('GET', `${CLIENT}/current-identity`, { bearer: first.body.access_token })).status).toBe(401);
  });

  it('a code expires after 60 s', async () => {
    const s = await oidc.goStart();
    const code = await oidc.codeFrom(await oidc.goLogin('password', s.id, { username: 'admin', password: 'admin-pass-1' }), s.state);
    c.clock.advance(61_000);
    expect((await oidc.goToken(code, s.pk)).body.error).toBe('invalid_grant');
  });

  it('redirects only to allowed URIs (no open redirect), and the token call must name the same one', async () => {
    const pk = pkce();
    for (const redirect of ['https://evil.example/auth/callback', 'http://127.0.0.1:1@evil.example/auth/callback', 'http://localhost:8080/auth/callback/../x', 'http://localhost.evil.example/auth/callback', 'openziti://auth/callback/x']) {
      const r = await c.call('GET', `/oidc/authorize?${form({ client_id: 'native', response_type: 'code', scope: 'openid', state: 's', code_challenge: pk.challenge, code_challenge_method: 'S256', redirect_uri: redirect })}`);
      expect(r.status, redirect).toBe(400);
      expect(r.headers.location).toBeUndefined();
    }
    const unknownClient = await c.call('GET', `/oidc/authorize?${form({ client_id: 'other', response_type: 'code', scope: 'openid', code_challenge: pk.challenge, code_challenge_method: 'S256', redirect_uri: GO_REDIRECT })}`);
    expect(unknownClient.status).toBe(400);
    const s = await oidc.goStart({ redirect: 'http://127.0.0.1:5555/auth/callback' });
    const code = await oidc.codeFrom(await oidc.goLogin('password', s.id, { username: 'admin', password: 'admin-pass-1' }), s.state, 'http://127.0.0.1:5555/auth/callback');
    expect((await oidc.goToken(code, s.pk, { redirect: GO_REDIRECT })).body.error).toBe('invalid_grant');
  });

  it('an expired access token is refused; the refresh token outlives it, then expires too', async () => {
    const t = await oidc.goPassword('admin', 'admin-pass-1');
    c.clock.advance(31 * 60_000);
    expect((await c.call('GET', `${CLIENT}/current-identity`, { bearer: t.access_token })).status).toBe(401);
    const ex = await oidc.exchange(t.refresh_token!, 'refresh_token', 'refresh_token');
    expect(ex.status, ex.text).toBe(200);
    expect((await c.call('GET', `${CLIENT}/current-identity`, { bearer: ex.body.access_token })).status).toBe(200);
    c.clock.advance(25 * 3600_000);
    expect((await oidc.exchange(ex.body.refresh_token, 'refresh_token', 'refresh_token')).body.error).toBe('invalid_grant');
  });

  it('revocations: of the API session (management API), and of a refresh token at /oidc/revoke', async () => {
    const t = await oidc.goPassword('admin', 'admin-pass-1');
    const asid = claimsOf(t.access_token).z_asid;
    const made = await mgmt('POST', '/revocations', { id: asid, type: 'API_SESSION' });
    expect(made.status, made.text).toBe(201);
    expect((await c.call('GET', `${CLIENT}/current-identity`, { bearer: t.access_token })).status).toBe(401);
    expect((await oidc.exchange(t.refresh_token!, 'refresh_token', 'access_token')).status).toBe(400);

    const u = await oidc.goPassword('admin', 'admin-pass-1');
    const rv = await c.call('POST', '/oidc/revoke', { body: form({ token: u.refresh_token, client_id: 'native' }), contentType: 'application/x-www-form-urlencoded' });
    expect(rv.status).toBe(200);
    expect((await oidc.exchange(u.refresh_token!, 'refresh_token', 'access_token')).body.error).toBe('invalid_grant');
    // The access token goes on until it expires (RFC 7009 revoked only the refresh token) ...
    expect((await c.call('GET', `${CLIENT}/current-identity`, { bearer: u.access_token })).status).toBe(200);
    // ... unless it is revoked itself.
    await c.call('POST', '/oidc/revoke', { body: form({ token: u.access_token, client_id: 'native' }), contentType: 'application/x-www-form-urlencoded' });
    expect((await c.call('GET', `${CLIENT}/current-identity`, { bearer: u.access_token })).status).toBe(401);
    const intro = await c.call('POST', '/oidc/oauth/introspect', { body: form({ token: u.access_token }), contentType: 'application/x-www-form-urlencoded' });
    expect(intro.body.active).toBe(false);
  });

  it('logout ends the JWT API session: its access and refresh tokens stop working', async () => {
    const t = await oidc.goPassword('admin', 'admin-pass-1');
    expect((await c.call('DELETE', `${CLIENT}/current-api-session`, { bearer: t.access_token })).status).toBe(200);
    expect((await c.call('GET', `${CLIENT}/current-identity`, { bearer: t.access_token })).status).toBe(401);
    expect((await oidc.exchange(t.refresh_token!, 'refresh_token', 'access_token')).body.error).toBe('invalid_grant');
    // RP-initiated logout with the ID token as hint does the same.
    const u = await oidc.goPassword('admin', 'admin-pass-1');
    const end = await c.call('GET', `/oidc/end_session?${form({ id_token_hint: u.id_token })}`);
    expect(end.status).toBe(302);
    expect(pathOf(String(end.headers.location))).toBe('/oidc/logged-out');
    expect((await c.call('GET', `${CLIENT}/current-identity`, { bearer: u.access_token })).status).toBe(401);
  });

  it('a disabled identity: its JWT sessions end, it cannot refresh or log in', async () => {
    const id = await user('oidc-disabled');
    const t = await oidc.goPassword('oidc-disabled', 'password-1');
    expect((await c.call('GET', `${CLIENT}/current-identity`, { bearer: t.access_token })).status).toBe(200);
    expect((await mgmt('POST', `/identities/${id}/disable`, { durationMinutes: 0 })).status).toBe(200);
    expect((await c.call('GET', `${CLIENT}/current-identity`, { bearer: t.access_token })).status).toBe(401);
    expect((await oidc.exchange(t.refresh_token!, 'refresh_token', 'access_token')).status).toBe(400);
    const s = await oidc.goStart();
    expect((await oidc.goLogin('password', s.id, { username: 'oidc-disabled', password: 'password-1' })).status).toBe(401);
  });

  it('a non-admin JWT is no admin on the management API', async () => {
    await user('oidc-plain');
    const t = await oidc.goPassword('oidc-plain', 'password-1');
    expect(claimsOf(t.access_token).z_ia).toBe(false);
    expect((await c.call('GET', `${MGMT}/identities`, { bearer: t.access_token })).status).toBe(401);
    // A forged token (our claims, another key) is refused.
    const [h, p] = t.access_token.split('.');
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...claimsOf(t.access_token), z_ia: true })).toString('base64url')}.${t.access_token.split('.')[2]}`;
    expect((await c.call('GET', `${MGMT}/identities`, { bearer: forged })).status).toBe(401);
    void p;
  });
});



describe('off (--no-oidc)', () => {
  it('is neither served nor offered: clients log in the legacy way', async () => {
    const off = await startTestController({ config: { oidc: false } });
    try {
      const v = (await off.call('GET', '/version')).body.data;
      expect(v.capabilities).not.toContain('OIDC_AUTH');
      expect(v.apiVersions['edge-oidc']).toBeUndefined();
      expect((await off.call('GET', '/oidc/.well-known/openid-configuration')).status).toBe(404);
      expect((await off.call('POST', '/oidc/oauth/token')).status).toBe(404);
      expect(await off.login()).toBeTruthy();
    } finally {
      await off.close();
    }
  });
});

describe('tokens are never logged', () => {
  it('redacts every OAuth secret a client may put in a URL', () => {
    const logged = redactRequestUrl('/oidc/oauth/token?code=c1&code_verifier=v1&refresh_token=r1&subject_token=s1&id_token_hint=h1&access_token=a1&client_assertion=x1&state=st');
    for (const secret of ['c1', 'v1', 'r1', 's1', 'h1', 'a1', 'x1']) expect(logged).not.toContain(`=${secret}`);
    expect(logged).toContain('state=st');
  });
});
