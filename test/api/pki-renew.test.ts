// POST /pki/renew (our extension): the server certificate, the intermediate and the enrollment signer
// are replaced while the controller serves, over a real TLS socket, without breaking clients that
// trust the root, certificates issued before, or enrollment JWTs handed out before.
import { X509Certificate } from 'node:crypto';
import tls from 'node:tls';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ecCsr } from '../helpers/certs.js';
import { CLIENT, expectError, MGMT } from '../helpers/controller.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let c: TlsController;
let admin: string;
let rootPem: string;
beforeAll(async () => {
  c = await startTlsController();
  admin = await c.login();
  rootPem = c.running.ctx.pki.rootPem;
});
afterAll(() => c.close());

/** The certificate the server presents on a new connection, checked against the root alone. */
function served(): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port: c.running.ctx.config.port, ca: rootPem, servername: 'localhost' }, () => {
      const cert = new X509Certificate(s.getPeerCertificate().raw);
      s.end();
      resolve(cert);
    });
    s.on('error', reject);
  });
}

const renew = (target: string) => c.call('POST', `${MGMT}/pki/renew`, { token: admin, body: { target } });
const identityWithOtt = async (name: string) => {
  const r = await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name, type: 'Device', isAdmin: false, enrollment: { ott: true } } });
  return (await c.call('GET', `${MGMT}/identities/${r.body.data.id}`, { token: admin })).body.data.enrollment.ott as { token: string; jwt: string };
};
const enroll = async (token: string, name: string) => {
  const { csrPem, keyPem } = ecCsr(name);
  const r = await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token, clientCsr: csrPem } });
  expect(r.status, r.text).toBe(200);
  return { cert: r.body.data.cert as string, key: keyPem };
};
const certLogin = (cert: string, key: string) => c.call('POST', `${CLIENT}/authenticate?method=cert`, { cert, key, body: {} });

describe('pki renew', () => {
  it('serves a new server certificate at once, still trusted through the root', async () => {
    const before = await served();
    const r = await renew('server');
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.servedNow).toBe(true);
    expect(r.body.data.renewed.map((x: { kind: string }) => x.kind).sort()).toEqual(['server', 'signer']);
    expect(r.body.data.clients).toMatch(/trust the root.*keep working/);
    const after = await served();
    expect(after.fingerprint256).not.toBe(before.fingerprint256);
    // What the answer reports is what is served.
    expect(r.body.data.renewed[0].fingerprint).toBe(after.fingerprint256.toLowerCase());
    expect(Date.parse(after.validTo)).toBeGreaterThan(Date.now() + 300 * 86_400_000);
  });

  it('a new intermediate issues new certificates, and those of the old one still log in', async () => {
    const old = await enroll((await identityWithOtt('before-renew')).token, 'before-renew');
    const oldIssuer = new X509Certificate(c.running.ctx.pki.intermediatePem);
    const r = await renew('intermediate');
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.renewed.map((x: { kind: string }) => x.kind).sort()).toEqual(['intermediate', 'server', 'signer']);
    expect(r.body.data.clients).toMatch(/fetch it again/);
    const newIssuer = new X509Certificate(c.running.ctx.pki.intermediatePem);
    expect(newIssuer.fingerprint256).not.toBe(oldIssuer.fingerprint256);
    expect(newIssuer.checkIssued(new X509Certificate(rootPem))).toBe(true);
    // The server's new certificate chains to the root through the new intermediate.
    expect((await served()).checkIssued(newIssuer)).toBe(true);

    expect((await certLogin(old.cert, old.key)).status).toBe(200);
    const fresh = await enroll((await identityWithOtt('after-renew')).token, 'after-renew');
    expect(new X509Certificate(fresh.cert).checkIssued(newIssuer)).toBe(true);
    expect((await certLogin(fresh.cert, fresh.key)).status).toBe(200);
    // The CA store has both intermediates and the root.
    const bundle = c.running.ctx.pki.caBundlePem;
    expect(bundle).toContain(oldIssuer.toString().trim());
    expect(bundle).toContain(newIssuer.toString().trim());
  });

  it('a new enrollment signer (the server key): JWTs handed out before still verify and enroll, and are re-signed', async () => {
    const before = await identityWithOtt('jwt-before');
    const r = await renew('signer');
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.renewed.map((x: { kind: string }) => x.kind).sort()).toEqual(['server', 'signer']);
    const jwks = (await c.call('GET', `${CLIENT}/enroll/jwks`)).body;
    const keys = createLocalJWKSet(jwks);
    // The JWT handed out before still verifies against the published (retired) key.
    await jwtVerify(before.jwt, keys);
    const resigned = (await c.call('GET', `${MGMT}/enrollments?filter=${encodeURIComponent(`token = "${before.token}"`)}`, { token: admin })).body.data[0];
    expect(resigned.jwt).not.toBe(before.jwt);
    const after = await identityWithOtt('jwt-after');
    const verified = await jwtVerify(after.jwt, keys);
    expect(verified.protectedHeader.kid).toBe(jwks.keys[0].kid);
    expect((await jwtVerify(resigned.jwt, keys)).protectedHeader.kid).toBe(jwks.keys[0].kid);
    expect(verified.protectedHeader.kid).not.toBe(JSON.parse(Buffer.from(before.jwt.split('.')[0], 'base64url').toString()).kid);
    await enroll(before.token, 'jwt-before');
  });

  it('refuses an unknown target and non-admins', async () => {
    expectError(await renew('root'), 400);
    const id = (await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'plain', type: 'User', isAdmin: false } })).body.data.id;
    await c.call('POST', `${MGMT}/authenticators`, { token: admin, body: { identityId: id, method: 'updb', username: 'plain', password: 'password1' } });
    const plain = (await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'plain', password: 'password1' } })).body.data.token;
    expect((await c.call('POST', `${MGMT}/pki/renew`, { token: plain, body: { target: 'server' } })).status).toBe(401);
  });
});
