// An auth policy's secondary.requireExtJwtSigner as a second factor (issue 44): after the primary login the
// API session owes a JWT from that signer (an EXT-JWT auth query naming it, upstream's WWW-Authenticate),
// and is partial until a request sends one beside its zt-session (or the login itself did); an OIDC login
// owes it at /oidc/login/ext-jwt before its code. Real JWTs (jose), a signer made through the Management API
// whose key set this test serves on loopback, over TLS.
import http from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, MGMT } from '../helpers/controller.js';
import { ecCsr } from '../helpers/certs.js';
import { oidcClient } from '../helpers/oidc.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let c: TlsController;
let admin: string;
let server: http.Server;
let key: CryptoKey;
let stranger: CryptoKey;
let signerId = '';
let policyId = '';
const served: JWK[] = [];

beforeAll(async () => {
  c = await startTlsController({ authRateLimitPerMinute: 0, apiRateLimitPerMinute: 0, jwksPrivateHosts: ['127.0.0.1'] });
  admin = await c.login();
  const pair = await generateKeyPair('ES256');
  key = pair.privateKey;
  stranger = (await generateKeyPair('ES256')).privateKey;
  served.push({ ...(await exportJWK(pair.publicKey)), kid: 'mfa-key', alg: 'ES256', use: 'sig' });
  server = http.createServer((_req, res) => res.setHeader('content-type', 'application/json').end(JSON.stringify({ keys: served })));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const jwks = `http://127.0.0.1:${(server.address() as { port: number }).port}/jwks.json`;
  const s = await mgmt('POST', '/external-jwt-signers', {
    name: 'second-factor', enabled: true, issuer: 'https://mfa.example', audience: 'ztc', jwksEndpoint: jwks, useExternalId: true, claimsProperty: 'email',
    clientId: 'ztc-mfa', externalAuthUrl: 'https://mfa.example/authorize', scopes: ['openid', 'email'],
  });
  expect(s.status, s.text).toBe(201);
  signerId = s.body.data.id;
  const base = (await mgmt('GET', '/auth-policies/default')).body.data;
  const p = await mgmt('POST', '/auth-policies', { name: 'needs-ext-jwt', primary: base.primary, secondary: { requireTotp: false, requireExtJwtSigner: signerId } });
  expect(p.status, p.text).toBe(201);
  policyId = p.body.data.id;
});
afterAll(async () => {
  server.close();
  await c.close();
});

async function mgmt(method: string, path: string, body?: unknown) {
  let r = await c.call(method, `${MGMT}${path}`, { token: admin, body });
  if (r.status === 401) {
    admin = await c.login();
    r = await c.call(method, `${MGMT}${path}`, { token: admin, body });
  }
  return r;
}

const now = () => Math.floor(c.clock.now().getTime() / 1000);
function jwt(email: string, o: { signWith?: CryptoKey; exp?: number; iss?: string } = {}) {
  return new SignJWT({ email })
    .setProtectedHeader({ alg: 'ES256', kid: 'mfa-key' })
    .setIssuer(o.iss ?? 'https://mfa.example')
    .setAudience('ztc')
    .setIssuedAt(now())
    .setExpirationTime(o.exp ?? now() + 600)
    .sign(o.signWith ?? key);
}

/** An identity under the policy: a password and an external id the signer's JWTs name. */
async function user(name: string) {
  const made = await mgmt('POST', '/identities', { name, type: 'User', isAdmin: false, externalId: `${name}@example.com`, authPolicyId: policyId });
  expect(made.status, made.text).toBe(201);
  expect((await mgmt('POST', '/authenticators', { method: 'updb', identityId: made.body.data.id, username: name, password: 'password-1' })).status).toBe(201);
  return made.body.data.id as string;
}

const login = (name: string, headers: Record<string, string> = {}) => c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: name, password: 'password-1' }, headers });
const challenge = (h: unknown) => Object.fromEntries([...String(h ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));

describe('legacy API sessions', () => {
  it('a login without the JWT is partial: the EXT-JWT auth query names the signer, WWW-Authenticate says it is missing', async () => {
    const id = await user('sec-ana');
    const r = await login('sec-ana');
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.identityId).toBe(id);
    expect(r.body.data.authQueries).toEqual([{ typeId: 'EXT-JWT', provider: 'url', id: signerId, httpUrl: 'https://mfa.example/authorize', clientId: 'ztc-mfa', scopes: ['email', 'openid'] }]);
    expect(String(r.headers['www-authenticate'])).toMatch(/^Bearer /);
    expect(challenge(r.headers['www-authenticate'])).toMatchObject({ realm: 'openziti-secondary-ext-jwt', error: 'missing', id: signerId, issuer: 'https://mfa.example' });
    const token = r.body.data.token;
    // Partial: its own session and logout answer; the identity, its services and everything else do not.
    expect((await c.call('GET', `${CLIENT}/current-api-session`, { token })).body.data.authQueries[0].typeId).toBe('EXT-JWT');
    const refused = await c.call('GET', `${CLIENT}/services`, { token });
    expect(refused.status).toBe(401);
    expect(challenge(refused.headers['www-authenticate'])).toMatchObject({ realm: 'openziti-secondary-ext-jwt', error: 'missing' });
    // The admin's list shows the session still owing it.
    const listed = (await mgmt('GET', `/api-sessions?filter=${encodeURIComponent(`identityId = "${id}"`)}`)).body.data;
    expect(listed[0].authQueries).toEqual([expect.objectContaining({ typeId: 'EXT-JWT', id: signerId })]);
  });

  it('an expired JWT, one of another identity or of another key leaves it partial and says why', async () => {
    await user('sec-bob');
    const token = (await login('sec-bob')).body.data.token;
    const expired = await c.call('GET', `${CLIENT}/current-identity`, { token, headers: { authorization: `Bearer ${await jwt('sec-bob@example.com', { exp: now() - 3600 })}` } });
    expect(expired.status).toBe(401);
    expect(challenge(expired.headers['www-authenticate']).error).toBe('expired');
    const other = await c.call('GET', `${CLIENT}/current-identity`, { token, headers: { authorization: `Bearer ${await jwt('sec-ana@example.com')}` } });
    expect(other.status).toBe(401);
    expect(challenge(other.headers['www-authenticate']).error).toBe('invalid');
    const forged = await c.call('GET', `${CLIENT}/current-identity`, { token, headers: { authorization: `Bearer ${await jwt('sec-bob@example.com', { signWith: stranger })}` } });
    expect(forged.status).toBe(401);
    expect(challenge(forged.headers['www-authenticate']).error).toBe('invalid');
    expect((await c.call('GET', `${CLIENT}/current-api-session`, { token })).body.data.authQueries).toHaveLength(1);
  });

  it('a request sending the JWT beside zt-session completes the session, which then needs it no more', async () => {
    await user('sec-cy');
    const token = (await login('sec-cy')).body.data.token;
    const given = await c.call('GET', `${CLIENT}/current-identity`, { token, headers: { authorization: `Bearer ${await jwt('sec-cy@example.com')}` } });
    expect(given.status, given.text).toBe(200);
    expect(given.body.data.name).toBe('sec-cy');
    expect((await c.call('GET', `${CLIENT}/current-identity`, { token })).status).toBe(200);
    expect((await c.call('GET', `${CLIENT}/current-api-session`, { token })).body.data.authQueries).toEqual([]);
    expect((await c.call('GET', `${CLIENT}/services`, { token })).status).toBe(200);
  });

  it('the JWT sent with the login (as the Go SDK sends it) makes a full session at once; with a certificate too', async () => {
    await user('sec-dee');
    const r = await login('sec-dee', { authorization: `Bearer ${await jwt('sec-dee@example.com')}` });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.authQueries).toEqual([]);
    expect(r.headers['www-authenticate']).toBeUndefined();
    expect((await c.call('GET', `${CLIENT}/current-identity`, { token: r.body.data.token })).status).toBe(200);

    // Upstream's own test: cert + JWT gives no auth query; cert alone gives the EXT-JWT one.
    const made = await mgmt('POST', '/identities', { name: 'sec-device', type: 'Device', isAdmin: false, externalId: 'sec-device@example.com', authPolicyId: policyId, enrollment: { ott: true } });
    const ott = (await mgmt('GET', `/identities/${made.body.data.id}`)).body.data.enrollment.ott;
    const { csrPem, keyPem } = ecCsr('sec-device');
    const e = await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token: ott.token, clientCsr: csrPem } });
    const creds = { cert: e.body.data.cert as string, key: keyPem };
    const both = await c.call('POST', `${CLIENT}/authenticate?method=cert`, { ...creds, body: {}, headers: { authorization: `Bearer ${await jwt('sec-device@example.com')}` } });
    expect(both.status, both.text).toBe(200);
    expect(both.body.data.authQueries).toEqual([]);
    const certOnly = await c.call('POST', `${CLIENT}/authenticate?method=cert`, { ...creds, body: {} });
    expect(certOnly.body.data.authQueries).toEqual([expect.objectContaining({ typeId: 'EXT-JWT', id: signerId })]);
  });

  it('a partial session not completed within 5 minutes ends; identities under other policies owe nothing', async () => {
    await user('sec-eve');
    const token = (await login('sec-eve')).body.data.token;
    c.clock.advance(6 * 60_000);
    expect((await c.call('GET', `${CLIENT}/current-identity`, { token, headers: { authorization: `Bearer ${await jwt('sec-eve@example.com')}` } })).status).toBe(401);
    const plain = await mgmt('POST', '/identities', { name: 'sec-plain', type: 'User', isAdmin: false });
    await mgmt('POST', '/authenticators', { method: 'updb', identityId: plain.body.data.id, username: 'sec-plain', password: 'password-1' });
    expect((await login('sec-plain')).body.data.authQueries).toEqual([]);
  });
});

describe('OIDC logins', () => {
  it('the login answers the EXT-JWT auth query; /oidc/login/ext-jwt with the JWT finishes it, and tokens follow', async () => {
    await user('sec-oidc');
    const oidc = oidcClient(c);
    const s = await oidc.goStart();
    const first = await oidc.goLogin('password', s.id, { username: 'sec-oidc', password: 'password-1' });
    expect(first.status, first.text).toBe(200);
    expect(first.headers['totp-required']).toBeUndefined();
    expect(first.body.authQueries).toEqual([{ typeId: 'EXT-JWT', provider: 'url', id: signerId, httpUrl: 'https://mfa.example/authorize', clientId: 'ztc-mfa', scopes: ['email', 'openid'] }]);
    expect((await c.call('GET', `/oidc/login/auth-queries?id=${encodeURIComponent(s.id)}`)).body.authQueries[0].typeId).toBe('EXT-JWT');
    // No code before the JWT: the callback refuses.
    const early = await c.call('GET', `/oidc/authorize/callback?id=${encodeURIComponent(s.id)}`, { accept: '*/*' });
    expect(String(early.headers.location)).toMatch(/error=access_denied/);
    // A JWT of another identity is refused, with upstream's header.
    const wrong = await oidc.goLogin('ext-jwt', s.id, {}, { headers: { authorization: `Bearer ${await jwt('sec-ana@example.com')}` } });
    expect(wrong.status).toBe(401);
    expect(challenge(wrong.headers['www-authenticate'])).toMatchObject({ realm: 'openziti-secondary-ext-jwt', error: 'invalid', id: signerId });
    const ok = await oidc.goLogin('ext-jwt', s.id, {}, { headers: { authorization: `Bearer ${await jwt('sec-oidc@example.com')}` } });
    const code = await oidc.codeFrom(ok, s.state);
    const t = await oidc.goToken(code, s.pk);
    expect(t.status, t.text).toBe(200);
    const me = await c.call('GET', `${CLIENT}/current-identity`, { bearer: t.body.access_token });
    expect(me.status, me.text).toBe(200);
    expect(me.body.data.name).toBe('sec-oidc');
  });

  it('a login that sends the JWT with its credentials goes straight to the code', async () => {
    const oidc = oidcClient(c);
    const s = await oidc.goStart();
    const r = await oidc.goLogin('password', s.id, { username: 'sec-oidc', password: 'password-1' }, { headers: { authorization: `Bearer ${await jwt('sec-oidc@example.com')}` } });
    const t = await oidc.goToken(await oidc.codeFrom(r, s.state), s.pk);
    expect(t.status, t.text).toBe(200);
  });
});
