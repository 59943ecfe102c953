// PKCS#10 requests of any key type (RSA, EC, Ed25519). node-forge's CSR object only knows RSA, so the
// ASN.1 is read with forge and the request's signature is checked with Node's native crypto.
import { createHash, createPublicKey, createSign, generateKeyPairSync, verify, type KeyObject } from 'node:crypto';
import forge from 'node-forge';
import { ApiError } from '../errors.js';

export interface ParsedCsr {
  /** SubjectPublicKeyInfo, kept as ASN.1 so it can be copied into the certificate unchanged. */
  spki: forge.asn1.Asn1;
  publicKey: KeyObject;
  commonName?: string;
  /** DNS names and IP addresses of the request's subjectAltName extension, if it asks for one. */
  sans: string[];
}

const SIGNATURE_HASH: Record<string, string | null> = {
  '1.2.840.113549.1.1.5': 'sha1',
  '1.2.840.113549.1.1.11': 'sha256',
  '1.2.840.113549.1.1.12': 'sha384',
  '1.2.840.113549.1.1.13': 'sha512',
  '1.2.840.10045.4.3.2': 'sha256',
  '1.2.840.10045.4.3.3': 'sha384',
  '1.2.840.10045.4.3.4': 'sha512',
  '1.3.101.112': null,
};

const bad = (why: string) => new ApiError(400, 'COULD_NOT_PROCESS_CSR', `The certificate signing request could not be used: ${why}`);

/** DER bytes of a CSR given as PEM (either header) or as bare base64. */
function csrDer(text: string): string {
  const pem = /-----BEGIN (NEW )?CERTIFICATE REQUEST-----([\s\S]+?)-----END (NEW )?CERTIFICATE REQUEST-----/.exec(text);
  const b64 = (pem ? pem[2] : text).replace(/\s+/g, '');
  if (!b64 || !/^[A-Za-z0-9+/]+=*$/.test(b64)) throw bad('expected a PEM "CERTIFICATE REQUEST"');
  return forge.util.decode64(b64);
}

export function parseCsr(text: string): ParsedCsr {
  if (typeof text !== 'string' || !text.trim()) throw bad('the request is empty');
  let root: forge.asn1.Asn1;
  try {
    root = forge.asn1.fromDer(csrDer(text), { decodeBitStrings: false } as never);
  } catch (e) {
    if (e instanceof ApiError) throw e;
    throw bad('it is not DER-encoded ASN.1');
  }
  const parts = root.value as forge.asn1.Asn1[];
  const info = parts?.[0];
  const infoParts = info?.value as forge.asn1.Asn1[] | undefined;
  if (!Array.isArray(parts) || parts.length !== 3 || !Array.isArray(infoParts) || infoParts.length < 3) throw bad('it is not a PKCS#10 request');
  const spki = infoParts[2];
  const algOid = forge.asn1.derToOid(((parts[1].value as forge.asn1.Asn1[])[0].value as string) ?? '');
  if (!(algOid in SIGNATURE_HASH)) throw bad(`its signature algorithm ${algOid} is not supported (use RSA, ECDSA or Ed25519 with SHA-2)`);
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey({ key: Buffer.from(forge.asn1.toDer(spki).getBytes(), 'binary'), format: 'der', type: 'spki' });
  } catch {
    throw bad('its public key cannot be read');
  }
  const signature = Buffer.from((parts[2].value as string).slice(1), 'binary');
  const signed = Buffer.from(forge.asn1.toDer(info).getBytes(), 'binary');
  let ok = false;
  try {
    ok = verify(SIGNATURE_HASH[algOid], signed, { key: publicKey, dsaEncoding: 'der' }, signature);
  } catch {
    ok = false;
  }
  if (!ok) throw bad('its signature does not match its public key');
  return { spki, publicKey, commonName: commonNameOf(infoParts[1]), sans: requestedSans(infoParts[3]) };
}

const EXTENSION_REQUEST = '1.2.840.113549.1.9.14';
const SUBJECT_ALT_NAME = '2.5.29.17';

/** The subjectAltName a CSR asks for, from its extensionRequest attribute: dNSName and iPAddress entries. */
function requestedSans(attributes: forge.asn1.Asn1 | undefined): string[] {
  const out: string[] = [];
  try {
    for (const attr of (attributes?.value as forge.asn1.Asn1[]) ?? []) {
      const [oid, values] = attr.value as forge.asn1.Asn1[];
      if (forge.asn1.derToOid(oid.value as string) !== EXTENSION_REQUEST) continue;
      for (const exts of (values.value as forge.asn1.Asn1[]) ?? []) {
        for (const ext of (exts.value as forge.asn1.Asn1[]) ?? []) {
          const parts = ext.value as forge.asn1.Asn1[];
          if (forge.asn1.derToOid(parts[0].value as string) !== SUBJECT_ALT_NAME) continue;
          const names = forge.asn1.fromDer(parts[parts.length - 1].value as string);
          for (const n of (names.value as forge.asn1.Asn1[]) ?? []) {
            if (n.type === 2) out.push(n.value as string);
            if (n.type === 7) {
              const bytes = n.value as string;
              if (bytes.length === 4) out.push([...bytes].map((c) => c.charCodeAt(0)).join('.'));
              else if (bytes.length === 16) out.push((forge.util as unknown as { bytesToIP(b: string): string }).bytesToIP(bytes));
            }
          }
        }
      }
    }
  } catch {
    // A malformed extension request is not ours to reject: the certificate then names the CN only.
  }
  return out;
}

function commonNameOf(name: forge.asn1.Asn1): string | undefined {
  for (const rdn of (name.value as forge.asn1.Asn1[]) ?? []) {
    for (const atv of (rdn.value as forge.asn1.Asn1[]) ?? []) {
      const [oid, value] = atv.value as forge.asn1.Asn1[];
      if (forge.asn1.derToOid(oid.value as string) === forge.pki.oids.commonName) return forge.util.decodeUtf8(value.value as string);
    }
  }
  return undefined;
}

/** RFC 5280 key identifier: SHA-1 of the subjectPublicKey bits. */
export function keyIdentifier(spki: forge.asn1.Asn1): string {
  const bits = ((spki.value as forge.asn1.Asn1[])[1].value as string).slice(1);
  return createHash('sha1').update(Buffer.from(bits, 'binary')).digest('binary');
}

/** A new EC P-256 key and a PKCS#10 request for it (what `ztc enroll` sends). */
export function newKeyAndCsr(cn: string, sans: string[] = []) {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const a = forge.asn1;
  const seq = (v: forge.asn1.Asn1[]) => a.create(a.Class.UNIVERSAL, a.Type.SEQUENCE, true, v);
  const oid = (o: string) => a.create(a.Class.UNIVERSAL, a.Type.OID, false, a.oidToDer(o).getBytes());
  const spki = a.fromDer(publicKey.export({ type: 'spki', format: 'der' }).toString('binary'));
  const name = seq([a.create(a.Class.UNIVERSAL, a.Type.SET, true, [seq([oid('2.5.4.3'), a.create(a.Class.UNIVERSAL, a.Type.UTF8, false, forge.util.encodeUtf8(cn))])])]);
  const attrs: forge.asn1.Asn1[] = [];
  if (sans.length) {
    const general = sans.map((n) =>
      /^\d+\.\d+\.\d+\.\d+$/.test(n)
        ? a.create(a.Class.CONTEXT_SPECIFIC, 7, false, n.split('.').map((x) => String.fromCharCode(Number(x))).join(''))
        : a.create(a.Class.CONTEXT_SPECIFIC, 2, false, n),
    );
    const san = seq([oid(SUBJECT_ALT_NAME), a.create(a.Class.UNIVERSAL, a.Type.OCTETSTRING, false, a.toDer(seq(general)).getBytes())]);
    attrs.push(seq([oid(EXTENSION_REQUEST), a.create(a.Class.UNIVERSAL, a.Type.SET, true, [seq([san])])]));
  }
  const info = seq([a.create(a.Class.UNIVERSAL, a.Type.INTEGER, false, '\x00'), name, spki, a.create(a.Class.CONTEXT_SPECIFIC, 0, true, attrs)]);
  const sig = createSign('sha256').update(Buffer.from(a.toDer(info).getBytes(), 'binary')).sign(privateKey).toString('binary');
  const csr = seq([info, seq([oid('1.2.840.10045.4.3.2')]), a.create(a.Class.UNIVERSAL, a.Type.BITSTRING, false, '\x00' + sig)]);
  const csrPem = `-----BEGIN CERTIFICATE REQUEST-----\n${forge.util.encode64(a.toDer(csr).getBytes(), 64)}\n-----END CERTIFICATE REQUEST-----\n`;
  return { csrPem, keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}
