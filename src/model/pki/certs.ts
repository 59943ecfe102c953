// X.509 building blocks. node-forge assembles certificates; the signature itself is made by Node's
// native crypto (forge's pure-JS RSA would cost tens of milliseconds per certificate).
import { createPrivateKey, generateKeyPairSync, sign, X509Certificate } from 'node:crypto';
import forge from 'node-forge';
import { newId } from '../ids.js';
import { keyIdentifier } from './csr.js';

export interface KeyPair {
  privatePem: string;
  publicKey: forge.pki.rsa.PublicKey;
}

export function newRsaKey(bits = 2048): KeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: bits,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  return { privatePem: privateKey, publicKey: forge.pki.publicKeyFromPem(publicKey) as forge.pki.rsa.PublicKey };
}

export interface IssueOptions {
  commonName: string;
  organization?: string;
  /** The subject's key: a forge RSA key, or the SubjectPublicKeyInfo of a CSR (any key type). */
  publicKey: forge.pki.PublicKey | { spki: forge.asn1.Asn1 };
  /** The issuer's certificate; omitted for a self-signed root. */
  issuerPem?: string;
  issuerKeyPem: string;
  days: number;
  ca?: { pathLength?: number };
  /** DNS names and IP addresses for a server certificate. */
  sans?: string[];
  usage: 'ca' | 'server' | 'client' | 'server+client';
  /**
   * The time it is issued at (ms; default now): it is valid `days` from then. Given by the controller's
   * clock, which tests move forward; its start is never later than the real time, so clients that check
   * it against their own clock take it at once.
   */
  now?: number;
}

const IP = /^(\d{1,3}(\.\d{1,3}){3}|[0-9a-f:]*:[0-9a-f:]*)$/i;

const { asn1 } = forge;

/** Sign the certificate's TBS natively and assemble the DER; `spki` replaces forge's key when given. */
function signTbs(cert: forge.pki.Certificate, keyPem: string, spki?: forge.asn1.Asn1): string {
  cert.siginfo.algorithmOid = forge.pki.oids.sha256WithRSAEncryption;
  const tbs = (forge.pki as unknown as { getTBSCertificate(c: forge.pki.Certificate): forge.asn1.Asn1 }).getTBSCertificate(cert);
  // TBSCertificate: version, serial, signature, issuer, validity, subject, subjectPublicKeyInfo, ...
  if (spki) (tbs.value as forge.asn1.Asn1[])[6] = spki;
  const tbsDer = asn1.toDer(tbs).getBytes();
  const signature = sign('sha256', Buffer.from(tbsDer, 'binary'), createPrivateKey(keyPem)).toString('binary');
  const algorithm = asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
    asn1.create(asn1.Class.UNIVERSAL, asn1.Type.OID, false, asn1.oidToDer(forge.pki.oids.sha256WithRSAEncryption).getBytes()),
    asn1.create(asn1.Class.UNIVERSAL, asn1.Type.NULL, false, ''),
  ]);
  const certAsn1 = asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
    tbs,
    algorithm,
    asn1.create(asn1.Class.UNIVERSAL, asn1.Type.BITSTRING, false, String.fromCharCode(0) + signature),
  ]);
  const der = asn1.toDer(certAsn1).getBytes();
  return `-----BEGIN CERTIFICATE-----\n${forge.util.encode64(der, 64).replace(/\r\n/g, '\n')}\n-----END CERTIFICATE-----\n`;
}

export function issueCertificate(o: IssueOptions): string {
  const cert = forge.pki.createCertificate();
  const spki = 'spki' in o.publicKey ? o.publicKey.spki : undefined;
  // With a CSR's key, forge holds the issuer's key as a stand-in; signTbs swaps the real one in.
  cert.publicKey = spki ? forge.pki.certificateFromPem(o.issuerPem!).publicKey : (o.publicKey as forge.pki.PublicKey);
  // Positive 128-bit serial from the CSPRNG.
  cert.serialNumber = '01' + forge.util.bytesToHex(forge.random.getBytesSync(15));
  const now = o.now ?? Date.now();
  cert.validity.notBefore = new Date(Math.min(now, Date.now()) - 60_000);
  cert.validity.notAfter = new Date(now + o.days * 86_400_000);
  const subject = [{ name: 'commonName', value: o.commonName }, { name: 'organizationName', value: o.organization ?? 'ztc' }];
  cert.setSubject(subject);
  const issuer = o.issuerPem ? forge.pki.certificateFromPem(o.issuerPem) : undefined;
  cert.setIssuer(issuer ? issuer.subject.attributes : subject);
  // The subject's own key identifier, given as the extension's value: forge ignores a given
  // subjectKeyIdentifier and hashes cert.publicKey, which for a CSR is the issuer's stand-in key.
  const ownKeyId = spki
    ? keyIdentifier(spki)
    : forge.pki.getPublicKeyFingerprint(o.publicKey as forge.pki.PublicKey, { type: 'RSAPublicKey', md: forge.md.sha1.create(), encoding: 'binary' });
  const exts: Record<string, unknown>[] = [
    { name: 'subjectKeyIdentifier', value: asn1.create(asn1.Class.UNIVERSAL, asn1.Type.OCTETSTRING, false, ownKeyId) },
  ];
  if (issuer) {
    const ski = issuer.getExtension('subjectKeyIdentifier') as { subjectKeyIdentifier?: string } | null;
    if (ski?.subjectKeyIdentifier) exts.push({ name: 'authorityKeyIdentifier', keyIdentifier: forge.util.hexToBytes(ski.subjectKeyIdentifier) });
  }
  if (o.usage === 'ca') {
    exts.push({ name: 'basicConstraints', cA: true, critical: true, ...(o.ca?.pathLength !== undefined ? { pathLenConstraint: o.ca.pathLength } : {}) });
    exts.push({ name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true });
  } else {
    exts.push({ name: 'basicConstraints', cA: false, critical: true });
    exts.push({ name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true });
    exts.push({ name: 'extKeyUsage', serverAuth: o.usage !== 'client', clientAuth: o.usage !== 'server' });
  }
  if (o.sans?.length) {
    exts.push({ name: 'subjectAltName', altNames: o.sans.map((n) => (IP.test(n) ? { type: 7, ip: n } : { type: 2, value: n })) });
  }
  cert.setExtensions(exts);
  return signTbs(cert, o.issuerKeyPem, spki);
}

/** Upstream's fingerprint form: SHA-1 of the DER, lower-case hex without separators. */
export function fingerprintOf(pem: string): string {
  return new X509Certificate(pem).fingerprint.replace(/:/g, '').toLowerCase();
}

export { sha256Fingerprint } from './fingerprint.js';

/** Split a PEM bundle into its certificates. */
export function splitPem(bundle: string): string[] {
  return bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)?.map((p) => p + '\n') ?? [];
}

/**
 * Degenerate PKCS#7 SignedData holding certificates only (EST /cacerts, RFC 7030), base64 DER in lines
 * of 64 characters, each ended by a newline, as upstream writes it. The C SDK decodes it with OpenSSL's
 * BIO base64 filter, which reads nothing from a line longer than its buffer (one unbroken line crashed
 * the SDK 1.18 at every enrollment and login).
 */
export function pkcs7Base64(pems: string[]): string {
  const p7 = forge.pkcs7.createSignedData();
  for (const pem of pems) p7.addCertificate(forge.pki.certificateFromPem(pem));
  const b64 = Buffer.from(forge.asn1.toDer(p7.toAsn1()).getBytes(), 'binary').toString('base64');
  return b64.replace(/.{1,64}/g, '$&\n');
}

export const randomCommonName = () => newId(12);
