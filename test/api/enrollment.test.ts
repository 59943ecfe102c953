// Enrollment JWTs, one-time-token enrollment (ott with CSR, updb), refresh, re-enroll, challenge.
import { verify, X509Certificate } from 'node:crypto';
import { createLocalJWKSet, jwtVerify, decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, expectError, MGMT, startTestController } from '../helpers/controller.js';
import { registerController } from '../../src/model/resources/controllers.js';
import { ecCsr, rsaCsr } from '../helpers/certs.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let c: TlsController;
let admin: string;
beforeAll(async () => {
  c = await startTlsController();
  admin = await c.login();
});
afterAll(() => c.close());

const newIdentity = async (name: string, enrollment?: unknown) => {
  const r = await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name, type: 'Device', isAdmin: false, ...(enrollment ? { enrollment } : {}) } });
  expect(r.status, r.text).toBe(201);
  return r.body.data.id as string;
};
const detail = async (id: string) => (await c.call('GET', `${MGMT}/identities/${id}`, { token: admin })).body.data;
const inMinutes = (m: number) => new Date(c.clock.now().getTime() + m * 60_000).toISOString();

describe('enrollment JWTs', () => {
  it('are signed by a key served at /enroll/jwks, with the upstream claims', async () => {
    const id = await newIdentity('jwt-check', { ott: true });
    const { jwt, token, expiresAt } = (await detail(id)).enrollment.ott;
    const jwks = (await c.call('GET', `${CLIENT}/enroll/jwks`)).body;
    expect(jwks.keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
    expect(jwks.keys[0].d).toBeUndefined();
    const { payload, protectedHeader } = await jwtVerify(jwt, createLocalJWKSet(jwks), { currentDate: c.clock.now() });
    expect(protectedHeader).toMatchObject({ alg: 'RS256', kid: jwks.keys[0].kid });
    expect(payload).toMatchObject({ sub: id, jti: token, em: 'ott', iss: `https://localhost:${c.running.ctx.config.port}` });
    expect(payload.exp).toBe(Math.floor(Date.parse(expiresAt) / 1000));
    // 180 minutes by default.
    expect(Date.parse(expiresAt) - c.clock.now().getTime()).toBeCloseTo(180 * 60_000, -4);
  });

  it('answers the enrollment challenge with a signature by the named key', async () => {
    const jwks = (await c.call('GET', `${CLIENT}/enroll/jwks`)).body;
    const nonce = '3b241101-e2bb-4255-8caf-4136c566a962';
    const r = await c.call('POST', `${CLIENT}/enroll/challenge`, { body: { keyId: jwks.keys[0].kid, nonce } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ algorithm: 'RS256', kid: jwks.keys[0].kid });
    expect(r.body.caPool).toContain('BEGIN CERTIFICATE');
    const { createPublicKey } = await import('node:crypto');
    const key = createPublicKey({ key: jwks.keys[0], format: 'jwk' });
    expect(verify('sha256', Buffer.from(nonce), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(r.body.signature, 'base64url'))).toBe(true);
    expectError(await c.call('POST', `${CLIENT}/enroll/challenge`, { body: { keyId: jwks.keys[0].kid, nonce: 'not-a-uuid' } }), 400, 'INVALID_FIELD');
    expectError(await c.call('POST', `${CLIENT}/enroll/challenge`, { body: { keyId: 'nope', nonce } }), 400, 'INVALID_FIELD');
  });
});

describe('one-time-token enrollment with a CSR', () => {
  it('issues a client certificate for an EC CSR, once', async () => {
    const id = await newIdentity('ott-ec', { ott: true });
    const { token } = (await detail(id)).enrollment.ott;
    const { csrPem } = ecCsr('ott-ec');
    const r = await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token, clientCsr: csrPem } });
    expect(r.status, r.text).toBe(200);
    const cert = new X509Certificate(r.body.data.cert);
    const intermediate = new X509Certificate(c.running.ctx.pki.intermediatePem);
    expect(cert.checkIssued(intermediate) && cert.verify(intermediate.publicKey)).toBe(true);
    expect(cert.subject).toContain(`CN=${id}`);
    expect(cert.publicKey.asymmetricKeyType).toBe('ec');
    expect(r.body.data.ca).toBe(c.running.ctx.pki.caBundlePem);
    const after = await detail(id);
    expect(after.enrollment).toEqual({});
    expect(after.authenticators.cert.fingerprint).toMatch(/^[0-9a-f]{40}$/);
    // A token works once.
    expectError(await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token, clientCsr: ecCsr().csrPem } }), 400, 'INVALID_ENROLLMENT_TOKEN');
  });

  it('takes the legacy form: token in the query, PEM body, PEM answer', async () => {
    const id = await newIdentity('ott-legacy', { ott: true });
    const { token } = (await detail(id)).enrollment.ott;
    const r = await c.call('POST', `${CLIENT}/enroll?method=ott&token=${token}`, { body: rsaCsr().csrPem, contentType: 'application/x-pem-file', accept: 'application/x-pem-file' });
    expect(r.status, r.text).toBe(200);
    expect(r.headers['content-type']).toMatch(/application\/x-pem-file/);
    expect(new X509Certificate(r.text).subject).toContain(`CN=${id}`);
  });

  it('refuses bad CSRs, unknown tokens and other methods’ tokens, and keeps the token after a refusal', async () => {
    const id = await newIdentity('ott-refusals', { ott: true });
    const { token } = (await detail(id)).enrollment.ott;
    expectError(await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token, clientCsr: 'garbage' } }), 400, 'COULD_NOT_PROCESS_CSR');
    const tampered = ecCsr().csrPem.replace(/(\n[A-Za-z0-9+/]{10})[A-Za-z0-9+/]/, (m, p) => p + (m.endsWith('A') ? 'B' : 'A'));
    expectError(await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token, clientCsr: tampered } }), 400, 'COULD_NOT_PROCESS_CSR');
    expectError(await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token: '3b241101-e2bb-4255-8caf-4136c566a962', clientCsr: ecCsr().csrPem } }), 400, 'INVALID_ENROLLMENT_TOKEN');
    expectError(await c.call('POST', `${CLIENT}/enroll/updb?token=${token}`, { body: { password: 'whatever1' } }), 400, 'INVALID_ENROLLMENT_TOKEN');
    expect((await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token, clientCsr: ecCsr().csrPem } })).status).toBe(200);
  });

  it('refuses an expired token; a refresh keeps the token and extends it, so the JWT handed out works again', async () => {
    const id = await newIdentity('ott-expiry', { ott: true });
    const e = (await detail(id)).enrollment.ott;
    c.clock.advance(181 * 60_000);
    expectError(await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token: e.token, clientCsr: ecCsr().csrPem } }), 400, 'ENROLLMENT_EXPIRED');
    admin = await c.login();
    const refreshed = await c.call('POST', `${MGMT}/enrollments/${e.id}/refresh`, { token: admin, body: { expiresAt: inMinutes(30) } });
    expect(refreshed.status, refreshed.text).toBe(200);
    // As upstream: the same token, a later expiry; the JWT is signed again to carry it.
    expect(refreshed.body.data.token).toBe(e.token);
    expect(refreshed.body.data.expiresAt).not.toBe(e.expiresAt);
    expect(decodeJwt(refreshed.body.data.jwt)).toMatchObject({ jti: e.token, exp: Math.floor(Date.parse(refreshed.body.data.expiresAt) / 1000) });
    expect((await detail(id)).enrollment.ott.token).toBe(e.token);
    // The JWT handed out before the refresh enrolls.
    expect((await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token: decodeJwt(e.jwt).jti, clientCsr: ecCsr().csrPem } })).status).toBe(200);
    expectError(await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token: e.token, clientCsr: ecCsr().csrPem } }), 400, 'INVALID_ENROLLMENT_TOKEN');
    admin = await c.login();
  });
});

describe('updb enrollment and the enrollments API', () => {
  it('sets the password for the administrator’s username, once', async () => {
    const id = await newIdentity('updb-user');
    const made = await c.call('POST', `${MGMT}/enrollments`, { token: admin, body: { identityId: id, method: 'updb', username: 'updb-user', expiresAt: inMinutes(60) } });
    expect(made.status, made.text).toBe(201);
    const e = (await c.call('GET', `${MGMT}/enrollments/${made.body.data.id}`, { token: admin })).body.data;
    expect(e).toMatchObject({ method: 'updb', username: 'updb-user', identityId: id, identity: { name: 'updb-user' } });
    expectError(await c.call('POST', `${MGMT}/enrollments`, { token: admin, body: { identityId: id, method: 'updb', username: 'other-name', expiresAt: inMinutes(60) } }), 409);
    expect((await c.call('GET', `${MGMT}/identities/${id}/enrollments`, { token: admin })).body.data.map((x: { id: string }) => x.id)).toEqual([e.id]);
    expectError(await c.call('POST', `${CLIENT}/enroll/updb?token=${e.token}`, { body: { password: 'abc' } }), 400, 'COULD_NOT_VALIDATE');
    expect((await c.call('POST', `${CLIENT}/enroll/updb?token=${e.token}`, { body: { password: 'updb-pass-1' } })).status).toBe(200);
    expect((await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'updb-user', password: 'updb-pass-1' } })).status).toBe(200);
    expectError(await c.call('POST', `${CLIENT}/enroll/updb?token=${e.token}`, { body: { password: 'updb-pass-2' } }), 400, 'INVALID_ENROLLMENT_TOKEN');
    expectError(await c.call('GET', `${MGMT}/enrollments/${e.id}`, { token: admin }), 404);
  });

  it('validates enrollment creation', async () => {
    const id = await newIdentity('enroll-validation');
    const post = (body: unknown) => c.call('POST', `${MGMT}/enrollments`, { token: admin, body });
    expect(expectError(await post({ identityId: id, method: 'updb', expiresAt: inMinutes(60) }), 400, 'INVALID_FIELD').cause.field).toBe('username');
    expect(expectError(await post({ identityId: id, method: 'ottca', expiresAt: inMinutes(60) }), 400, 'INVALID_FIELD').cause.field).toBe('caId');
    expect(expectError(await post({ identityId: id, method: 'ott', expiresAt: inMinutes(-5) }), 400, 'INVALID_FIELD').cause.field).toBe('expiresAt');
    expect(expectError(await post({ identityId: id, method: 'ott', expiresAt: 'tomorrow' }), 400, 'COULD_NOT_VALIDATE').cause.field).toBe('expiresAt');
    expect(expectError(await post({ identityId: id, method: 'magic', expiresAt: inMinutes(60) }), 400, 'COULD_NOT_VALIDATE').cause.field).toBe('method');
    expect(expectError(await post({ identityId: 'nobody', method: 'ott', expiresAt: inMinutes(60) }), 400, 'REFERENCED_ENTITY_NOT_FOUND').cause.field).toBe('identityId');
    expect((await post({ identityId: id, method: 'ott', expiresAt: inMinutes(60) })).status).toBe(201);
    expectError(await post({ identityId: id, method: 'ott', expiresAt: inMinutes(60) }), 409);
    const list = await c.call('GET', `${MGMT}/enrollments?filter=${encodeURIComponent(`identityId = "${id}"`)}`, { token: admin });
    expect(list.body.data).toHaveLength(1);
    expect((await c.call('DELETE', `${MGMT}/enrollments/${list.body.data[0].id}`, { token: admin })).status).toBe(200);
    expect((await detail(id)).enrollment).toEqual({});
  });

  it('re-enrolls authenticators: updb gives updb, a network certificate gives ott', async () => {
    const id = await newIdentity('re-enroll', { ott: true, updb: 're-enroll-user' });
    const d = await detail(id);
    await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token: d.enrollment.ott.token, clientCsr: ecCsr().csrPem } });
    await c.call('POST', `${CLIENT}/enroll/updb?token=${d.enrollment.updb.token}`, { body: { password: 'first-pass' } });
    const auths = (await c.call('GET', `${MGMT}/identities/${id}/authenticators`, { token: admin })).body.data as { id: string; method: string }[];
    expect(auths.map((a) => a.method).sort()).toEqual(['cert', 'updb']);
    for (const a of auths) {
      const r = await c.call('POST', `${MGMT}/authenticators/${a.id}/re-enroll`, { token: admin, body: { expiresAt: inMinutes(60) } });
      expect(r.status, r.text).toBe(201);
    }
    const after = await detail(id);
    expect(after.authenticators).toEqual({});
    expect(Object.keys(after.enrollment).sort()).toEqual(['ott', 'updb']);
    expect((await c.call('GET', `${MGMT}/enrollments/${after.enrollment.updb.id}`, { token: admin })).body.data.username).toBe('re-enroll-user');
    expect((await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 're-enroll-user', password: 'first-pass' } })).status).toBe(401);
  });
});

describe('the advertised API address (upstream\'s edge.api.address)', () => {
  it('is the issuer of enrollment JWTs, the /protocols address and the controllers\' API addresses', async () => {
    const other = await startTestController({ config: { apiAddress: 'ctrl.example.com:8441' } });
    try {
      const root = await other.login();
      const made = await other.call('POST', `${MGMT}/identities`, { token: root, body: { name: 'advertised', type: 'Default', isAdmin: false, enrollment: { ott: true } } });
      const jwt = (await other.call('GET', `${MGMT}/identities/${made.body.data.id}`, { token: root })).body.data.enrollment.ott.jwt;
      // The identity file `ztc enroll` (and upstream's tools) write names this controller: the JWT's iss.
      expect(decodeJwt(jwt).iss).toBe('https://ctrl.example.com:8441');
      expect((await other.call('GET', `${CLIENT}/protocols`)).body.data.https.address).toBe('https://ctrl.example.com:8441');
      const stop = await registerController(other.opened.ctx);
      expect((await other.call('GET', `${MGMT}/controllers`, { token: root })).body.data[0].isOnline).toBe(true);
      await stop();
      const listed = (await other.call('GET', `${MGMT}/controllers`, { token: root })).body.data[0];
      // A clean stop is offline at once, not a heartbeat window later.
      expect(listed.isOnline).toBe(false);
      expect(listed.apiAddresses['edge-client'][0].url).toBe('https://ctrl.example.com:8441/edge/client/v1');
      expect(decodeJwt((await other.call('GET', `${CLIENT}/network-jwts`)).body.data[0].token).iss).toBe('https://ctrl.example.com:8441/');
    } finally {
      await other.close();
    }
  });
});
