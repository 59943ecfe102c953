// POST /enroll/token (2.x client API): an external identity provider's JWT enrolls a new identity through
// the signer that issued it (upstream controller v2.0.3 EnrollModuleToken), with the issuer and audience
// checked whichever way the signer is found (GHSA-4h58-w989-xgg4). Without a CSR the identity then logs in
// with the provider's JWTs; with one it gets a certificate and logs in with that.
import { X509Certificate } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimAt } from '../../src/model/pki/enroll-token.js';
import { ecCsr } from '../helpers/certs.js';
import { CLIENT, expectError, MGMT } from '../helpers/controller.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let c: TlsController;
let admin: string;
let server: http.Server;
let jwksUrl = '';
let key: CryptoKey;
let otherKey: CryptoKey;
let signerId = '';

beforeAll(async () => {
  c = await startTlsController({ jwksPrivateHosts: ['127.0.0.1'] });
  admin = await c.login();
  const a = await generateKeyPair('RS256');
  const b = await generateKeyPair('RS256');
  key = a.privateKey;
  otherKey = b.privateKey;
  // One key set for two signers (two audiences of one provider): the audience is what tells them apart.
  const keys = [{ ...(await exportJWK(a.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }, { ...(await exportJWK(b.publicKey)), kid: 'k2', alg: 'RS256', use: 'sig' }];
  server = http.createServer((_req, res) => res.end(JSON.stringify({ keys })));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  jwksUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/jwks`;
  const s = await mg('POST', '/external-jwt-signers', {
    name: 'jit', enabled: true, issuer: 'https://idp.example', audience: 'ztc-enroll', jwksEndpoint: jwksUrl, useExternalId: true, claimsProperty: 'sub',
    enrollToTokenEnabled: true, enrollToCertEnabled: true, enrollNameClaimsSelector: '/preferred_username', enrollAttributeClaimsSelector: '/groups',
  });
  expect(s.status, s.text).toBe(201);
  signerId = s.body.data.id;
});
afterAll(async () => {
  server.close();
  await c.close();
});

function mg(method: string, path: string, body?: unknown) {
  return c.call(method, `${MGMT}${path}`, { token: admin, body });
}

const jwt = (claims: Record<string, unknown>, o: { kid?: string; key?: CryptoKey; iss?: string; aud?: string | string[]; exp?: number } = {}) => {
  const now = Math.floor(c.clock.now().getTime() / 1000);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: o.kid ?? 'k1' })
    .setIssuer(o.iss ?? 'https://idp.example')
    .setAudience(o.aud ?? 'ztc-enroll')
    .setIssuedAt(now)
    .setExpirationTime(o.exp ?? now + 600)
    .sign(o.key ?? key);
};
const enroll = (token: string, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  c.call('POST', `${CLIENT}/enroll/token`, { headers: { authorization: `Bearer ${token}`, ...headers }, body });

describe('POST /enroll/token', () => {
  it('without a CSR: creates the identity named by the claims, which then logs in with the provider\'s JWTs', async () => {
    const token = await jwt({ sub: 'u-ana', preferred_username: 'ana', groups: ['staff', 'vpn'] });
    const r = await enroll(token);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toEqual({});
    const found = (await mg('GET', `/identities?filter=${encodeURIComponent('name = "ana"')}`)).body.data;
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ name: 'ana', externalId: 'u-ana', roleAttributes: ['staff', 'vpn'], authPolicyId: 'default', isAdmin: false, typeId: 'Default' });
    // It logs in with the provider's JWTs (method ext-jwt: the signer finds it by its externalId).
    const login = await c.call('POST', `${CLIENT}/authenticate?method=ext-jwt`, { headers: { authorization: `Bearer ${await jwt({ sub: 'u-ana' })}` }, body: {} });
    expect(login.status, login.text).toBe(200);
    expect(login.body.data.identityId).toBe(found[0].id);
    // A second enrolment of the same subject: 409, as upstream.
    expectError(await enroll(await jwt({ sub: 'u-ana', preferred_username: 'ana-2' })), 409, 'ENROLLMENT_IDENTITY_ALREADY_ENROLLED');
    // Recorded as an enrollment, and the identity's creation in the audit.
    const audit = (await mg('GET', `/audit-events?types=entityChange&entity=${found[0].id}&limit=10`)).body.data as { eventType: string }[];
    expect(audit.map((e) => e.eventType)).toContain('created');
  });

  it('with a CSR: answers a certificate of the network and the CA bundle; the identity logs in with it', async () => {
    const { csrPem, keyPem } = ecCsr('ben');
    const r = await enroll(await jwt({ sub: 'u-ben', preferred_username: 'ben', groups: 'solo' }), { clientCsr: csrPem });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.ca).toContain('BEGIN CERTIFICATE');
    const cert = r.body.data.cert as string;
    const id = (await mg('GET', `/identities?filter=${encodeURIComponent('name = "ben"')}`)).body.data[0];
    expect(id).toMatchObject({ externalId: 'u-ben', roleAttributes: ['solo'] });
    expect(new X509Certificate(cert).subject).toContain(`CN=${id.id}`);
    const login = await c.call('POST', `${CLIENT}/authenticate?method=cert`, { cert, key: keyPem, body: {} });
    expect(login.status, login.text).toBe(200);
    expect(login.body.data.identityId).toBe(id.id);
    expectError(await enroll(await jwt({ sub: 'u-bad-csr', preferred_username: 'bad-csr' }), { clientCsr: 'not a csr' }), 400, 'COULD_NOT_PROCESS_CSR');
  });

  it('checks issuer and audience even when ziti-token-issuer-id names the signer (GHSA-4h58-w989-xgg4)', async () => {
    // The same provider and keys, another audience: a signer for another network's enrolments.
    const other = await mg('POST', '/external-jwt-signers', { name: 'jit-other', enabled: true, issuer: 'https://idp.example/other', audience: 'other-app', jwksEndpoint: jwksUrl, enrollToTokenEnabled: true });
    expect(other.status, other.text).toBe(201);
    const wrongAud = await jwt({ sub: 'u-eve', preferred_username: 'eve' }, { aud: 'other-app' });
    expectError(await enroll(wrongAud), 400, 'INVALID_ENROLLMENT_TOKEN');
    expectError(await enroll(wrongAud, {}, { 'ziti-token-issuer-id': signerId }), 400, 'INVALID_ENROLLMENT_TOKEN');
    // The right audience but another issuer, with the header naming our signer: refused too.
    const wrongIss = await jwt({ sub: 'u-eve', preferred_username: 'eve' }, { iss: 'https://idp.example/other' });
    expectError(await enroll(wrongIss, {}, { 'ziti-token-issuer-id': signerId }), 400, 'INVALID_ENROLLMENT_TOKEN');
    // A token for the other signer is that signer's (its audience and issuer), not ours.
    const forOther = await jwt({ sub: 'u-eve', preferred_username: 'eve' }, { iss: 'https://idp.example/other', aud: 'other-app' });
    expectError(await enroll(forOther, {}, { 'ziti-token-issuer-id': signerId }), 400, 'INVALID_ENROLLMENT_TOKEN');
    // With the right header, issuer and audience it enrolls.
    const ok = await enroll(await jwt({ sub: 'u-eve', preferred_username: 'eve' }), {}, { 'ziti-token-issuer-id': signerId });
    expect(ok.status, ok.text).toBe(200);
    // Bad signatures, expired tokens, no token, unknown issuer ids.
    expectError(await enroll(await jwt({ sub: 'u-x', preferred_username: 'x' }, { kid: 'k1', key: otherKey })), 400, 'INVALID_ENROLLMENT_TOKEN');
    expectError(await enroll(await jwt({ sub: 'u-x', preferred_username: 'x' }, { exp: Math.floor(c.clock.now().getTime() / 1000) - 3600 })), 400, 'INVALID_ENROLLMENT_TOKEN');
    expectError(await c.call('POST', `${CLIENT}/enroll/token`, { body: {} }), 400, 'INVALID_ENROLLMENT_TOKEN');
    expectError(await enroll(await jwt({ sub: 'u-x', preferred_username: 'x' }), {}, { 'ziti-token-issuer-id': 'nope' }), 400, 'INVALID_ENROLLMENT_TOKEN');
    // No name claim: refused, as upstream (no identity with a blank name).
    expectError(await enroll(await jwt({ sub: 'u-noname' })), 400, 'INVALID_ENROLLMENT_TOKEN');
  });

  it('follows the signer\'s switches and the auth policy it names', async () => {
    const strict = await mg('POST', '/auth-policies', {
      name: 'jit-certs-only',
      primary: { cert: { allowed: true, allowExpiredCerts: false }, updb: { allowed: false, minPasswordLength: 5, requireSpecialChar: false, requireNumberChar: false, requireMixedCase: false, maxAttempts: 0, lockoutDurationMinutes: 0 }, extJwt: { allowed: false, allowedSigners: [] } },
      secondary: { requireTotp: false, requireExtJwtSigner: null },
    });
    expect(strict.status, strict.text).toBe(201);
    const policy = strict.body.data.id as string;
    expect((await mg('PATCH', `/external-jwt-signers/${signerId}`, { enrollAuthPolicyId: policy })).status).toBe(200);
    // The policy allows no JWT logins: a token enrolment would make an identity that cannot log in.
    expectError(await enroll(await jwt({ sub: 'u-fay', preferred_username: 'fay' })), 409, 'INVALID_ENROLLMENT_NOT_ALLOWED');
    const r = await enroll(await jwt({ sub: 'u-fay', preferred_username: 'fay' }), { clientCsr: ecCsr('fay').csrPem });
    expect(r.status, r.text).toBe(200);
    expect((await mg('GET', `/identities?filter=${encodeURIComponent('name = "fay"')}`)).body.data[0].authPolicyId).toBe(policy);
    // The policy is in use by the signer: not deleted (as upstream's foreign key).
    expectError(await mg('DELETE', `/auth-policies/${policy}`), 409, 'CAN_NOT_DELETE_REFERENCED_ENTITY');
    // The signer's switches.
    expect((await mg('PATCH', `/external-jwt-signers/${signerId}`, { enrollToCertEnabled: false, enrollAuthPolicyId: null })).status).toBe(200);
    expectError(await enroll(await jwt({ sub: 'u-gus', preferred_username: 'gus' }), { clientCsr: ecCsr('gus').csrPem }), 409, 'INVALID_ENROLLMENT_NOT_ALLOWED');
    expect((await mg('PATCH', `/external-jwt-signers/${signerId}`, { enrollToTokenEnabled: false })).status).toBe(200);
    expectError(await enroll(await jwt({ sub: 'u-gus', preferred_username: 'gus' })), 409, 'INVALID_ENROLLMENT_NOT_ALLOWED');
    // A disabled signer enrolls nobody.
    expect((await mg('PATCH', `/external-jwt-signers/${signerId}`, { enrollToTokenEnabled: true, enabled: false })).status).toBe(200);
    expectError(await enroll(await jwt({ sub: 'u-gus', preferred_username: 'gus' })), 400, 'INVALID_ENROLLMENT_TOKEN');
  });

  it('is public, in the client API document, and resolves claims selectors as JSON pointers', async () => {
    const doc = JSON.parse((await c.call('GET', `${CLIENT}/specs/edge-client/spec`)).body.data);
    expect(doc.paths[`${CLIENT}/enroll/token`].post.operationId).toBe('enrollToken');
    const claims = { sub: 's', realm_access: { roles: ['a', 'b'] }, 'a/b': 'slash', 'c~d': 'tilde', list: ['x', 'y'] };
    expect(claimAt(claims, 'sub')).toBe('s');
    expect(claimAt(claims, '/realm_access/roles')).toEqual(['a', 'b']);
    expect(claimAt(claims, '/a~1b')).toBe('slash');
    expect(claimAt(claims, '/c~0d')).toBe('tilde');
    expect(claimAt(claims, '/list/1')).toBe('y');
    expect(claimAt(claims, '/missing/x')).toBeUndefined();
  });
});
