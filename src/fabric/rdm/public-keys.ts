// The keys a 2.x router is given (ctrl-channel-2.x.md section 2.2): without one for client certificates
// its edge listener refuses every SDK in the TLS handshake ("no trusted CA certificates available in
// router data model"), and without the one whose kid a service session JWT names it refuses the Bind or
// Dial. As upstream: the controller's server certificate (its key signs the JWTs) for both uses, every
// controller's certificate of a shared store likewise, the root CA for client certificates, and each
// verified third-party CA. Also, for client certificates, our intermediates (upstream's router adds
// its own CA bundle as intermediates; as anchors too they cost nothing), and for JWTs the keys of
// server certificates replaced but still published, ours and the other controllers' (model/pki/
// renewal.ts: until nothing they signed can be valid, upstream bug #4116; a renewal sends routers the
// new key as a change set before it signs, and the withdrawal of the old one as its delete).
import { createHash, createPublicKey, X509Certificate } from 'node:crypto';
import type { Pki } from '../../model/pki/pki.js';
import { KeyFormat, KeyUsage } from './schemas.js';

export interface PublicKeyModel {
  data: Buffer;
  kid: string;
  usages: number[];
  format: number;
}

const BOTH = [KeyUsage.JWTValidation, KeyUsage.ClientX509CertValidation];
const CLIENT = [KeyUsage.ClientX509CertValidation];

/** Every certificate of a PEM bundle, as DER. */
function ders(pem: string): Buffer[] {
  const out: Buffer[] = [];
  for (const m of pem.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)) {
    try {
      out.push(Buffer.from(new X509Certificate(m[0]).raw));
    } catch {
      // Not a certificate Node reads: a router would not either.
    }
  }
  return out;
}

const certKey = (der: Buffer, usages: number[]): PublicKeyModel => ({ data: der, kid: createHash('sha1').update(der).digest('hex'), usages, format: KeyFormat.X509CertDer });

/** The keys, one per kid (a certificate named twice keeps the widest usage), in a stable order. */
export function publicKeys(pki: Pki, o: { caPems: string[]; controllerPems: string[]; controllerRetiredPems?: string[] }): PublicKeyModel[] {
  const out = new Map<string, PublicKeyModel>();
  const add = (k: PublicKeyModel) => {
    const had = out.get(k.kid);
    if (had) had.usages = [...new Set([...had.usages, ...k.usages])].sort();
    else out.set(k.kid, k);
  };
  // Only the leaf of a controller's PEM: its key is what signs.
  for (const pem of [pki.serverPem, ...o.controllerPems]) {
    const [leaf] = ders(pem);
    if (leaf) add(certKey(leaf, BOTH));
  }
  for (const pem of [pki.rootPem, pki.intermediatePem, ...pki.retiredIntermediatePems, ...o.caPems]) for (const der of ders(pem)) add(certKey(der, CLIENT));
  // Replaced server keys (their kid is their certificate's): JWTs they signed still verify.
  for (const k of pki.signingKeys.slice(1)) {
    if (out.has(k.kid) || !/^[0-9a-f]{40}$/.test(k.kid)) continue;
    add({ data: createPublicKey(k.key).export({ type: 'spki', format: 'der' }), kid: k.kid, usages: [KeyUsage.JWTValidation], format: KeyFormat.PKIXPublicKey });
  }
  // The other controllers' replaced certificates (and ours, as our row has them: already in, by kid).
  for (const pem of o.controllerRetiredPems ?? []) {
    const [leaf] = ders(pem);
    if (leaf) add(certKey(leaf, [KeyUsage.JWTValidation]));
  }
  return [...out.values()];
}
