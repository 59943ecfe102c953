// Client certificates: issuing from CSRs, and deciding whether a presented certificate may be used.
import { X509Certificate } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import type { Ctx } from '../context.js';
import { ApiError } from '../errors.js';
import { runCrypto } from '../crypto/pool.js';
import type { SignCsrInput } from '../crypto/tasks.js';
import type { CaRow } from '../../store/schema.js';

export const CLIENT_CERT_DAYS = 365;

/**
 * Sign a CSR with the intermediate: the CSR's key, our subject (CN = the identity id). Runs on the
 * crypto worker pool; call it outside a write transaction, which would otherwise wait for it.
 */
export function signClientCsr(ctx: Ctx, csrPem: string, commonName: string, o: { days?: number; hours?: number; usage?: SignCsrInput['usage']; sans?: SignCsrInput['sans'] } = {}) {
  return runCrypto('signCsr', [{
    csrPem,
    commonName,
    issuerPem: ctx.pki.intermediatePem,
    issuerKeyPem: ctx.pki.intermediateKeyPem,
    days: o.days ?? (o.hours ? o.hours / 24 : CLIENT_CERT_DAYS),
    usage: o.usage ?? 'client',
    sans: o.sans,
  }]);
}

/** The leaf and any further certificates the client presented on this TLS connection. */
export function presentedCertificates(socket: unknown): X509Certificate[] {
  const s = socket as TLSSocket | undefined;
  if (!s || typeof s.getPeerCertificate !== 'function') return [];
  const out: X509Certificate[] = [];
  let c = s.getPeerCertificate(true) as { raw?: Buffer; issuerCertificate?: unknown; fingerprint256?: string } | null;
  const seen = new Set<string>();
  while (c && c.raw && !seen.has(c.fingerprint256 ?? '')) {
    seen.add(c.fingerprint256 ?? '');
    out.push(new X509Certificate(c.raw));
    c = c.issuerCertificate as typeof c;
  }
  return out;
}

const signedBy = (cert: X509Certificate, issuer: X509Certificate) => cert.checkIssued(issuer) && cert.verify(issuer.publicKey);

export function isCurrent(cert: X509Certificate, now: Date) {
  return Date.parse(cert.validFrom) <= now.getTime() && now.getTime() <= Date.parse(cert.validTo);
}

/**
 * True when `leaf` chains to `anchor`, directly or through one presented intermediate. Every certificate
 * above the leaf is checked, not only the leaf's signature: the anchor and the intermediate must be
 * inside their validity windows at `now`, and the intermediate must be a CA (an expired or revoked-by-
 * expiry intermediate, or a leaf posing as one, must not vouch for anything). The leaf's own window is
 * its caller's to judge (an auth policy may allow expired client certificates).
 */
export function chainsTo(leaf: X509Certificate, presented: X509Certificate[], anchor: X509Certificate, now: Date): boolean {
  if (!isCurrent(anchor, now)) return false;
  if (signedBy(leaf, anchor)) return true;
  return presented.some((mid) => mid !== leaf && mid.ca && isCurrent(mid, now) && signedBy(leaf, mid) && signedBy(mid, anchor));
}

/** Issued by the controller's intermediate, or by one it replaced that has not expired. */
export const issuedByNetwork = (ctx: Ctx, leaf: X509Certificate, presented: X509Certificate[] = []) =>
  [ctx.pki.intermediatePem, ...ctx.pki.retiredIntermediatePems].some((pem) => chainsTo(leaf, presented, new X509Certificate(pem), ctx.clock.now()));

/** The verified CA (with the given flag on) that issued the certificate, if any. */
export async function issuingCa(ctx: Ctx, leaf: X509Certificate, presented: X509Certificate[], flag: 'isAuthEnabled' | 'isAutoCaEnrollmentEnabled' | 'isOttCaEnrollmentEnabled' | 'isEdgeRouterEnrollmentEnabled'): Promise<CaRow | undefined> {
  const cas = await ctx.store.db.selectFrom('cas').selectAll().where('isVerified', '=', 1).where(flag, '=', 1).execute();
  return cas.find((ca) => chainsTo(leaf, presented, new X509Certificate(ca.certPem), ctx.clock.now()));
}

/** Clocks differ a little between a CA and us: a certificate this close to its window still counts. */
const SKEW_MS = 5 * 60_000;

/** A certificate that enrolls must be inside its validity window (with a small skew), said plainly when not. */
export function requireCurrent(cert: X509Certificate, now: Date) {
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  if (now.getTime() + SKEW_MS < from) throw new ApiError(400, 'CERT_FAILED_VALIDATION', `The presented certificate is not valid yet: its validity starts ${new Date(from).toISOString()} (check the clocks of the CA and of this host)`);
  if (now.getTime() - SKEW_MS > to) throw new ApiError(400, 'CERT_FAILED_VALIDATION', `The presented certificate expired ${new Date(to).toISOString()}: enroll with a current certificate from the CA`);
}

export function requireClientCert(presented: X509Certificate[]): X509Certificate {
  if (!presented.length) throw new ApiError(401, 'INVALID_AUTH', 'This operation needs a client certificate presented on the TLS connection');
  return presented[0];
}
