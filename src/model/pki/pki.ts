// The controller's own PKI, kept as files in <data dir>/pki (keys 0600): a root CA, an intermediate
// that signs client and router certificates, the HTTPS server certificate and the enrollment-JWT key.
import { createHash, createPrivateKey, createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import forge from 'node-forge';
import { calculateJwkThumbprint, exportJWK, type JWK } from 'jose';
import { loadSealer } from '../secrets.js';
import { fingerprintOf, issueCertificate, newRsaKey, pkcs7Base64 } from './certs.js';

export interface Pki {
  rootPem: string;
  intermediatePem: string;
  intermediateKeyPem: string;
  serverPem: string;
  serverKeyPem: string;
  /** Intermediate then root: what clients need to trust us and verify the certificates we issue. */
  caBundlePem: string;
  cacertsPkcs7: string;
  serverFingerprint: string;
  /** The key that signs enrollment JWTs: the server certificate's own (SDKs verify with the certificate they see on TLS). */
  signingKey: KeyObject;
  signingJwk: JWK & { kid: string; alg: string };
  /** Intermediates replaced by `pki renew intermediate` and not expired: what they issued stays trusted. */
  retiredIntermediatePems: string[];
  /** The current enrollment key first, then keys replaced in the last RETIRED_SIGNER_DAYS (outstanding JWTs still verify at /enroll/jwks). */
  signingKeys: SigningKey[];
}

/** How long a replaced enrollment signing key stays published: longer than any enrollment lasts. */
export const RETIRED_SIGNER_DAYS = 30;
const RETIRED = 'retired';

const FILES = {
  rootKey: 'root.key',
  root: 'root.pem',
  intermediateKey: 'intermediate.key',
  intermediate: 'intermediate.pem',
  serverKey: 'server.key',
  server: 'server.pem',
  signingKey: 'enrollment-signing.key',
};

export type Progress = (step: string) => void;

export interface SigningKey {
  kid: string;
  key: KeyObject;
  jwk: JWK & { kid: string; alg: string };
}

/** The JWS algorithm for a key, as upstream picks it: RS256 for RSA, ES256/ES384/ES512 by curve. */
export function jwsAlgorithm(key: KeyObject): string {
  if (key.asymmetricKeyType === 'rsa') return 'RS256';
  const curve = key.asymmetricKeyDetails?.namedCurve;
  return curve === 'secp384r1' ? 'ES384' : curve === 'secp521r1' ? 'ES512' : 'ES256';
}

/** Upstream's kid for a certificate's key: the lowercase hex SHA-1 of the certificate's DER. */
export const certificateKid = (pem: string) => createHash('sha1').update(new X509Certificate(pem).raw).digest('hex');

async function signingKeyOf(key: KeyObject, kid: string): Promise<SigningKey> {
  const publicJwk = await exportJWK(createPublicKey(key));
  return { kid, key, jwk: { ...publicJwk, kid, alg: jwsAlgorithm(key), use: 'sig' } };
}

const CLIENT_AUTH_OID = '1.3.6.1.5.5.7.3.2';

function writeSecret(file: string, data: string) {
  fs.writeFileSync(file, data, { mode: 0o600 });
  fs.chmodSync(file, 0o600);
}

/** Names the server certificate must carry: the configured ones plus the loopback names. */
export function serverNames(hostnames: string[]): string[] {
  return [...new Set([...hostnames, 'localhost', '127.0.0.1', '::1'].filter(Boolean))];
}

/** One spelling per name: Node prints IPv6 SANs expanded (0:0:0:0:0:0:0:1), configs use ::1. */
const canonical = (name: string) => (name.includes(':') ? new URL(`http://[${name}]`).hostname.slice(1, -1) : name.toLowerCase());

function certNames(pem: string): string[] {
  const san = new X509Certificate(pem).subjectAltName ?? '';
  return san
    .split(', ')
    .map((s) => canonical(s.replace(/^(DNS|IP Address):/, '')))
    .filter(Boolean);
}

export async function loadOrCreatePki(dataDir: string, hostnames: string[], progress: Progress = () => {}): Promise<Pki> {
  const dir = path.join(dataDir, 'pki');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const f = (k: keyof typeof FILES) => path.join(dir, FILES[k]);
  const read = (k: keyof typeof FILES) => fs.readFileSync(f(k), 'utf8');
  // The key that seals secrets at rest lives with the CA keys, so copying pki/ to another controller copies it.
  loadSealer(dir);

  if (!fs.existsSync(f('root'))) {
    progress('creating the root CA (RSA 4096)');
    const key = newRsaKey(4096);
    const pem = issueCertificate({ commonName: 'ztc root CA', publicKey: key.publicKey, issuerKeyPem: key.privatePem, days: 3650, usage: 'ca' });
    writeSecret(f('rootKey'), key.privatePem);
    fs.writeFileSync(f('root'), pem);
  }
  if (!fs.existsSync(f('intermediate'))) {
    progress('creating the intermediate signing CA (RSA 3072)');
    const key = newRsaKey(3072);
    const pem = issueCertificate({
      commonName: 'ztc intermediate CA',
      publicKey: key.publicKey,
      issuerPem: read('root'),
      issuerKeyPem: read('rootKey'),
      days: 1825,
      ca: { pathLength: 0 },
      usage: 'ca',
    });
    writeSecret(f('intermediateKey'), key.privatePem);
    fs.writeFileSync(f('intermediate'), pem);
  }
  const names = serverNames(hostnames);
  const current = fs.existsSync(f('server')) ? certNames(read('server')) : [];
  // Renewed at start when the names changed or it has less than 30 days left.
  const expiring = fs.existsSync(f('server')) && Date.parse(new X509Certificate(read('server')).validTo) - Date.now() < 30 * 86_400_000;
  // Certificates of earlier versions also allowed client authentication: the server's is serverAuth only.
  const clientAuth = fs.existsSync(f('server')) && (new X509Certificate(read('server')).keyUsage ?? []).includes(CLIENT_AUTH_OID);
  if (expiring || clientAuth || !names.every((n) => current.includes(canonical(n)))) {
    progress(current.length ? `re-issuing the server certificate for ${names.join(', ')}` : `creating the server certificate for ${names.join(', ')}`);
    // The replaced key stays in /enroll/jwks for a while: it signed the enrollment JWTs handed out so far.
    if (fs.existsSync(f('server'))) retireServer(dir);
    const key = newRsaKey(2048);
    const pem = issueCertificate({
      commonName: names[0],
      publicKey: key.publicKey,
      issuerPem: read('intermediate'),
      issuerKeyPem: read('intermediateKey'),
      days: 365,
      sans: names,
      usage: 'server',
    });
    writeSecret(f('serverKey'), key.privatePem);
    fs.writeFileSync(f('server'), pem);
  }

  const rootPem = read('root');
  const intermediatePem = read('intermediate');
  const serverPem = read('server');
  const retired = retiredFiles(dir);
  const retiredIntermediatePems = retired
    .filter((f) => /^intermediate-.*\.pem$/.test(f.name))
    .map((f) => fs.readFileSync(f.path, 'utf8'))
    .filter((pem) => Date.parse(new X509Certificate(pem).validTo) > Date.now());
  // Enrollment JWTs are signed with the server certificate's key: the C and Go SDKs and upstream's router
  // check the signature against the certificate the controller presents on its TLS port.
  const signingKeys = [await signingKeyOf(createPrivateKey(read('serverKey')), certificateKid(serverPem))];
  const recent = (r: { at: number }) => Date.now() - r.at < RETIRED_SIGNER_DAYS * 86_400_000;
  for (const r of retired.filter((r) => /^server-\d+\.key$/.test(r.name) && recent(r))) {
    const certFile = r.path.replace(/\.key$/, '.pem');
    if (fs.existsSync(certFile)) signingKeys.push(await signingKeyOf(createPrivateKey(fs.readFileSync(r.path, 'utf8')), certificateKid(fs.readFileSync(certFile, 'utf8'))));
  }
  // Separate ES256 keys signed enrollment JWTs before: still published while JWTs they signed may be outstanding.
  const legacy = [...(fs.existsSync(f('signingKey')) ? [{ path: f('signingKey') }] : []), ...retired.filter((r) => /^enrollment-signing-.*\.key$/.test(r.name) && recent(r))];
  for (const l of legacy) {
    const key = createPrivateKey(fs.readFileSync(l.path, 'utf8'));
    signingKeys.push(await signingKeyOf(key, await calculateJwkThumbprint(await exportJWK(createPublicKey(key)))));
  }
  const chain = [intermediatePem, ...retiredIntermediatePems, rootPem];
  return {
    rootPem,
    intermediatePem,
    intermediateKeyPem: read('intermediateKey'),
    serverPem,
    serverKeyPem: read('serverKey'),
    caBundlePem: chain.join(''),
    cacertsPkcs7: pkcs7Base64(chain),
    serverFingerprint: fingerprintOf(serverPem),
    signingKey: signingKeys[0].key,
    signingJwk: signingKeys[0].jwk,
    retiredIntermediatePems,
    signingKeys,
  };
}

/**
 * The timestamp under which one renewal retires its files: now, or later when a file of pki/retired
 * already has it (two renewals in one millisecond must not overwrite each other's pair).
 */
function retireStamp(folder: string): number {
  const taken = new Set(fs.readdirSync(folder).map((name) => /-(\d+)\.(pem|key)$/.exec(name)?.[1]));
  let at = Date.now();
  while (taken.has(String(at))) at++;
  return at;
}

/** Move the server certificate and key to pki/retired under one timestamp (their key keeps verifying old JWTs). */
function retireServer(dir: string, stamp?: number) {
  const folder = path.join(dir, RETIRED);
  fs.mkdirSync(folder, { recursive: true, mode: 0o700 });
  const at = stamp ?? retireStamp(folder);
  fs.renameSync(path.join(dir, FILES.serverKey), path.join(folder, `server-${at}.key`));
  fs.renameSync(path.join(dir, FILES.server), path.join(folder, `server-${at}.pem`));
}

/** pki/retired/NAME-<epoch ms>.{pem,key}: what `pki renew` replaced, newest first. */
function retiredFiles(dir: string): { name: string; path: string; at: number }[] {
  const folder = path.join(dir, RETIRED);
  if (!fs.existsSync(folder)) return [];
  return fs
    .readdirSync(folder)
    .map((name) => ({ name, path: path.join(folder, name), at: Number(/-(\d+)\.(pem|key)$/.exec(name)?.[1] ?? 0) }))
    .sort((a, b) => b.at - a.at);
}

/** `signer` is the server certificate's key now: renewing it renews the server certificate. */
export type RenewTarget = 'server' | 'intermediate' | 'signer';

/**
 * Replace one of the controller's own credentials and load the PKI again. The replaced intermediate
 * and server certificate move to pki/retired/, so what they issued or signed keeps verifying; the root
 * is never replaced here (every client trusts it). Every target means a new server certificate (and
 * so a new enrollment signing key): outstanding enrollment JWTs must be re-signed (reissueEnrollmentJwts).
 */
export async function renewPki(dataDir: string, hostnames: string[], target: RenewTarget): Promise<Pki> {
  const dir = path.join(dataDir, 'pki');
  const folder = path.join(dir, RETIRED);
  fs.mkdirSync(folder, { recursive: true, mode: 0o700 });
  // One timestamp per renewal, for every certificate and key it retires: a pair is found again by name.
  const at = retireStamp(folder);
  const retire = (file: string, as: string) => fs.renameSync(path.join(dir, file), path.join(folder, `${as}-${at}${path.extname(file)}`));
  if (target === 'intermediate') {
    retire(FILES.intermediate, 'intermediate');
    retire(FILES.intermediateKey, 'intermediate');
  }
  // The server certificate is made again by the loader whenever it is missing.
  retireServer(dir, at);
  return loadOrCreatePki(dataDir, hostnames);
}


export const forgeCert = (pem: string) => forge.pki.certificateFromPem(pem);
