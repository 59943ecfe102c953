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
  /**
   * The current signing key (the server certificate's) first, then the keys of replaced server
   * certificates that may still have signed unexpired tokens (not dropped, model/pki/renewal.ts, and
   * replaced less than MAX_RETIRED_KEY_DAYS ago): every JWKS, the routers' data model and the token
   * checks keep them (upstream bug #4116). Then the ES256 keys of earlier versions, for
   * RETIRED_SIGNER_DAYS.
   */
  signingKeys: SigningKey[];
}

/** How long a replaced ES256 enrollment key of earlier versions stays published: longer than any enrollment lasts. */
export const RETIRED_SIGNER_DAYS = 30;
/**
 * The longest a replaced server key is kept: the longest any token it signed can live (a service
 * session's JWT, a year as upstream's), and a day. Dropped earlier once nothing it signed can still be
 * valid (model/pki/renewal.ts keptFor).
 */
export const MAX_RETIRED_KEY_DAYS = 366;
/** The controller's own certificates renew by themselves when this share of their lifetime is left. */
export const RENEW_WHEN_LEFT = 1 / 3;
const RETIRED = 'retired';
/** pki/retired/dropped-keys.json: the kids of replaced server keys no longer published, and when they went. */
const DROPPED = 'dropped-keys.json';

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
  /** A replaced server certificate's key: when it was replaced (ms), and the certificate. */
  retiredAt?: number;
  certPem?: string;
}

/** When a certificate of the controller's own renews: once RENEW_WHEN_LEFT of its lifetime is left (ms). */
export function renewAt(pem: string): number {
  const cert = new X509Certificate(pem);
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  return Math.floor(to - (to - from) * RENEW_WHEN_LEFT);
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
export async function loadOrCreatePki(dataDir: string, hostnames: string[], progress: Progress = () => {}, o: { keepServer?: boolean; now?: number } = {}): Promise<Pki> {
  const now = o.now ?? Date.now();
  const dir = path.join(dataDir, 'pki');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const f = (k: keyof typeof FILES) => path.join(dir, FILES[k]);
  const read = (k: keyof typeof FILES) => fs.readFileSync(f(k), 'utf8');
  // The key that seals secrets at rest lives with the CA keys, so copying pki/ to another controller copies it.
  loadSealer(dir);

  // An interrupted renewal is finished or dropped, and a pki/ missing its intermediate refused, first.
  settlePki(dir, progress);
  // Each certificate appears with its key or not at all (a switch, as a renewal makes one).
  const create = (what: string, files: NewFile[]) => applySwitch(dir, commitSwitch(dir, retireStamp(retiredFolder(dir), now), what, files));
  if (!fs.existsSync(f('root'))) {
    progress('creating the root CA (RSA 4096)');
    const key = newRsaKey(4096);
    const pem = issueCertificate({ commonName: 'ztc root CA', publicKey: key.publicKey, issuerKeyPem: key.privatePem, days: 3650, usage: 'ca', now });
    create('root', [{ name: FILES.rootKey, data: key.privatePem, secret: true }, { name: FILES.root, data: pem }]);
  }
  if (!fs.existsSync(f('intermediate'))) {
    progress('creating the intermediate signing CA (RSA 3072)');
    create('intermediate', newIntermediate(read('root'), read('rootKey'), now));
  }
  const names = serverNames(hostnames);
  const current = fs.existsSync(f('server')) ? certNames(read('server')) : [];
  // Renewed at start when the names changed or its renewal time has come (a third of its lifetime left).
  const expiring = fs.existsSync(f('server')) && now >= renewAt(read('server'));
  // Certificates of earlier versions also allowed client authentication: the server's is serverAuth only.
  const clientAuth = fs.existsSync(f('server')) && (new X509Certificate(read('server')).keyUsage ?? []).includes(CLIENT_AUTH_OID);
  const keep = o.keepServer && fs.existsSync(f('server'));
  if (!keep && (expiring || clientAuth || !names.every((n) => current.includes(canonical(n))))) {
    progress(current.length ? `re-issuing the server certificate for ${names.join(', ')}` : `creating the server certificate for ${names.join(', ')}`);
    // The replaced pair goes to retired/: its key stays in /enroll/jwks for a while, as it signed the
    // enrollment JWTs handed out so far.
    create('server certificate', newServer(names, read('intermediate'), read('intermediateKey'), now));
  }

  const rootPem = read('root');
  const intermediatePem = read('intermediate');
  const serverPem = read('server');
  const retired = retiredFiles(dir);
  const retiredIntermediatePems = retired
    .filter((f) => /^intermediate-.*\.pem$/.test(f.name))
    .map((f) => fs.readFileSync(f.path, 'utf8'))
    .filter((pem) => Date.parse(new X509Certificate(pem).validTo) > now);
  // Enrollment JWTs are signed with the server certificate's key: the C and Go SDKs and upstream's router
  // check the signature against the certificate the controller presents on its TLS port.
  const signingKeys = [await signingKeyOf(createPrivateKey(read('serverKey')), certificateKid(serverPem))];
  // Replaced server keys, newest first: kept until nothing they signed can still be valid (renewal.ts
  // drops them then), and never longer than MAX_RETIRED_KEY_DAYS.
  const dropped = droppedKids(dir);
  const kept = (r: { at: number }) => now - r.at < MAX_RETIRED_KEY_DAYS * 86_400_000;
  for (const r of retired.filter((r) => /^server-\d+\.key$/.test(r.name) && kept(r))) {
    const certFile = r.path.replace(/\.key$/, '.pem');
    if (!fs.existsSync(certFile)) continue;
    const certPem = fs.readFileSync(certFile, 'utf8');
    const kid = certificateKid(certPem);
    if (dropped.has(kid) || signingKeys.some((k) => k.kid === kid)) continue;
    signingKeys.push({ ...(await signingKeyOf(createPrivateKey(fs.readFileSync(r.path, 'utf8')), kid)), retiredAt: r.at, certPem });
  }
  const recent = (r: { at: number }) => now - r.at < RETIRED_SIGNER_DAYS * 86_400_000;
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
function retireStamp(folder: string, now = Date.now()): number {
  const taken = new Set(fs.readdirSync(folder).map((name) => /-(\d+)\.(pem|key)$/.exec(name)?.[1]));
  let at = now;
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
function newIntermediate(rootPem: string, rootKeyPem: string, now: number): NewFile[] {
  const key = newRsaKey(3072);
  const pem = issueCertificate({ commonName: 'ztc intermediate CA', publicKey: key.publicKey, issuerPem: rootPem, issuerKeyPem: rootKeyPem, days: 1825, ca: { pathLength: 0 }, usage: 'ca', now });
  return [{ name: FILES.intermediateKey, data: key.privatePem, secret: true }, { name: FILES.intermediate, data: pem }];
}

/** A new server certificate for `names` under the given intermediate, as the files of pki/ it makes. */
function newServer(names: string[], intermediatePem: string, intermediateKeyPem: string, now: number): NewFile[] {
  const key = newRsaKey(2048);
  const pem = issueCertificate({ commonName: names[0], publicKey: key.publicKey, issuerPem: intermediatePem, issuerKeyPem: intermediateKeyPem, days: 365, sans: names, usage: 'server', now });
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
export async function renewPki(dataDir: string, hostnames: string[], target: RenewTarget, o: { now?: number; intermediate?: { pem: string; keyPem: string } } = {}): Promise<Pki> {
  const now = o.now ?? Date.now();
  const dir = path.join(dataDir, 'pki');
  const read = (k: keyof typeof FILES) => fs.readFileSync(path.join(dir, FILES[k]), 'utf8');
  // Everything new is made before anything moves; then one journaled switch (pki-switch.ts) replaces
  // the files, so a crash leaves the old set or the new one, never an intermediate-less pki/.
  const files: NewFile[] = [];
  let issuer = { pem: read('intermediate'), key: read('intermediateKey') };
  if (target === 'intermediate') {
    // A new one, or the one another controller of the database made (shared-intermediate.ts).
    const mid: NewFile[] = o.intermediate
      ? [{ name: FILES.intermediateKey, data: o.intermediate.keyPem, secret: true }, { name: FILES.intermediate, data: o.intermediate.pem }]
      : newIntermediate(read('root'), read('rootKey'), now);
    files.push(...mid);
    issuer = { pem: mid[1].data, key: mid[0].data };
  }
  files.push(...newServer(serverNames(hostnames), issuer.pem, issuer.key, now));
  // One timestamp per renewal, for every certificate and key it retires: a pair is found again by name.
  applySwitch(dir, commitSwitch(dir, retireStamp(retiredFolder(dir), now), target === 'intermediate' ? 'intermediate' : 'server certificate', files));
  return loadOrCreatePki(dataDir, hostnames, () => {}, { now });
}

/** A new intermediate under the root of pki/ (not yet in use): what renewal.ts offers the other controllers first. */
export function makeIntermediate(dataDir: string, now: number): { pem: string; keyPem: string } {
  const dir = path.join(dataDir, 'pki');
  const [key, cert] = newIntermediate(fs.readFileSync(path.join(dir, FILES.root), 'utf8'), fs.readFileSync(path.join(dir, FILES.rootKey), 'utf8'), now);
  return { pem: cert.data, keyPem: key.data };
}

/** The kids of replaced server keys no longer published (dropKeys). */
function droppedKids(dir: string): Set<string> {
  try {
    const list = JSON.parse(fs.readFileSync(path.join(dir, RETIRED, DROPPED), 'utf8')) as { kid: string }[];
    return new Set(list.map((d) => d.kid));
  } catch {
    return new Set();
  }
}

/**
 * Stop publishing replaced server keys (nothing they signed can still be valid): noted in
 * pki/retired/dropped-keys.json, which every load of pki/ reads (this process's threads, a restart).
 * The key files stay in pki/retired/ as the record of what was.
 */
export function dropKeys(dataDir: string, kids: string[], now: number) {
  const dir = path.join(dataDir, 'pki');
  const file = path.join(retiredFolder(dir), DROPPED);
  let list: { kid: string; at: string }[] = [];
  try {
    list = JSON.parse(fs.readFileSync(file, 'utf8')) as typeof list;
  } catch {
    // None dropped yet (or a damaged list: rewritten whole below).
  }
  const known = new Set(list.map((d) => d.kid));
  for (const kid of kids) if (!known.has(kid)) list.push({ kid, at: new Date(now).toISOString() });
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(list, null, 1) + '\n', { mode: 0o600 });
  fs.renameSync(tmp, file);
}


export const forgeCert = (pem: string) => forge.pki.certificateFromPem(pem);
