// POST /authenticators/{id}/request-extend (2.x management API): an administrator asks an identity to
// extend its certificate (and to make a new key with rollKeys). The authenticator shows the request, the
// identity's certificate API sessions say isCertExtendRequested / isCertKeyRollRequested, and the SDK's
// extension (extend, then extend-verify) clears it, noting whether the key changed (lastExtendRolledKeys).
import forge from 'node-forge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, expectError, MGMT } from '../helpers/controller.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let c: TlsController;
let admin: string;
beforeAll(async () => {
  c = await startTlsController();
  admin = await c.login();
});
afterAll(() => c.close());

const mg = (method: string, path: string, body?: unknown) => c.call(method, `${MGMT}${path}`, { token: admin, body });

/** An RSA key, and CSRs for it (the same key each time). */
function keyPair() {
  const keys = forge.pki.rsa.generateKeyPair(1024);
  const csr = (cn: string) => {
    const req = forge.pki.createCertificationRequest();
    req.publicKey = keys.publicKey;
    req.setSubject([{ name: 'commonName', value: cn }]);
    req.sign(keys.privateKey, forge.md.sha256.create());
    return forge.pki.certificationRequestToPem(req);
  };
  return { csr, keyPem: forge.pki.privateKeyToPem(keys.privateKey) };
}

async function enrolled(name: string) {
  const made = await mg('POST', '/identities', { name, type: 'Device', isAdmin: false, enrollment: { ott: true } });
  const id = made.body.data.id as string;
  const token = (await mg('GET', `/identities/${id}`)).body.data.enrollment.ott.token;
  const key = keyPair();
  const r = await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token, clientCsr: key.csr(name) } });
  expect(r.status, r.text).toBe(200);
  return { id, cert: r.body.data.cert as string, key };
}

const certLogin = async (cert: string, key: string) => {
  const r = await c.call('POST', `${CLIENT}/authenticate?method=cert`, { cert, key, body: {} });
  expect(r.status, r.text).toBe(200);
  return r.body.data;
};

describe('POST /authenticators/{id}/request-extend', () => {
  it('marks the certificate for extension and key roll; the SDK\'s sessions say so; extend-verify clears it', async () => {
    const e = await enrolled('extend-asked');
    const login = await certLogin(e.cert, e.key.keyPem);
    expect(login).toMatchObject({ isCertExtendable: true, isCertExtendRequested: false, isCertKeyRollRequested: false });
    expect(typeof login.improperClientCertChain).toBe('boolean');
    const authId = login.authenticatorId as string;
    const before = (await mg('GET', `/authenticators/${authId}`)).body.data;
    expect(before).toMatchObject({ method: 'cert', isExtendRequested: false, isKeyRollRequested: false, lastExtendRolledKeys: false, lastAuthResolvedToRoot: true });
    expect(before.extendRequestedAt).toBeUndefined();
    // The chain resolved to the root, so the session's chain was not improper.
    expect(login.improperClientCertChain).toBe(false);

    const asked = await mg('POST', `/authenticators/${authId}/request-extend`, { rollKeys: true });
    expect(asked.status, asked.text).toBe(200);
    const after = (await mg('GET', `/authenticators/${authId}`)).body.data;
    expect(after).toMatchObject({ isExtendRequested: true, isKeyRollRequested: true });
    expect(Math.abs(Date.parse(after.extendRequestedAt) - Date.now())).toBeLessThan(60_000);
    // Upstream's filter symbols.
    const listed = await mg('GET', `/authenticators?filter=${encodeURIComponent('isExtendRequested = true and isKeyRollRequested = true')}`);
    expect(listed.body.data.map((a: { id: string }) => a.id)).toEqual([authId]);
    // The session that logged in with it (it exists already) now says so, on both APIs and to the admin.
    for (const base of [CLIENT, MGMT]) {
      const cur = (await c.call('GET', `${base}/current-api-session`, { token: login.token })).body.data;
      expect(cur, base).toMatchObject({ isCertExtendRequested: true, isCertKeyRollRequested: true, improperClientCertChain: false });
    }
    expect((await mg('GET', `/api-sessions/${login.id}`)).body.data).toMatchObject({ isCertExtendRequested: true, isCertKeyRollRequested: true });
    // A password session of an admin has no certificate: never asked to extend.
    expect((await c.call('GET', `${CLIENT}/current-api-session`, { token: admin })).body.data).toMatchObject({ isCertExtendRequested: false, isCertKeyRollRequested: false, improperClientCertChain: false });

    // The SDK extends with a new key, and verifies.
    const next = keyPair();
    const ext = await c.call('POST', `${CLIENT}/current-identity/authenticators/${authId}/extend`, { token: login.token, cert: e.cert, key: e.key.keyPem, body: { clientCertCsr: next.csr('extend-asked') } });
    expect(ext.status, ext.text).toBe(200);
    expect((await mg('GET', `/authenticators/${authId}`)).body.data.isExtendRequested).toBe(true);
    const verified = await c.call('POST', `${CLIENT}/current-identity/authenticators/${authId}/extend-verify`, { token: login.token, body: { clientCert: ext.body.data.clientCert } });
    expect(verified.status, verified.text).toBe(200);
    const done = (await mg('GET', `/authenticators/${authId}`)).body.data;
    expect(done).toMatchObject({ isExtendRequested: false, isKeyRollRequested: false, lastExtendRolledKeys: true });
    expect((await c.call('GET', `${CLIENT}/current-api-session`, { token: login.token })).body.data).toMatchObject({ isCertExtendRequested: false, isCertKeyRollRequested: false });

    // Extended again with the same key: lastExtendRolledKeys goes back to false.
    const again = await certLogin(ext.body.data.clientCert, next.keyPem);
    await mg('POST', `/authenticators/${authId}/request-extend`, {});
    expect((await mg('GET', `/authenticators/${authId}`)).body.data).toMatchObject({ isExtendRequested: true, isKeyRollRequested: false });
    const same = await c.call('POST', `${CLIENT}/current-identity/authenticators/${authId}/extend`, { token: again.token, cert: ext.body.data.clientCert, key: next.keyPem, body: { clientCertCsr: next.csr('extend-asked') } });
    expect(same.status, same.text).toBe(200);
    expect((await c.call('POST', `${CLIENT}/current-identity/authenticators/${authId}/extend-verify`, { token: again.token, body: { clientCert: same.body.data.clientCert } })).status).toBe(200);
    expect((await mg('GET', `/authenticators/${authId}`)).body.data).toMatchObject({ isExtendRequested: false, lastExtendRolledKeys: false });
  });

  it('is for certificate authenticators, for admins, and recorded', async () => {
    const user = (await mg('POST', '/identities', { name: 'extend-pw', type: 'User', isAdmin: false })).body.data.id as string;
    const updb = (await mg('POST', '/authenticators', { identityId: user, method: 'updb', username: 'extend-pw', password: 'password1' })).body.data.id as string;
    expectError(await mg('POST', `/authenticators/${updb}/request-extend`, { rollKeys: false }), 401, 'UNAUTHORIZED');
    expectError(await mg('POST', '/authenticators/nope/request-extend', { rollKeys: false }), 404);
    const e = await enrolled('extend-audit');
    const authId = (await certLogin(e.cert, e.key.keyPem)).authenticatorId as string;
    const userToken = (await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'extend-pw', password: 'password1' } })).body.data.token as string;
    expectError(await c.call('POST', `${MGMT}/authenticators/${authId}/request-extend`, { token: userToken, body: {} }), 401);
    // The body is required, as upstream's document has it.
    expectError(await mg('POST', `/authenticators/${authId}/request-extend`), 400);
    expect((await mg('POST', `/authenticators/${authId}/request-extend`, {})).status).toBe(200);
    const audit = (await mg('GET', `/audit-events?types=entityChange&entity=${authId}&limit=10`)).body.data as { action?: string; eventType: string }[];
    expect(audit.some((a) => a.eventType === 'updated' && JSON.stringify(a).includes('request-extend'))).toBe(true);
    const doc = JSON.parse((await c.call('GET', `${MGMT}/specs/edge-management/spec`)).body.data);
    expect(doc.paths[`${MGMT}/authenticators/{id}/request-extend`].post.operationId).toBe('requestExtendAuthenticator');
  });
});
