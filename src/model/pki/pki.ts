// The controller's own PKI, kept as files in <data dir>/pki (keys 0600): a root CA, an intermediate
// that signs client and router certificates, the HTTPS server certificate and the enrollment-JWT key.
import { createHash, createPrivateKey, createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import forge from 'node-forge';
import { calculateJwkThumbprint, exportJWK, type JWK } from 'jose';
import { loadSealer } from '../secrets.js';
import { fingerprintOf, issueCertificate, newRsaKey, pkcs7Base64 } from './certs.js';
import { applySwitch, commitSwitch, settlePki, type NewFile } from './pki-switch.js';

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

/**
 * `keepServer`: use the server certificate as it is (commands on the host's data dir beside a running
 * controller: re-issuing it for the command's own idea of the host names would leave the running
 * controller serving one key while the JWTs the command signs use another).
 */
export async function loadOrCreatePki(dataDir: string, hostnames: string[], progress: Progress = () => {}, o: { keepServer?: boolean } = {}): Promise<Pki> {
  const dir = path.join(dataDir, 'pki');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const f = (k: keyof typeof FILES) => path.join(dir, FILES[k]);
  const read = (k: keyof typeof FILES) => fs.readFileSync(f(k), 'utf8');
  // The key that seals secrets at rest lives with the CA keys, so copying pki/ to another controller copies it.
  loadSealer(dir);

  // An interrupted renewal is finished or dropped, and a pki/ missing its intermediate refused, first.
  settlePki(dir, progress);
  // Each certificate appears with its key or not at all (a switch, as a renewal makes one).
  const create = (what: string, files: NewFile[]) => applySwitch(dir, commitSwitch(dir, retireStamp(retiredFolder(dir)), what, files));
  if (!fs.existsSync(f('root'))) {
    progress('creating the root CA (RSA 4096)');
    const key = newRsaKey(4096);
    const pem = issueCertificate({ commonName: 'ztc root CA', publicKey: key.publicKey, issuerKeyPem: key.privatePem, days: 3650, usage: 'ca' });
    create('root', [{ name: FILES.rootKey, data: key.privatePem, secret: true }, { name: FILES.root, data: pem }]);
  }
  if (!fs.existsSync(f('intermediate'))) {
    progress('creating the intermediate signing CA (RSA 3072)');
    create('intermediate', newIntermediate(read('root'), read('rootKey')));
  }
  const names = serverNames(hostnames);
  const current = fs.existsSync(f('server')) ? certNames(read('server')) : [];
  // Renewed at start when the names changed or it has less than 30 days left.
  const expiring = fs.existsSync(f('server')) && Date.parse(new X509Certificate(read('server')).validTo) - Date.now() < 30 * 86_400_000;
  // Certificates of earlier versions also allowed client authentication: the server's is serverAuth only.
  const clientAuth = fs.existsSync(f('server')) && (new X509Certificate(read('server')).keyUsage ?? []).includes(CLIENT_AUTH_OID);
  const keep = o.keepServer && fs.existsSync(f('server'));
  if (!keep && (expiring || clientAuth || !names.every((n) => current.includes(canonical(n))))) {
    progress(current.length ? `re-issuing the server certificate for ${names.join(', ')}` : `creating the server certificate for ${names.join(', ')}`);
    // The replaced pair goes to retired/: its key stays in /enroll/jwks for a while, as it signed the
    // enrollment JWTs handed out so far.
    create('server certificate', newServer(names, read('intermediate'), read('intermediateKey')));
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

/** pki/retired, made when first needed. */
function retiredFolder(dir: string): string {
  const folder = path.join(dir, RETIRED);
  fs.mkdirSync(folder, { recursive: true, mode: 0o700 });
  return folder;
}

/** A new intermediate signing CA under the root, as the files of pki/ it makes. */
function newIntermediate(rootPem: string, rootKeyPem: string): NewFile[] {
  const key = newRsaKey(3072);
  const pem = issueCertificate({ commonName: 'ztc intermediate CA', publicKey: key.publicKey, issuerPem: rootPem, issuerKeyPem: rootKeyPem, days: 1825, ca: { pathLength: 0 }, usage: 'ca' });
  return [{ name: FILES.intermediateKey, data: key.privatePem, secret: true }, { name: FILES.intermediate, data: pem }];
}

/** A new server certificate for `names` under the given intermediate, as the files of pki/ it makes. */
function newServer(names: string[], intermediatePem: string, intermediateKeyPem: string): NewFile[] {
  const key = newRsaKey(2048);
  const pem = issueCertificate({ commonName: names[0], publicKey: key.publicKey, issuerPem: intermediatePem, issuerKeyPem: intermediateKeyPem, days: 365, sans: names, usage: 'server' });
  return [{ name: FILES.serverKey, data: key.privatePem, secret: true }, { name: FILES.server, data: pem }];
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
  const read = (k: keyof typeof FILES) => fs.readFileSync(path.join(dir, FILES[k]), 'utf8');
  // Everything new is made before anything moves; then one journaled switch (pki-switch.ts) replaces
  // the files, so a crash leaves the old set or the new one, never an intermediate-less pki/.
  const files: NewFile[] = [];
  let issuer = { pem: read('intermediate'), key: read('intermediateKey') };
  if (target === 'intermediate') {
    const mid = newIntermediate(read('root'), read('rootKey'));
    files.push(...mid);
    issuer = { pem: mid[1].data, key: mid[0].data };
  }
  files.push(...newServer(serverNames(hostnames), issuer.pem, issuer.key));
  // One timestamp per renewal, for every certificate and key it retires: a pair is found again by name.
  applySwitch(dir, commitSwitch(dir, retireStamp(retiredFolder(dir)), target === 'intermediate' ? 'intermediate' : 'server certificate', files));
  return loadOrCreatePki(dataDir, hostnames);
}


export const forgeCert = (pem: string) => forge.pki.certificateFromPem(pem);
