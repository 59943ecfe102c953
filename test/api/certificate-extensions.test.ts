// The key identifiers of the certificates ztc issues (issue 42b): each certificate's
// subjectKeyIdentifier is the SHA-1 of its own subjectPublicKey bits (RFC 5280 4.2.1.2, method 1, as
// Go's x509 computes it), and its authorityKeyIdentifier is its issuer's subjectKeyIdentifier. A CSR's
// certificate used to carry the intermediate's SKI, so chain builders that match AKI to SKI were misled.
// Read with `openssl x509`, as a client's TLS stack reads them.
import { createHash, X509Certificate } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import forge from 'node-forge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKeyAndCsr } from '../../src/model/pki/csr.js';
import { ecCsr, rsaCsr } from '../helpers/certs.js';
import { CLIENT, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
});
afterAll(() => c.close());

/** The first certificate of a PEM text (an answer may carry its chain after it). */
const firstPem = (text: string) => /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/.exec(text)![0];

/** Subject and authority key identifiers as `openssl x509` prints them, upper-case hex with colons. */
function keyIds(pem: string): { ski?: string; aki?: string } {
  const text = execFileSync('openssl', ['x509', '-noout', '-text'], { input: firstPem(pem) }).toString();
  const after = (label: string) => new RegExp(`${label}:\\s*\\n\\s*(?:keyid:)?([0-9A-F:]+)`).exec(text)?.[1];
  return { ski: after('X509v3 Subject Key Identifier'), aki: after('X509v3 Authority Key Identifier') };
}

/** SHA-1 of the certificate's subjectPublicKey BIT STRING contents, in openssl's notation. */
function ownKeyId(pem: string): string {
  const spki = new X509Certificate(firstPem(pem)).publicKey.export({ type: 'spki', format: 'der' });
  const bits = (forge.asn1.fromDer(spki.toString('binary'), { decodeBitStrings: false } as never).value as forge.asn1.Asn1[])[1].value as string;
  const hex = createHash('sha1').update(Buffer.from(bits.slice(1), 'binary')).digest('hex').toUpperCase();
  return hex.match(/../g)!.join(':');
}

function expectIssuedBy(pem: string, issuerPem: string, what: string) {
  const { ski, aki } = keyIds(pem);
  const issuer = keyIds(issuerPem);
  expect(ski, `${what}: its SKI is its own key's`).toBe(ownKeyId(pem));
  expect(ski, `${what}: its SKI is not its issuer's`).not.toBe(issuer.ski);
  expect(aki, `${what}: its AKI is its issuer's SKI`).toBe(issuer.ski);
  expect(new X509Certificate(firstPem(pem)).checkIssued(new X509Certificate(issuerPem)), `${what}: OpenSSL finds its issuer`).toBe(true);
}

async function enrolledIdentity(name: string, csrPem: string): Promise<string> {
  const made = await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name, type: 'Device', isAdmin: false, enrollment: { ott: true } } });
  expect(made.status, made.text).toBe(201);
  const token = (await c.call('GET', `${MGMT}/identities/${made.body.data.id}`, { token: admin })).body.data.enrollment.ott.token;
  const r = await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token, clientCsr: csrPem } });
  expect(r.status, r.text).toBe(200);
  return r.body.data.cert;
}

describe('key identifiers of issued certificates', () => {
  it('the CA certificates: the root names its own key and no authority, the intermediate names the root', () => {
    const { rootPem, intermediatePem, serverPem } = c.opened.ctx.pki;
    const root = keyIds(rootPem);
    expect(root.ski).toBe(ownKeyId(rootPem));
    expect(root.aki).toBeUndefined();
    expectIssuedBy(intermediatePem, rootPem, 'intermediate');
    expectIssuedBy(serverPem, intermediatePem, 'server certificate');
  });

  it('an identity enrolled by ott with an EC or an RSA CSR', async () => {
    const intermediate = c.opened.ctx.pki.intermediatePem;
    expectIssuedBy(await enrolledIdentity('ski-ec', ecCsr('ski-ec').csrPem), intermediate, 'EC client certificate');
    expectIssuedBy(await enrolledIdentity('ski-rsa', rsaCsr('ski-rsa').csrPem), intermediate, 'RSA client certificate');
  });

  it("an edge router's client and server certificates", async () => {
    const made = await c.call('POST', `${MGMT}/edge-routers`, { token: admin, body: { name: 'ski-router' } });
    expect(made.status, made.text).toBe(201);
    const token = (await c.call('GET', `${MGMT}/edge-routers/${made.body.data.id}`, { token: admin })).body.data.enrollmentToken;
    const r = await c.call('POST', `${CLIENT}/enroll/erott`, {
      body: { token, clientCsr: newKeyAndCsr('ski-router').csrPem, serverCsr: newKeyAndCsr('ski.example', ['ski.example']).csrPem },
    });
    expect(r.status, r.text).toBe(200);
    const intermediate = c.opened.ctx.pki.intermediatePem;
    expectIssuedBy(r.body.data.cert, intermediate, 'router client certificate');
    expectIssuedBy(r.body.data.serverCert, intermediate, 'router server certificate');
    expect(keyIds(r.body.data.cert).ski).not.toBe(keyIds(r.body.data.serverCert).ski);
  });

  it("an API session's certificate", async () => {
    const r = await c.call('POST', `${CLIENT}/current-api-session/certificates`, { token: admin, body: { csr: ecCsr('session').csrPem } });
    expect(r.status, r.text).toBe(201);
    expectIssuedBy(r.body.data.certificate, c.opened.ctx.pki.intermediatePem, 'API session certificate');
  });
});
