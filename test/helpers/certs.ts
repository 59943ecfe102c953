// Real X.509 fixtures made in the test: keys, CSRs (EC through Node's crypto, RSA through node-forge),
// and a third-party CA that issues certificates.
import forge from 'node-forge';
import { newKeyAndCsr } from '../../src/model/pki/csr.js';

export function selfSignedCert(cn: string, o: { ca?: boolean; bits?: number } = {}) {
  const keys = forge.pki.rsa.generateKeyPair(o.bits ?? 1024);
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = '01' + forge.util.bytesToHex(forge.random.getBytesSync(8));
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 86_400_000);
  cert.setSubject([{ name: 'commonName', value: cn }]);
  cert.setIssuer([{ name: 'commonName', value: cn }]);
  cert.setExtensions([{ name: 'basicConstraints', cA: !!o.ca }]);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: forge.pki.privateKeyToPem(keys.privateKey) };
}

/** An EC P-256 key and a PKCS#10 request for it, as SDKs (and `ztc enroll`) make them. */
export const ecCsr = (cn = 'client') => newKeyAndCsr(cn);

/** An RSA key and CSR made by node-forge. */
export function rsaCsr(cn = 'client') {
  const keys = forge.pki.rsa.generateKeyPair(1024);
  const req = forge.pki.createCertificationRequest();
  req.publicKey = keys.publicKey;
  req.setSubject([{ name: 'commonName', value: cn }]);
  req.sign(keys.privateKey, forge.md.sha256.create());
  return { csrPem: forge.pki.certificationRequestToPem(req), keyPem: forge.pki.privateKeyToPem(keys.privateKey) };
}

/** A third-party CA (as a company PKI would be) that can issue client certificates. */
export class TestCa {
  readonly keys = forge.pki.rsa.generateKeyPair(1024);
  readonly cert: forge.pki.Certificate;
  constructor(readonly name: string) {
    const c = forge.pki.createCertificate();
    c.publicKey = this.keys.publicKey;
    c.serialNumber = '01' + forge.util.bytesToHex(forge.random.getBytesSync(8));
    c.validity.notBefore = new Date(Date.now() - 60_000);
    c.validity.notAfter = new Date(Date.now() + 10 * 86_400_000);
    c.setSubject([{ name: 'commonName', value: name }]);
    c.setIssuer([{ name: 'commonName', value: name }]);
    c.setExtensions([{ name: 'basicConstraints', cA: true, critical: true }, { name: 'keyUsage', keyCertSign: true, digitalSignature: true, critical: true }, { name: 'subjectKeyIdentifier' }]);
    c.sign(this.keys.privateKey, forge.md.sha256.create());
    this.cert = c;
  }
  get pem() {
    return forge.pki.certificateToPem(this.cert);
  }
  /** A client certificate with its key; `o`: SAN URIs (SPIFFE ids) and an OU in its subject. */
  issue(cn: string, o: { uris?: string[]; ou?: string } = {}) {
    const keys = forge.pki.rsa.generateKeyPair(1024);
    const c = forge.pki.createCertificate();
    c.publicKey = keys.publicKey;
    c.serialNumber = '02' + forge.util.bytesToHex(forge.random.getBytesSync(8));
    c.validity.notBefore = new Date(Date.now() - 60_000);
    c.validity.notAfter = new Date(Date.now() + 5 * 86_400_000);
    c.setSubject([...(o.ou ? [{ name: 'organizationalUnitName', value: o.ou }] : []), { name: 'commonName', value: cn }]);
    c.setIssuer(this.cert.subject.attributes);
    c.setExtensions([
      { name: 'basicConstraints', cA: false }, { name: 'extKeyUsage', clientAuth: true },
      ...(o.uris?.length ? [{ name: 'subjectAltName', altNames: o.uris.map((value) => ({ type: 6, value })) }] : []),
    ]);
    c.sign(this.keys.privateKey, forge.md.sha256.create());
    return { certPem: forge.pki.certificateToPem(c), keyPem: forge.pki.privateKeyToPem(keys.privateKey) };
  }
}
