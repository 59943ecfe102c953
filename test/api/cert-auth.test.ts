// Everything that needs a certificate presented on a real TLS connection.
import { X509Certificate } from 'node:crypto';
import { jwtVerify, createLocalJWKSet } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, expectError, MGMT } from '../helpers/controller.js';
import { ecCsr, selfSignedCert, TestCa } from '../helpers/certs.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let c: TlsController;
let admin: string;
beforeAll(async () => {
  c = await startTlsController();
  admin = await c.login();
});
afterAll(() => c.close());

const identity = async (name: string, enrollment?: unknown) => {
  const r = await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name, type: 'Device', isAdmin: false, ...(enrollment ? { enrollment } : {}) } });
  return r.body.data.id as string;
};
const detail = async (id: string) => (await c.call('GET', `${MGMT}/identities/${id}`, { token: admin })).body.data;
const certLogin = (cert: string, key: string) => c.call('POST', `${CLIENT}/authenticate?method=cert`, { cert, key, body: {} });

/** Enroll an identity with ott over the API; returns its key and certificate. */
async function enrolled(name: string) {
  const id = await identity(name, { ott: true });
  const { csrPem, keyPem } = ecCsr(name);
  const r = await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token: (await detail(id)).enrollment.ott.token, clientCsr: csrPem } });
  return { id, cert: r.body.data.cert as string, key: keyPem };
}

async function addCa(ca: TestCa, flags: Partial<Record<'isAuthEnabled' | 'isAutoCaEnrollmentEnabled' | 'isOttCaEnrollmentEnabled', boolean>> = {}) {
  const r = await c.call('POST', `${MGMT}/cas`, {
    token: admin,
    body: { name: ca.name, certPem: ca.pem, identityRoles: ['partner', 'auto'], identityNameFormat: '[caName]-[commonName]', isAuthEnabled: true, isAutoCaEnrollmentEnabled: true, isOttCaEnrollmentEnabled: true, ...flags },
  });
  expect(r.status, r.text).toBe(201);
  return r.body.data.id as string;
}
async function verify(ca: TestCa, id: string) {
  const token = (await c.call('GET', `${MGMT}/cas/${id}`, { token: admin })).body.data.verificationToken;
  return c.call('POST', `${MGMT}/cas/${id}/verify`, { token: admin, body: ca.issue(token).certPem, contentType: 'text/plain' });
}

describe('certificate authentication', () => {
  it('logs in with a certificate the network issued, and refuses unknown, foreign and missing ones', async () => {
    const e = await enrolled('cert-user');
    const ok = await certLogin(e.cert, e.key);
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data).toMatchObject({ identityId: e.id, isCertExtendable: true });
    expect((await c.call('GET', `${CLIENT}/current-identity`, { token: ok.body.data.token })).body.data.id).toBe(e.id);
    const stranger = selfSignedCert('stranger');
    expectError(await certLogin(stranger.certPem, stranger.keyPem), 401, 'INVALID_AUTH');
    expectError(await c.call('POST', `${CLIENT}/authenticate?method=cert`, { body: {} }), 401, 'INVALID_AUTH');
    // A key that does not match the certificate fails the TLS handshake itself.
    await expect(certLogin(e.cert, ecCsr().keyPem)).rejects.toThrow();
  });

  it('lets an expired certificate log in to extend it under the default policy, refuses it under a strict one, and refuses a disabled identity', async () => {
    const e = await enrolled('cert-expiring');
    const strict = await c.call('POST', `${MGMT}/auth-policies`, {
      token: admin,
      body: { name: 'no-expired-certs', primary: { cert: { allowed: true, allowExpiredCerts: false }, updb: { allowed: false, minPasswordLength: 5, requireSpecialChar: false, requireNumberChar: false, requireMixedCase: false, maxAttempts: 0, lockoutDurationMinutes: 0 }, extJwt: { allowed: false, allowedSigners: [] } }, secondary: { requireTotp: false, requireExtJwtSigner: null } },
    });
    expect(strict.status, strict.text).toBe(201);
    // Logging in 400 days later, past the certificate's end (the admin acts only at the real time).
    const later = async () => {
      c.clock.advance(400 * 86_400_000);
      try {
        return await certLogin(e.cert, e.key);
      } finally {
        c.clock.advance(-400 * 86_400_000);
      }
    };
    // As upstream's default policy: the session is there to extend the certificate.
    const late = await later();
    expect(late.status, late.text).toBe(200);
    expect(late.body.data.isCertExtendable).toBe(true);
    await c.call('PATCH', `${MGMT}/identities/${e.id}`, { token: admin, body: { authPolicyId: strict.body.data.id } });
    expectError(await later(), 401, 'INVALID_AUTH');
    expect((await certLogin(e.cert, e.key)).status).toBe(200);
    await c.running.ctx.store.db.updateTable('identities').set({ disabled: 1 }).where('id', '=', e.id).execute();
    expectError(await certLogin(e.cert, e.key), 401, 'INVALID_AUTH');
  });

  it('extends a certificate: the old one works until extend-verify, then only the new one', async () => {
    const e = await enrolled('cert-extend');
    const session = (await certLogin(e.cert, e.key)).body.data;
    const authId = session.authenticatorId;
    const next = ecCsr('cert-extend');
    const pwSession = admin;
    expectError(await c.call('POST', `${CLIENT}/current-identity/authenticators/${authId}/extend`, { token: pwSession, body: { clientCertCsr: next.csrPem } }), 401);
    // As upstream: the session token alone is not enough, the current certificate must be on the connection.
    expectError(await c.call('POST', `${CLIENT}/current-identity/authenticators/${authId}/extend`, { token: session.token, body: { clientCertCsr: next.csrPem } }), 401, 'UNAUTHORIZED');
    const other = await enrolled('cert-extend-other');
    expectError(await c.call('POST', `${CLIENT}/current-identity/authenticators/${authId}/extend`, { token: session.token, cert: other.cert, key: other.key, body: { clientCertCsr: next.csrPem } }), 401, 'UNAUTHORIZED');
    const ext = await c.call('POST', `${CLIENT}/current-identity/authenticators/${authId}/extend`, { token: session.token, cert: e.cert, key: e.key, body: { clientCertCsr: next.csrPem } });
    expect(ext.status, ext.text).toBe(200);
    expect(new X509Certificate(ext.body.data.clientCert).subject).toContain(`CN=${e.id}`);
    expect((await certLogin(e.cert, e.key)).status).toBe(200);
    expectError(await certLogin(ext.body.data.clientCert, next.keyPem), 401, 'INVALID_AUTH');
    expectError(await c.call('POST', `${CLIENT}/current-identity/authenticators/${authId}/extend-verify`, { token: session.token, body: { clientCert: e.cert } }), 401);
    expect((await c.call('POST', `${CLIENT}/current-identity/authenticators/${authId}/extend-verify`, { token: session.token, body: { clientCert: ext.body.data.clientCert } })).status).toBe(200);
    expect((await certLogin(ext.body.data.clientCert, next.keyPem)).status).toBe(200);
    expectError(await certLogin(e.cert, e.key), 401, 'INVALID_AUTH');
  });

  it('issues short-lived certificates bound to the API session', async () => {
    const token = await c.login();
    const other = await c.login();
    const { csrPem } = ecCsr('ephemeral');
    const made = await c.call('POST', `${CLIENT}/current-api-session/certificates`, { token, body: { csr: csrPem } });
    expect(made.status, made.text).toBe(201);
    const x = new X509Certificate(made.body.data.certificate);
    expect(Date.parse(x.validTo) - Date.now()).toBeLessThan(13 * 3600_000);
    const list = await c.call('GET', `${CLIENT}/current-api-session/certificates`, { token });
    expect(list.body.data.map((d: { id: string }) => d.id)).toEqual([made.body.data.id]);
    expect((await c.call('GET', `${CLIENT}/current-api-session/certificates`, { token: other })).body.data).toEqual([]);
    expectError(await c.call('GET', `${CLIENT}/current-api-session/certificates/${made.body.data.id}`, { token: other }), 404);
    expect((await c.call('GET', `${CLIENT}/current-api-session/certificates/${made.body.data.id}`, { token })).body.data.fingerprint).toMatch(/^[0-9a-f]{40}$/);
    expect((await c.call('DELETE', `${CLIENT}/current-api-session/certificates/${made.body.data.id}`, { token })).status).toBe(200);
    expect((await c.call('GET', `${CLIENT}/current-api-session/certificates`, { token })).body.data).toEqual([]);
    expectError(await c.call('POST', `${CLIENT}/current-api-session/certificates`, { token, body: { csr: 'nope' } }), 400, 'COULD_NOT_PROCESS_CSR');
  });
});

describe('third-party CAs', () => {
  it('creates, refuses a leaf, verifies only with the right signer and common name', async () => {
    expectError(await c.call('POST', `${MGMT}/cas`, { token: admin, body: { name: 'leaf', certPem: selfSignedCert('leaf').certPem, identityRoles: [], isAuthEnabled: true, isAutoCaEnrollmentEnabled: true, isOttCaEnrollmentEnabled: true } }), 400, 'CERTIFICATE_IS_NOT_CA');
    const ca = new TestCa('Partner CA');
    const id = await addCa(ca);
    // The same CA certificate again: 400 COULD_NOT_VALIDATE, as upstream (not 409).
    const again = expectError(await c.call('POST', `${MGMT}/cas`, { token: admin, body: { name: 'Partner CA again', certPem: ca.pem, identityRoles: [], isAuthEnabled: true, isAutoCaEnrollmentEnabled: true, isOttCaEnrollmentEnabled: true } }), 400, 'COULD_NOT_VALIDATE');
    expect(again.message).toMatch(/already the CA/);
    const d = (await c.call('GET', `${MGMT}/cas/${id}`, { token: admin })).body.data;
    expect(d).toMatchObject({ name: 'Partner CA', isVerified: false, identityRoles: ['auto', 'partner'], identityNameFormat: '[caName]-[commonName]' });
    expect(d.verificationToken).toMatch(/^[A-Za-z0-9_.-]{10}$/); // short as upstream's (its CLI lists it in a column)
    expectError(await c.call('POST', `${MGMT}/cas/${id}/verify`, { token: admin, body: ca.issue('wrong-cn').certPem, contentType: 'text/plain' }), 400, 'INVALID_COMMON_NAME');
    expectError(await c.call('POST', `${MGMT}/cas/${id}/verify`, { token: admin, body: new TestCa('Other').issue(d.verificationToken).certPem, contentType: 'text/plain' }), 400, 'CERT_FAILED_VALIDATION');
    expectError(await c.call('POST', `${MGMT}/cas/${id}/verify`, { token: admin, body: 'not pem', contentType: 'text/plain' }), 400, 'COULD_NOT_PARSE_BODY');
    // Unverified: its certificates enroll nothing.
    const early = ca.issue('early-bird');
    expectError(await c.call('POST', `${CLIENT}/enroll/ca`, { cert: early.certPem, key: early.keyPem }), 400, 'ENROLLMENT_NO_VALID_CAS');
    expect((await verify(ca, id)).status).toBe(200);
    expect((await c.call('GET', `${MGMT}/cas/${id}`, { token: admin })).body.data.isVerified).toBe(true);
    // Verified: no verify link, the token still shown (upstream's CLI reads it first), a second verification refused.
    const verified = (await c.call('GET', `${MGMT}/cas/${id}`, { token: admin })).body.data;
    expect(verified.verificationToken).toBe(d.verificationToken);
    expect(verified._links.verify).toBeUndefined();
    expectError(await c.call('POST', `${MGMT}/cas/${id}/verify`, { token: admin, body: ca.issue(d.verificationToken).certPem, contentType: 'text/plain' }), 409, 'CA_ALREADY_VERIFIED');
    const jwt = await c.call('GET', `${MGMT}/cas/${id}/jwt`, { token: admin, accept: 'application/jwt' });
    expect(jwt.headers['content-type']).toMatch(/application\/jwt/);
    const jwks = (await c.call('GET', `${CLIENT}/enroll/jwks`)).body;
    expect((await jwtVerify(jwt.text, createLocalJWKSet(jwks), { currentDate: c.clock.now() })).payload).toMatchObject({ em: 'ca', ca: id });
  });

  it('auto-enrolls from a verified CA, logs in with that certificate while auth is enabled, and deletes with the CA', async () => {
    const ca = new TestCa('AutoCA');
    const id = await addCa(ca);
    expect((await verify(ca, id)).status).toBe(200);
    const device = ca.issue('laptop-7');
    const r = await c.call('POST', `${CLIENT}/enroll/ca`, { cert: device.certPem, key: device.keyPem });
    expect(r.status, r.text).toBe(200);
    const made = (await c.call('GET', `${MGMT}/identities?filter=${encodeURIComponent('name = "AutoCA-laptop-7"')}`, { token: admin })).body.data[0];
    expect(made).toMatchObject({ roleAttributes: ['auto', 'partner'], typeId: 'Default' });
    expect((await c.call('GET', `${MGMT}/identities?roleFilter=%23partner`, { token: admin })).body.data.map((i: { id: string }) => i.id)).toContain(made.id);
    expectError(await c.call('POST', `${CLIENT}/enroll/ca`, { cert: device.certPem, key: device.keyPem }), 409, 'CERT_IN_USE');
    expect((await certLogin(device.certPem, device.keyPem)).status).toBe(200);
    await c.call('PATCH', `${MGMT}/cas/${id}`, { token: admin, body: { isAuthEnabled: false } });
    expectError(await certLogin(device.certPem, device.keyPem), 401, 'INVALID_AUTH');
    expect((await c.call('DELETE', `${MGMT}/cas/${id}`, { token: admin })).status).toBe(200);
    expect((await detail(made.id)).authenticators).toEqual({});
  });

  it('refuses auto-enrollment with an expired or not yet valid certificate, saying which', async () => {
    const ca = new TestCa('WindowCA');
    const id = await addCa(ca);
    expect((await verify(ca, id)).status).toBe(200);
    const device = ca.issue('window-device');
    const enroll = () => c.call('POST', `${CLIENT}/enroll/ca`, { cert: device.certPem, key: device.keyPem });
    // Its window is [now - 1 min, now + 5 days]; the controller's clock moves, the certificate does not.
    c.clock.advance(6 * 86_400_000);
    const late = await enroll();
    expectError(late, 400, 'CERT_FAILED_VALIDATION');
    expect(late.body.error.message).toMatch(/expired/);
    c.clock.advance(-7 * 86_400_000);
    const early = await enroll();
    expectError(early, 400, 'CERT_FAILED_VALIDATION');
    expect(early.body.error.message).toMatch(/not valid yet/);
    c.clock.advance(86_400_000);
    expect((await enroll()).status).toBe(200);
  });

  it('enrolls with ottca: the token plus a certificate from the enrollment’s CA', async () => {
    const ca = new TestCa('OttCA');
    const caId = await addCa(ca, { isAutoCaEnrollmentEnabled: false });
    expect((await verify(ca, caId)).status).toBe(200);
    const id = await identity('ottca-user', { ottca: caId });
    const { token, caId: enrolledCa } = (await detail(id)).enrollment.ottca;
    expect(enrolledCa).toBe(caId);
    const foreign = new TestCa('Elsewhere').issue('x');
    expectError(await c.call('POST', `${CLIENT}/enroll/ottca?token=${token}`, { cert: foreign.certPem, key: foreign.keyPem }), 400, 'CERT_FAILED_VALIDATION');
    const mine = ca.issue('ottca-user');
    const r = await c.call('POST', `${CLIENT}/enroll/ottca?token=${token}`, { cert: mine.certPem, key: mine.keyPem });
    expect(r.status, r.text).toBe(200);
    expect((await detail(id)).authenticators.cert).toBeDefined();
    expect((await certLogin(mine.certPem, mine.keyPem)).body.data.identityId).toBe(id);
    // Re-enrolling a CA-issued certificate gives an ottca enrollment with that CA.
    const authId = (await detail(id)).authenticators.cert.id;
    const re = await c.call('POST', `${MGMT}/authenticators/${authId}/re-enroll`, { token: admin, body: { expiresAt: new Date(c.clock.now().getTime() + 3600_000).toISOString() } });
    expect(re.status, re.text).toBe(201);
    expect((await c.call('GET', `${MGMT}/enrollments/${re.body.data.id}`, { token: admin })).body.data).toMatchObject({ method: 'ottca', caId });
    expectError(await certLogin(mine.certPem, mine.keyPem), 401, 'INVALID_AUTH');
    // Auto-enrollment is off for this CA.
    const other = ca.issue('walk-in');
    expectError(await c.call('POST', `${CLIENT}/enroll/ca`, { cert: other.certPem, key: other.keyPem }), 400, 'ENROLLMENT_NO_VALID_CAS');
  });
});
