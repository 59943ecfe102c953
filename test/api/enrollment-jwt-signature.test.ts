// Every kind of enrollment JWT verifies with the public key of the certificate the controller presents on
// its TLS port, with alg matching that key and kid = SHA-1 of the certificate: how the C SDK, the Go SDK
// and upstream's router check it (they never fetch /enroll/jwks). Read off a real TLS handshake.
import { createHash, X509Certificate } from 'node:crypto';
import tls from 'node:tls';
import { decodeProtectedHeader, importX509, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestCa } from '../helpers/certs.js';
import { MGMT } from '../helpers/controller.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let c: TlsController;
let admin: string;
beforeAll(async () => {
  c = await startTlsController();
  admin = await c.login();
});
afterAll(() => c.close());

/** The leaf certificate of a TLS handshake with the controller, as an SDK sees it before enrolling. */
function handshakeCert(): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port: c.running.ctx.config.port, rejectUnauthorized: false, servername: 'localhost' }, () => {
      const cert = new X509Certificate(s.getPeerCertificate().raw);
      s.end();
      resolve(cert);
    });
    s.on('error', reject);
  });
}

async function expectSignedByTlsCert(jwt: string, em: string) {
  const cert = await handshakeCert();
  const header = decodeProtectedHeader(jwt);
  expect(header.alg).toBe('RS256');
  expect(header.kid).toBe(createHash('sha1').update(cert.raw).digest('hex'));
  const key = await importX509(cert.toString(), 'RS256');
  const { payload } = await jwtVerify(jwt, key, { currentDate: c.clock.now() });
  expect(payload.em).toBe(em);
}

const get = async (path: string) => (await c.call('GET', `${MGMT}${path}`, { token: admin })).body.data;

describe('enrollment JWTs are signed with the TLS server certificate key', () => {
  it('ott, updb and ottca', async () => {
    const ca = new TestCa('JwtCA');
    const caR = await c.call('POST', `${MGMT}/cas`, { token: admin, body: { name: ca.name, certPem: ca.pem, isAuthEnabled: true, isAutoCaEnrollmentEnabled: false, isOttCaEnrollmentEnabled: true, identityRoles: [] } });
    const caId = caR.body.data.id;
    const token = (await get(`/cas/${caId}`)).verificationToken;
    expect((await c.call('POST', `${MGMT}/cas/${caId}/verify`, { token: admin, body: ca.issue(token).certPem, contentType: 'text/plain' })).status).toBe(200);
    const ott = await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'jwt-ott', type: 'Device', isAdmin: false, enrollment: { ott: true } } });
    const updb = await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'jwt-updb', type: 'User', isAdmin: false, enrollment: { updb: 'jwt-updb' } } });
    const ottca = await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'jwt-ottca', type: 'Device', isAdmin: false, enrollment: { ottca: caId } } });
    await expectSignedByTlsCert((await get(`/identities/${ott.body.data.id}`)).enrollment.ott.jwt, 'ott');
    await expectSignedByTlsCert((await get(`/identities/${updb.body.data.id}`)).enrollment.updb.jwt, 'updb');
    await expectSignedByTlsCert((await get(`/identities/${ottca.body.data.id}`)).enrollment.ottca.jwt, 'ottca');
  });

  it('edge router (erott) and transit router (trott, as upstream names it)', async () => {
    const er = await c.call('POST', `${MGMT}/edge-routers`, { token: admin, body: { name: 'jwt-er' } });
    const tr = await c.call('POST', `${MGMT}/transit-routers`, { token: admin, body: { name: 'jwt-tr' } });
    await expectSignedByTlsCert((await get(`/edge-routers/${er.body.data.id}`)).enrollmentJwt, 'erott');
    const trJwt = (await get(`/transit-routers/${tr.body.data.id}`)).enrollmentJwt;
    await expectSignedByTlsCert(trJwt, 'trott');
    // And it enrolls as `ziti router enroll` asks: POST /enroll?method=trott with both CSRs.
    const { newKeyAndCsr } = await import('../../src/model/pki/csr.js');
    const token = JSON.parse(Buffer.from(trJwt.split('.')[1], 'base64url').toString()).jti;
    const enrolled = await c.call('POST', `/edge/client/v1/enroll?method=trott&token=${token}`, { body: { certCsr: newKeyAndCsr(tr.body.data.id).csrPem, serverCertCsr: newKeyAndCsr(tr.body.data.id, ['localhost']).csrPem } });
    expect(enrolled.status, enrolled.text).toBe(200);
    expect((await get(`/transit-routers/${tr.body.data.id}`)).isVerified).toBe(true);
  });

  it('renewing the server certificate re-signs outstanding JWTs with the new key, and says so', async () => {
    const ott = await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'jwt-renew', type: 'Device', isAdmin: false, enrollment: { ott: true } } });
    const before = (await get(`/identities/${ott.body.data.id}`)).enrollment.ott;
    const r = await c.call('POST', `${MGMT}/pki/renew`, { token: admin, body: { target: 'server' } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.clients).toMatch(/re-signed with the new key/);
    const after = (await get(`/identities/${ott.body.data.id}`)).enrollment.ott;
    expect(after.token).toBe(before.token);
    expect(after.jwt).not.toBe(before.jwt);
    await expectSignedByTlsCert(after.jwt, 'ott');
  });
});
