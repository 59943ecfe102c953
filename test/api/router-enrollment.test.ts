// Router enrollment over TLS: the one-time token gives a client and a server certificate; extension
// with the current certificate replaces both (the old one stops working at once); re-enroll starts over.
import { X509Certificate } from 'node:crypto';
import tls from 'node:tls';
import forge from 'node-forge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKeyAndCsr } from '../../src/model/pki/csr.js';
import { ecCsr } from '../helpers/certs.js';
import { CLIENT, expectError, MGMT } from '../helpers/controller.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';
import { connectRouter } from '../peers/ctrl-router.js';

let c: TlsController;
let admin: string;
beforeAll(async () => {
  c = await startTlsController();
  admin = await c.login();
});
afterAll(() => c.close());

describe('edge router enrollment', () => {
  it('enrolls once with the token, extends with the current certificate, and re-enrolls', async () => {
    const made = await c.call('POST', `${MGMT}/edge-routers`, { token: admin, body: { name: 'edge-a', roleAttributes: ['public'] } });
    expect(made.status, made.text).toBe(201);
    const id = made.body.data.id;
    const before = (await c.call('GET', `${MGMT}/edge-routers/${id}`, { token: admin })).body.data;
    const client = newKeyAndCsr('edge-a');
    const server = newKeyAndCsr('edge-a.example', ['edge-a.example', '10.0.0.7']);

    expectError(await c.call('POST', `${CLIENT}/enroll/erott`, { body: { token: before.enrollmentToken, clientCsr: client.csrPem } }), 400, 'COULD_NOT_PROCESS_CSR');
    const enrolled = await c.call('POST', `${CLIENT}/enroll/erott`, { body: { token: before.enrollmentToken, clientCsr: client.csrPem, serverCsr: server.csrPem } });
    expect(enrolled.status, enrolled.text).toBe(200);
    const cert = new X509Certificate(enrolled.body.data.cert);
    const serverCert = new X509Certificate(enrolled.body.data.serverCert);
    expect(cert.subject).toContain(`CN=${id}`);
    expect(serverCert.subjectAltName).toContain('DNS:edge-a.example');
    expect(serverCert.subjectAltName).toContain('IP Address:10.0.0.7');
    expect(enrolled.body.data.ca).toContain('BEGIN CERTIFICATE');
    expectError(await c.call('POST', `${CLIENT}/enroll/erott`, { body: { token: before.enrollmentToken, clientCsr: client.csrPem, serverCsr: server.csrPem } }), 400, 'INVALID_ENROLLMENT_TOKEN');

    const after = (await c.call('GET', `${MGMT}/edge-routers/${id}`, { token: admin })).body.data;
    // Enrolled, not yet connected: no host name, listeners or sync status until it is (as upstream reads them from the connection).
    expect(after).toMatchObject({ isVerified: true, enrollmentJwt: null, enrollmentToken: null, isOnline: false, hostname: '', supportedProtocols: {}, syncStatus: 'SYNC_UNKNOWN' });
    expect(after.fingerprint).toMatch(/^[0-9a-f]{40}$/);

    // Extension: only with the router's current certificate; the old one is refused at once.
    const next = newKeyAndCsr('edge-a');
    const nextServer = newKeyAndCsr('edge-a.example', ['edge-a.example']);
    expectError(await c.call('POST', `${CLIENT}/enroll/extend/router`, { body: { certCsr: next.csrPem, serverCertCsr: nextServer.csrPem } }), 401);
    const extended = await c.call('POST', `${CLIENT}/enroll/extend/router`, { cert: enrolled.body.data.cert, key: client.keyPem, body: { certCsr: next.csrPem, serverCertCsr: nextServer.csrPem } });
    expect(extended.status, extended.text).toBe(200);
    expect(new X509Certificate(extended.body.data.cert).fingerprint).not.toBe(cert.fingerprint);
    expectError(await c.call('POST', `${CLIENT}/enroll/extend/router`, { cert: enrolled.body.data.cert, key: client.keyPem, body: { certCsr: next.csrPem, serverCertCsr: nextServer.csrPem } }), 401);
    const third = await c.call('POST', `${CLIENT}/enroll/extend/router`, { cert: extended.body.data.cert, key: next.keyPem, body: { certCsr: client.csrPem, serverCertCsr: server.csrPem } });
    expect(third.status, third.text).toBe(200);

    // Re-enroll: the certificate is forgotten and a new token is issued.
    expect((await c.call('POST', `${MGMT}/edge-routers/${id}/re-enroll`, { token: admin })).status).toBe(200);
    const reset = (await c.call('GET', `${MGMT}/edge-routers/${id}`, { token: admin })).body.data;
    expect(reset).toMatchObject({ isVerified: false });
    // Left out until it enrolls again, as upstream's edge router detail (omitempty).
    expect(reset).not.toHaveProperty('fingerprint');
    expect(reset.enrollmentToken).toMatch(/^[0-9a-f-]{36}$/);
    expect(reset.enrollmentToken).not.toBe(before.enrollmentToken);
    expectError(await c.call('POST', `${CLIENT}/enroll/extend/router`, { cert: third.body.data.cert, key: client.keyPem, body: { certCsr: next.csrPem, serverCertCsr: nextServer.csrPem } }), 401);
    expectError(await c.call('POST', `${MGMT}/edge-routers/nope/re-enroll`, { token: admin }), 404);
    // A refreshed router enrollment keeps its router as the JWT subject.
    const enr = (await c.call('GET', `${MGMT}/enrollments?filter=${encodeURIComponent(`edgeRouterId = "${id}"`)}`, { token: admin })).body.data[0];
    const refreshed = await c.call('POST', `${MGMT}/enrollments/${enr.id}/refresh`, { token: admin, body: { expiresAt: new Date(Date.now() + 3600_000).toISOString() } });
    expect(refreshed.status, refreshed.text).toBe(200);
    const jwt = (await c.call('GET', `${MGMT}/edge-routers/${id}`, { token: admin })).body.data.enrollmentJwt;
    expect(JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString()).sub).toBe(id);
  });

  it('hands the router each certificate followed by the intermediate that issued it, a chain to the root (as upstream)', async () => {
    const { id, token } = await newRouter('edge-chain');
    const client = newKeyAndCsr(id);
    const server = newKeyAndCsr('edge-chain.example', ['edge-chain.example']);
    const enrolled = await c.call('POST', `${CLIENT}/enroll/erott`, { body: { token, clientCsr: client.csrPem, serverCsr: server.csrPem } });
    expect(enrolled.status, enrolled.text).toBe(200);
    const { pki } = c.running.ctx;
    for (const pem of [enrolled.body.data.cert, enrolled.body.data.serverCert]) expectChain(pem, pki.intermediatePem, pki.rootPem);
    // The stored certificate and fingerprint are the leaf's.
    const stored = (await c.call('GET', `${MGMT}/edge-routers/${id}`, { token: admin })).body.data;
    expect(stored.fingerprint).toBe(new X509Certificate(enrolled.body.data.cert).fingerprint.replace(/:/g, '').toLowerCase());
    // Extension hands out chains too.
    const next = newKeyAndCsr(id);
    const extended = await c.call('POST', `${CLIENT}/enroll/extend/router`, { cert: enrolled.body.data.cert, key: client.keyPem, body: { certCsr: next.csrPem, serverCertCsr: newKeyAndCsr('edge-chain.example', ['edge-chain.example']).csrPem } });
    expect(extended.status, extended.text).toBe(200);
    for (const pem of [extended.body.data.cert, extended.body.data.serverCert]) expectChain(pem, pki.intermediatePem, pki.rootPem);
  });

  it('after `pki renew intermediate`, a client enrolled before and a router enrolled after trust each other over TLS', async () => {
    // An identity enrolled now, under the intermediate about to be replaced, with the CA store it fetched then.
    const made = await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'before-renewal', type: 'Device', isAdmin: false, enrollment: { ott: true } } });
    const ott = (await c.call('GET', `${MGMT}/identities/${made.body.data.id}`, { token: admin })).body.data.enrollment.ott.token;
    const csr = ecCsr('before-renewal');
    const identity = await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token: ott, clientCsr: csr.csrPem } });
    expect(identity.status, identity.text).toBe(200);
    const oldStore = await caStore();
    const oldIntermediate = c.running.ctx.pki.intermediatePem;
    expect(oldStore).toHaveLength(2);

    const renewed = await c.call('POST', `${MGMT}/pki/renew`, { token: admin, body: { target: 'intermediate' } });
    expect(renewed.status, renewed.text).toBe(200);
    const { pki } = c.running.ctx;
    expect(pki.intermediatePem).not.toBe(oldIntermediate);
    // The CA store now holds both intermediates and the root: what is handed to routers (and SDKs) from now on.
    const newStore = await caStore();
    expect(newStore.map(norm).sort()).toEqual([pki.intermediatePem, oldIntermediate, pki.rootPem].map(norm).sort());

    // A router enrolled after the renewal: leaves under the new intermediate, with it in each chain.
    const { id, token } = await newRouter('edge-after-renewal');
    const client = newKeyAndCsr(id);
    const server = newKeyAndCsr('localhost', ['localhost', '127.0.0.1']);
    const enrolled = await c.call('POST', `${CLIENT}/enroll/erott`, { body: { token, clientCsr: client.csrPem, serverCsr: server.csrPem } });
    expect(enrolled.status, enrolled.text).toBe(200);
    const r = enrolled.body.data as { cert: string; serverCert: string; ca: string };
    expectChain(r.serverCert, pki.intermediatePem, pki.rootPem);
    expect(splitPems(r.ca).map(norm).sort()).toEqual(newStore.map(norm).sort());

    // The router's edge listener as upstream's router serves it: its server chain, client certificates
    // checked against its CA bundle. The identity enrolled before, holding only the old CA store, connects.
    const serve = (certPem: string) => reachable({ key: server.keyPem, cert: certPem, ca: r.ca }, { cert: identity.body.data.cert, key: csr.keyPem, ca: oldStore.join('') });
    expect(await serve(r.serverCert)).toEqual({ clientTrustsRouter: true, routerTrustsClient: true });
    // What the leaf alone (as handed out before) gave: the client cannot reach the root.
    expect((await serve(splitPems(r.serverCert)[0])).clientTrustsRouter).toBe(false);

    // And the controller's control channel takes the router's chain, though its data-plane thread still
    // holds the CA bundle it started with (the new intermediate comes with the chain).
    const ctrl = await connectRouter(c.running.fabric!.ctrlPort!, { id, name: 'edge-after-renewal', cert: r.cert, key: client.keyPem });
    expect(ctrl.result?.headers.get(2)).toEqual(Buffer.from([1]));
    ctrl.p.close();
  });
});

async function newRouter(name: string): Promise<{ id: string; token: string }> {
  const made = await c.call('POST', `${MGMT}/edge-routers`, { token: admin, body: { name, roleAttributes: ['public'] } });
  expect(made.status, made.text).toBe(201);
  const id = made.body.data.id;
  return { id, token: (await c.call('GET', `${MGMT}/edge-routers/${id}`, { token: admin })).body.data.enrollmentToken };
}

const splitPems = (pem: string) => pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)!.map((p) => `${p}\n`);
const norm = (pem: string) => pem.replace(/\r/g, '').trim();

/** `pem` is a leaf then `intermediatePem`, which issued it; the intermediate is signed by the root. */
function expectChain(pem: string, intermediatePem: string, rootPem: string) {
  const certs = splitPems(pem);
  expect(certs).toHaveLength(2);
  const [leaf, mid] = certs.map((p) => new X509Certificate(p));
  const root = new X509Certificate(rootPem);
  expect(norm(certs[1])).toBe(norm(intermediatePem));
  expect(leaf.ca).toBe(false);
  expect(mid.ca).toBe(true);
  expect(leaf.checkIssued(mid) && leaf.verify(mid.publicKey)).toBe(true);
  expect(mid.checkIssued(root) && mid.verify(root.publicKey)).toBe(true);
}

/** The CA store as SDKs and routers fetch it: /.well-known/est/cacerts (base64 PKCS#7). */
async function caStore(): Promise<string[]> {
  const r = await c.call('GET', '/.well-known/est/cacerts');
  const p7 = forge.pkcs7.messageFromAsn1(forge.asn1.fromDer(forge.util.decode64(r.text))) as unknown as { certificates: forge.pki.Certificate[] };
  return p7.certificates.map((x) => forge.pki.certificateToPem(x).replace(/\r/g, ''));
}

/**
 * A TLS server standing for the router's edge listener and a client standing for the SDK: whether each
 * accepted the other. As upstream's Go router: it sends exactly the chain it holds (no `ca` here, which
 * would let OpenSSL complete the chain on its own) and trusts client certificates issued by any
 * certificate of its CA bundle (Go's pool makes each one an anchor), checked here by hand.
 */
async function reachable(router: { key: string; cert: string; ca: string }, client: { key: string; cert: string; ca: string }) {
  const server = tls.createServer({ key: router.key, cert: router.cert, requestCert: true, rejectUnauthorized: false });
  const routerSide = new Promise<boolean>((resolve) => {
    setTimeout(() => resolve(false), 3000).unref();
    server.once('secureConnection', (s: tls.TLSSocket) => {
      const presented: X509Certificate[] = [];
      for (let p = s.getPeerCertificate(true); p?.raw && !presented.some((x) => x.raw.equals(p.raw)); p = p.issuerCertificate) presented.push(new X509Certificate(p.raw));
      const anchors = splitPems(router.ca).map((pem) => new X509Certificate(pem));
      const by = (cert: X509Certificate, issuer: X509Certificate) => cert.checkIssued(issuer) && cert.verify(issuer.publicKey);
      const [leaf, ...rest] = presented;
      resolve(!!leaf && anchors.some((a) => by(leaf, a) || rest.some((mid) => mid.ca && by(leaf, mid) && by(mid, a))));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const port = (server.address() as { port: number }).port;
    const clientSide = await new Promise<boolean>((resolve) => {
      const s = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ...client, rejectUnauthorized: false }, () => {
        resolve(s.authorized);
        s.end();
      });
      s.on('error', () => resolve(false));
    });
    return { clientTrustsRouter: clientSide, routerTrustsClient: await routerSide };
  } finally {
    server.close();
  }
}
