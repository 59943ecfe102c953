// Every certificate the controller holds or issued, with the days it has left: its own (root,
// intermediate, server), the third-party CAs it trusts, and the client and server certificates of
// identities and routers kept in the store. The enrollment signer is the server certificate's key (SDKs
// check an enrollment JWT against the certificate the controller serves): listed with that certificate's
// dates, since it is replaced, and the outstanding JWTs re-signed, when the certificate is.
import { X509Certificate } from 'node:crypto';
import type { Kysely } from 'kysely';
import { sha256Fingerprint } from './fingerprint.js';
import { renewAt, type Pki } from './pki.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

export type CertKind = 'root' | 'intermediate' | 'server' | 'signer' | 'edge-router' | 'ca' | 'identity' | 'router' | 'router-server';

export interface CertStatus {
  kind: CertKind;
  /** The owner's name (identity, router, CA) or the certificate's role for the controller's own. */
  name: string;
  ownerId: string | null;
  subject: string;
  issuer: string;
  /** SHA-256 of the DER in colon hex (the form the login prompt shows); the signer's key id. */
  fingerprint: string;
  notBefore: string | null;
  notAfter: string | null;
  /** Whole days until notAfter (negative once expired). */
  daysLeft: number | null;
  /**
   * The controller's own: when it renews by itself (a third of its lifetime left, model/pki/renewal.ts);
   * null for the root (never replaced by itself) and for certificates it issued to others.
   */
  renewsAt: string | null;
}

/** The controller warns this many days before one of its own certificates expires. */
export const OWN_WARNING_DAYS = 30;

const DAY = 86_400_000;

function describe(kind: CertKind, name: string, pem: string, now: Date, ownerId: string | null = null, renews = false): CertStatus | undefined {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pem);
  } catch {
    // A damaged PEM in the store is reported elsewhere (db check); it has no dates to show here.
    return undefined;
  }
  const notAfter = new Date(cert.validTo);
  return {
    kind,
    name,
    ownerId,
    subject: cert.subject.replace(/\n/g, ', '),
    issuer: cert.issuer.replace(/\n/g, ', '),
    fingerprint: sha256Fingerprint(pem),
    notBefore: new Date(cert.validFrom).toISOString(),
    notAfter: notAfter.toISOString(),
    daysLeft: Math.floor((notAfter.getTime() - now.getTime()) / DAY),
    renewsAt: renews ? new Date(renewAt(pem)).toISOString() : null,
  };
}

/**
 * The controller's own certificates and its signer (the server certificate's key, which signs every
 * JWT), then the keys of replaced server certificates still published until their tokens expire, and
 * the embedded edge router's certificate (data dir router/) when given.
 */
export function ownCertificates(pki: Pki, now: Date, o: { edgeRouterPem?: string } = {}): CertStatus[] {
  const server = describe('server', 'server', pki.serverPem, now, null, true);
  const own = [describe('root', 'root CA', pki.rootPem, now), describe('intermediate', 'intermediate CA', pki.intermediatePem, now, null, true), server];
  const signer: CertStatus = {
    kind: 'signer', name: 'signer', ownerId: null, subject: `the server certificate's key, kid ${pki.signingJwk.kid} (${pki.signingJwk.alg}): signs enrollment, service session and OIDC JWTs`, issuer: '', fingerprint: pki.signingJwk.kid,
    notBefore: server?.notBefore ?? null, notAfter: server?.notAfter ?? null, daysLeft: server?.daysLeft ?? null, renewsAt: server?.renewsAt ?? null,
  };
  // Replaced keys still published (and accepted) while tokens they signed may be valid (upstream bug #4116).
  const retired = pki.signingKeys
    .filter((k) => k.retiredAt !== undefined && k.certPem)
    .map((k): CertStatus => ({
      kind: 'signer', name: 'replaced signer', ownerId: null, subject: `replaced ${new Date(k.retiredAt!).toISOString()}, kid ${k.kid}: kept until nothing it signed is valid`, issuer: '', fingerprint: k.kid,
      notBefore: null, notAfter: new Date(new X509Certificate(k.certPem!).validTo).toISOString(), daysLeft: null, renewsAt: null,
    }));
  const router = o.edgeRouterPem ? describe('edge-router', 'edge router', o.edgeRouterPem, now, null, true) : undefined;
  return [...own.filter((c): c is CertStatus => !!c), signer, ...retired, ...(router ? [router] : [])];
}

/** Certificates in the store: trusted CAs, identities' client certificates, routers' client and server certificates. */
export async function storedCertificates(db: AnyDb, now: Date): Promise<CertStatus[]> {
  const [cas, authenticators, routers] = await Promise.all([
    db.selectFrom('cas').select(['id', 'name', 'certPem']).orderBy('name').execute(),
    db
      .selectFrom('authenticators as a')
      .innerJoin('identities as i', 'i.id', 'a.identityId')
      .select(['i.id as identityId', 'i.name as name', 'a.certPem'])
      .where('a.certPem', 'is not', null)
      .orderBy('i.name')
      .execute(),
    db.selectFrom('routers').select(['id', 'name', 'certPem', 'serverCertPem']).orderBy('name').execute(),
  ]);
  const out: (CertStatus | undefined)[] = [];
  for (const c of cas) out.push(describe('ca', c.name as string, c.certPem as string, now, c.id as string));
  for (const a of authenticators) out.push(describe('identity', a.name as string, a.certPem as string, now, a.identityId as string));
  for (const r of routers) {
    if (r.certPem) out.push(describe('router', r.name as string, r.certPem as string, now, r.id as string));
    if (r.serverCertPem) out.push(describe('router-server', r.name as string, r.serverCertPem as string, now, r.id as string));
  }
  return out.filter((c): c is CertStatus => !!c);
}

/**
 * One sentence per certificate of the controller's own that expires within OWN_WARNING_DAYS (or has):
 * the root (which does not renew by itself), or one whose renewal keeps failing (it renews when a third
 * of its lifetime is left, months before this); and one for a renewal that failed last.
 */
export function ownExpiryWarnings(pki: Pki, now: Date, o: { edgeRouterPem?: string; failure?: { at: string; certificate: string; error: string } } = {}): string[] {
  const out = ownCertificates(pki, now, o)
    // The signer's dates are the server certificate's, which warns for both.
    .filter((c) => c.kind !== 'signer' && c.daysLeft !== null && c.daysLeft < OWN_WARNING_DAYS)
    .map((c) =>
      c.daysLeft! < 0
        ? `the controller's ${c.name} certificate expired on ${c.notAfter}`
        : `the controller's ${c.name} certificate expires in ${c.daysLeft} day${c.daysLeft === 1 ? '' : 's'} (${c.notAfter})${
            c.kind === 'root'
              ? ': the root is not renewed by itself (every client trusts it): plan a new network CA'
              : `: it should have renewed by itself at ${c.renewsAt}; see the pki events, or run \`ztc pki renew ${c.kind === 'edge-router' ? 'server' : c.kind}\``
          }`,
    );
  if (o.failure) out.push(`the last renewal of the ${o.failure.certificate} failed at ${o.failure.at}: ${o.failure.error} (tried again every minute)`);
  return out;
}
