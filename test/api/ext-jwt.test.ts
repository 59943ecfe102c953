// External JWT signers and ext-jwt login, against a JWKS endpoint this test serves on loopback.
import http from 'node:http';
import { exportJWK, generateKeyPair, importPKCS8, SignJWT, type JWK, type CryptoKey } from 'jose';
import forge from 'node-forge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';
import { selfSignedCert } from '../helpers/certs.js';

let c: TestController;
let admin: string;
let jwksUrl = '';
let served: JWK[] = [];
let server: http.Server;
let fetches = 0;
beforeAll(async () => {
  // The test's key set is served on loopback, which a signer may only name when the host is listed.
  c = await startTestController({ config: { jwksPrivateHosts: ['127.0.0.1'] } });
  admin = await c.login();
  server = http.createServer((_req, res) => {
    fetches++;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: served }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  jwksUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/jwks.json`;
});
afterAll(async () => {
  server.close();
  await c.close();
});

async function newKey(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  served.push({ ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' });
  return privateKey;
}
const jwt = (key: CryptoKey, kid: string, claims: { iss?: string; aud?: string; sub?: string; exp?: number; [k: string]: unknown } = {}) => {
  const now = Math.floor(c.clock.now().getTime() / 1000);
  const { iss = 'https://idp.example', aud = 'ztc', sub, exp = now + 600, ...rest } = claims;
  const b = new SignJWT(rest).setProtectedHeader({ alg: 'RS256', kid }).setIssuer(iss).setAudience(aud).setIssuedAt(now).setExpirationTime(exp);
  return (sub ? b.setSubject(sub) : b).sign(key);
};
const extLogin = (token: string) => c.call('POST', `${CLIENT}/authenticate?method=ext-jwt`, { headers: { authorization: `Bearer ${token}` }, body: {} });

describe('external JWT signers', () => {
  let signerId = '';
  let key: CryptoKey;
  let identityId = '';

  beforeAll(async () => {
    key = await newKey('k1');
    const r = await c.call('POST', `${MGMT}/external-jwt-signers`, {
      token: admin,
      body: { name: 'idp', enabled: true, issuer: 'https://idp.example', audience: 'ztc', jwksEndpoint: jwksUrl, useExternalId: true, claimsProperty: 'email', clientId: 'ztc-app', externalAuthUrl: 'https://idp.example/auth', scopes: ['openid', 'email'] },
    });
    expect(r.status, r.text).toBe(201);
    signerId = r.body.data.id;
    identityId = (await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'ext-user', type: 'User', isAdmin: false, externalId: 'ana@example.com' } })).body.data.id;
  });

  it('logs in the identity named by the configured claim', async () => {
    const r = await extLogin(await jwt(key, 'k1', { email: 'ana@example.com' }));
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ identityId, authenticatorId: signerId });
  });

  it('refuses wrong issuer, audience, expiry, signature, unknown identity and a missing token', async () => {
    expectError(await extLogin(await jwt(key, 'k1', { email: 'ana@example.com', iss: 'https://evil.example' })), 401, 'INVALID_AUTH');
    expectError(await extLogin(await jwt(key, 'k1', { email: 'ana@example.com', aud: 'someone-else' })), 401, 'INVALID_AUTH');
    expectError(await extLogin(await jwt(key, 'k1', { email: 'ana@example.com', exp: Math.floor(c.clock.now().getTime() / 1000) - 60 })), 401, 'INVALID_AUTH');
    const { privateKey: stranger } = await generateKeyPair('RS256');
    expectError(await extLogin(await jwt(stranger, 'k1', { email: 'ana@example.com' })), 401, 'INVALID_AUTH');
    expectError(await extLogin(await jwt(key, 'k1', { email: 'nobody@example.com' })), 401, 'INVALID_AUTH');
    expectError(await c.call('POST', `${CLIENT}/authenticate?method=ext-jwt`, { body: {} }), 401, 'INVALID_AUTH');
    expectError(await extLogin('not.a.jwt'), 401, 'INVALID_AUTH');
  });

  it('refuses a token without exp, before its nbf, without iss, or without a kid when the signer\'s keys have ids', async () => {
    const now = Math.floor(c.clock.now().getTime() / 1000);
    const sign = (header: { kid?: string }, claims: Record<string, unknown>) =>
      new SignJWT({ email: 'ana@example.com', aud: 'ztc', iat: now, ...claims }).setProtectedHeader({ alg: 'RS256', ...header }).sign(key);
    const good = { iss: 'https://idp.example', exp: now + 600 };
    expect((await extLogin(await sign({ kid: 'k1' }, good))).status).toBe(200);
    expectError(await extLogin(await sign({ kid: 'k1' }, { iss: 'https://idp.example' })), 401, 'INVALID_AUTH');
    expectError(await extLogin(await sign({ kid: 'k1' }, { ...good, nbf: now + 300 })), 401, 'INVALID_AUTH');
    // Within the allowed clock skew, nbf and exp still pass.
    expect((await extLogin(await sign({ kid: 'k1' }, { ...good, nbf: now + 10 }))).status).toBe(200);
    expect((await extLogin(await sign({ kid: 'k1' }, { ...good, exp: now - 10 }))).status).toBe(200);
    expectError(await extLogin(await sign({ kid: 'k1' }, { exp: now + 600 })), 401, 'INVALID_AUTH');
    expectError(await extLogin(await sign({ kid: 'k-unknown' }, good)), 401, 'INVALID_AUTH');
    // The set holds one RS256 key, so without a kid it would verify: its key has an id, so it must not.
    expectError(await extLogin(await sign({}, good)), 401, 'INVALID_AUTH');
  });

  it('fetches the JWKS again when a token names a new key', async () => {
    const before = fetches;
    const k2 = await newKey('k2');
    await new Promise((r) => setTimeout(r, 1100));
    expect((await extLogin(await jwt(k2, 'k2', { email: 'ana@example.com' }))).status).toBe(200);
    expect(fetches).toBeGreaterThan(before);
  });

  it('honours the auth policy and the enabled flag', async () => {
    const base = (await c.call('GET', `${MGMT}/auth-policies/default`, { token: admin })).body.data;
    const other = (await c.call('POST', `${MGMT}/external-jwt-signers`, { token: admin, body: { name: 'other', enabled: true, issuer: 'https://other.example', audience: null, jwksEndpoint: jwksUrl } })).body.data.id;
    const pid = (await c.call('POST', `${MGMT}/auth-policies`, { token: admin, body: { name: 'only-other', primary: { ...base.primary, extJwt: { allowed: true, allowedSigners: [other] } }, secondary: base.secondary } })).body.data.id;
    await c.call('PATCH', `${MGMT}/identities/${identityId}`, { token: admin, body: { authPolicyId: pid } });
    expectError(await extLogin(await jwt(key, 'k1', { email: 'ana@example.com' })), 401, 'INVALID_AUTH');
    await c.call('PATCH', `${MGMT}/identities/${identityId}`, { token: admin, body: { authPolicyId: 'default' } });
    expect((await extLogin(await jwt(key, 'k1', { email: 'ana@example.com' }))).status).toBe(200);
    await c.call('PATCH', `${MGMT}/external-jwt-signers/${signerId}`, { token: admin, body: { enabled: false } });
    expectError(await extLogin(await jwt(key, 'k1', { email: 'ana@example.com' })), 401, 'INVALID_AUTH');
    await c.call('PATCH', `${MGMT}/external-jwt-signers/${signerId}`, { token: admin, body: { enabled: true } });
    expectError(await c.call('DELETE', `${MGMT}/external-jwt-signers/${other}`, { token: admin }), 409, 'CAN_NOT_DELETE_REFERENCED_ENTITY');
  });

  it('verifies with a certificate instead of a JWKS, by identity id', async () => {
    const keys = forge.pki.rsa.generateKeyPair(2048);
    const cert = forge.pki.createCertificate();
    cert.publicKey = keys.publicKey;
    cert.serialNumber = '01';
    cert.validity.notBefore = new Date(Date.now() - 60_000);
    cert.validity.notAfter = new Date(Date.now() + 86_400_000);
    cert.setSubject([{ name: 'commonName', value: 'signer-cert' }]);
    cert.setIssuer([{ name: 'commonName', value: 'signer-cert' }]);
    cert.sign(keys.privateKey, forge.md.sha256.create());
    const certPem = forge.pki.certificateToPem(cert);
    const made = await c.call('POST', `${MGMT}/external-jwt-signers`, { token: admin, body: { name: 'by-cert', enabled: true, issuer: 'https://certs.example', audience: 'ztc', certPem } });
    expect(made.status, made.text).toBe(201);
    const d = (await c.call('GET', `${MGMT}/external-jwt-signers/${made.body.data.id}`, { token: admin })).body.data;
    expect(d).toMatchObject({ commonName: 'signer-cert', fingerprint: expect.stringMatching(/^[0-9a-f]{40}$/), claimsProperty: 'sub', useExternalId: false });
    const pk = await importPKCS8(forge.pki.privateKeyInfoToPem(forge.pki.wrapRsaPrivateKey(forge.pki.privateKeyToAsn1(keys.privateKey))), 'RS256');
    const r = await extLogin(await jwt(pk as CryptoKey, 'any', { iss: 'https://certs.example', sub: identityId }));
    expect(r.status, r.text).toBe(200);
    // Once the signer names its key id, a token must name the same one.
    expect((await c.call('PATCH', `${MGMT}/external-jwt-signers/${made.body.data.id}`, { token: admin, body: { kid: 'cert-key-1' } })).status).toBe(200);
    expectError(await extLogin(await jwt(pk as CryptoKey, 'any', { iss: 'https://certs.example', sub: identityId })), 401, 'INVALID_AUTH');
    expect((await extLogin(await jwt(pk as CryptoKey, 'cert-key-1', { iss: 'https://certs.example', sub: identityId }))).status).toBe(200);
    // Upstream's CLI (`update ext-jwt-signer -n ...`) sends scopes and clientId null when it leaves them: kept, as upstream.
    const id = made.body.data.id;
    expect((await c.call('PATCH', `${MGMT}/external-jwt-signers/${id}`, { token: admin, body: { scopes: ['openid', 'email'], clientId: 'ztc-cli' } })).status).toBe(200);
    expect((await c.call('PATCH', `${MGMT}/external-jwt-signers/${id}`, { token: admin, body: { name: 'by-cert-2', scopes: null, clientId: null } })).status).toBe(200);
    expect((await c.call('GET', `${MGMT}/external-jwt-signers/${id}`, { token: admin })).body.data).toMatchObject({ name: 'by-cert-2', scopes: ['email', 'openid'], clientId: 'ztc-cli' });
  });

  it('validates signers and lists the enabled ones publicly on the client API', async () => {
    const post = (body: unknown) => c.call('POST', `${MGMT}/external-jwt-signers`, { token: admin, body });
    // Upstream 1.1.10's codes: COULD_NOT_VALIDATE for a URL that is not one (ztc also refuses a scheme other than http(s)),
    // INVALID_CERT_PEM without a cause for a PEM that is not exactly one certificate.
    expect(expectError(await post({ name: 'bad-url', enabled: true, issuer: 'x', audience: null, jwksEndpoint: 'not a url' }), 400, 'COULD_NOT_VALIDATE').cause).toMatchObject({ field: 'jwksEndpoint', reason: 'jwksEndpoint in body must be of type uri: "not a url"' });
    expectError(await post({ name: 'bad-url', enabled: true, issuer: 'x', audience: null, jwksEndpoint: 'file:///etc/passwd' }), 400, 'COULD_NOT_VALIDATE');
    expectError(await post({ name: 'no-key', enabled: true, issuer: 'x', audience: null }), 400, 'INVALID_FIELD');
    expectError(await post({ name: 'two-keys', enabled: true, issuer: 'x', audience: null, jwksEndpoint: jwksUrl, certPem: 'x' }), 400, 'INVALID_CERT_PEM');
    const two = selfSignedCert('one').certPem + selfSignedCert('two').certPem;
    expect(expectError(await post({ name: 'two-certs', enabled: true, issuer: 'x', audience: null, certPem: two }), 400, 'INVALID_CERT_PEM').message).toBe('the supplied certificate PEM is either invalid or contains the incorrect number of certificates');
    await post({ name: 'hidden', enabled: false, issuer: 'https://hidden.example', audience: null, jwksEndpoint: jwksUrl });
    const pub = await c.call('GET', `${CLIENT}/external-jwt-signers`);
    expect(pub.status).toBe(200);
    const names = pub.body.data.map((s: { name: string }) => s.name);
    expect(names).toContain('idp');
    expect(names).not.toContain('hidden');
    expect(pub.body.data.find((s: { name: string }) => s.name === 'idp')).toEqual(expect.objectContaining({ clientId: 'ztc-app', externalAuthUrl: 'https://idp.example/auth', scopes: ['email', 'openid'] })); // a set upstream: sorted
    expect(pub.body.data[0].issuer).toBeUndefined();
    expectError(await c.call('GET', `${MGMT}/external-jwt-signers`), 401);
  });
});

// Upstream 2.x's signer fields (issue 42d): `ziti edge list ext-jwt-signers` 2.0 panics on a signer
// without targetToken. ACCESS or ID, ACCESS by default; the enrolment claims selectors are stored as given.
describe('2.x signer fields', () => {
  const mg = (method: string, path: string, body?: unknown) => c.call(method, `${MGMT}${path}`, { token: admin, body });
  const base = (name: string) => ({ name, enabled: true, issuer: `https://${name}.example`, audience: 'ztc', jwksEndpoint: jwksUrl });

  it('targetToken: ACCESS unless set, ID kept, anything else refused; shown on both APIs', async () => {
    const plain = await mg('POST', '/external-jwt-signers', base('tt-default'));
    expect(plain.status, plain.text).toBe(201);
    const d = (await mg('GET', `/external-jwt-signers/${plain.body.data.id}`)).body.data;
    expect(d).toMatchObject({ targetToken: 'ACCESS', enrollNameClaimsSelector: '/sub', enrollAttributeClaimsSelector: '', enrollToCertEnabled: false, enrollToTokenEnabled: false });
    const listed = (await mg('GET', `/external-jwt-signers?filter=${encodeURIComponent('name = "tt-default"')}`)).body.data;
    expect(listed[0].targetToken).toBe('ACCESS');

    const id = await mg('POST', '/external-jwt-signers', { ...base('tt-id'), targetToken: 'ID', enrollNameClaimsSelector: 'preferred_username', enrollAttributeClaimsSelector: '/realm_access/roles' });
    expect(id.status, id.text).toBe(201);
    const sid = id.body.data.id;
    expect((await mg('GET', `/external-jwt-signers/${sid}`)).body.data).toMatchObject({ targetToken: 'ID', enrollNameClaimsSelector: 'preferred_username', enrollAttributeClaimsSelector: '/realm_access/roles' });
    expect((await mg('GET', `/external-jwt-signers?filter=${encodeURIComponent('targetToken = "ID"')}`)).body.data.map((s: { id: string }) => s.id)).toEqual([sid]);
    // A patch that leaves it out keeps it; null is the default again; PUT without it is the default too.
    expect((await mg('PATCH', `/external-jwt-signers/${sid}`, { name: 'tt-id-2' })).status).toBe(200);
    expect((await mg('GET', `/external-jwt-signers/${sid}`)).body.data.targetToken).toBe('ID');
    expect((await mg('PATCH', `/external-jwt-signers/${sid}`, { targetToken: null, enrollNameClaimsSelector: null })).status).toBe(200);
    expect((await mg('GET', `/external-jwt-signers/${sid}`)).body.data).toMatchObject({ targetToken: 'ACCESS', enrollNameClaimsSelector: '/sub', enrollAttributeClaimsSelector: '/realm_access/roles' });
    expect((await mg('PUT', `/external-jwt-signers/${sid}`, { ...base('tt-id-2'), targetToken: 'ID' })).status).toBe(200);
    expect((await mg('PUT', `/external-jwt-signers/${sid}`, base('tt-id-2'))).status).toBe(200);
    expect((await mg('GET', `/external-jwt-signers/${sid}`)).body.data).toMatchObject({ targetToken: 'ACCESS', enrollAttributeClaimsSelector: '' });
    expect((await mg('PATCH', `/external-jwt-signers/${sid}`, { targetToken: 'ID' })).status).toBe(200);

    const pub = (await c.call('GET', `${CLIENT}/external-jwt-signers`)).body.data.find((s: { id: string }) => s.id === sid);
    expect(pub).toMatchObject({ targetToken: 'ID', audience: 'ztc', enrollToCertEnabled: false, enrollToTokenEnabled: false });

    expect(expectError(await mg('POST', '/external-jwt-signers', { ...base('tt-bad'), targetToken: 'REFRESH' }), 400, 'COULD_NOT_VALIDATE').cause.field).toBe('targetToken');
    expect(expectError(await mg('PATCH', `/external-jwt-signers/${sid}`, { enrollNameClaimsSelector: '/a~2b' }), 400, 'COULD_NOT_VALIDATE').cause.field).toBe('enrollNameClaimsSelector');
  });

  it('enrolment by JWT: enrollToCertEnabled, enrollToTokenEnabled and enrollAuthPolicyId are stored and shown (an unknown policy refused)', async () => {
    const off = await mg('POST', '/external-jwt-signers', { ...base('enroll-off'), enrollToCertEnabled: false, enrollToTokenEnabled: false, enrollAuthPolicyId: '' });
    expect(off.status, off.text).toBe(201);
    expect((await mg('GET', `/external-jwt-signers/${off.body.data.id}`)).body.data).toMatchObject({ enrollToCertEnabled: false, enrollToTokenEnabled: false, enrollAuthPolicyId: '' });
    const on = await mg('POST', '/external-jwt-signers', { ...base('enroll-on'), enrollToCertEnabled: true, enrollToTokenEnabled: true, enrollAuthPolicyId: 'default' });
    expect(on.status, on.text).toBe(201);
    expect((await mg('GET', `/external-jwt-signers/${on.body.data.id}`)).body.data).toMatchObject({ enrollToCertEnabled: true, enrollToTokenEnabled: true, enrollAuthPolicyId: 'default' });
    expect((await mg('GET', `/external-jwt-signers?filter=${encodeURIComponent('enrollToTokenEnabled = true')}`)).body.data.map((x: { id: string }) => x.id)).toEqual([on.body.data.id]);
    const pub = (await c.call('GET', `${CLIENT}/external-jwt-signers`)).body.data.find((x: { id: string }) => x.id === on.body.data.id);
    expect(pub).toMatchObject({ enrollToCertEnabled: true, enrollToTokenEnabled: true });
    expect(pub.enrollAuthPolicyId).toBeUndefined();
    expect((await mg('PATCH', `/external-jwt-signers/${on.body.data.id}`, { enrollToCertEnabled: false })).status).toBe(200);
    expect((await mg('GET', `/external-jwt-signers/${on.body.data.id}`)).body.data).toMatchObject({ enrollToCertEnabled: false, enrollToTokenEnabled: true });
    const e = expectError(await mg('POST', '/external-jwt-signers', { ...base('enroll-bad-policy'), enrollAuthPolicyId: 'no-such-policy' }), 400, 'INVALID_FIELD');
    expect(e.cause.field).toBe('enrollAuthPolicyId');
  });
});
