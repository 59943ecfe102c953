// Certificate extension of the calling identity: extend (a new certificate, the old one still valid)
// then extend-verify (the new one replaces the old).
import { X509Certificate } from 'node:crypto';
import type { SessionWithIdentity } from '../auth/api-sessions.js';
import { iso } from '../clock.js';
import type { Ctx } from '../context.js';
import { ApiError } from '../errors.js';
import { isSet } from '../../store/json.js';
import { fingerprintOf } from './certs.js';
import { signClientCsr } from './client-certs.js';
import { writeTx } from '../crud.js';
import { recordRowChange } from '../events/record.js';

const refuse = (why: string) => new ApiError(401, 'UNAUTHORIZED', why);

async function ownCertAuthenticator(ctx: Ctx, session: SessionWithIdentity | undefined, id: string) {
  if (!session) throw refuse('Certificate extension needs an API session');
  const a = await ctx.store.db.selectFrom('authenticators').selectAll().where('id', '=', id).where('identityId', '=', session.identityId).executeTakeFirst();
  if (!a || a.method !== 'cert') throw refuse('No certificate authenticator of the calling identity has this id');
  if (!isSet(a.isIssuedByNetwork)) throw refuse('Only certificates issued by this network can be extended');
  return a;
}

/**
 * A new certificate for the calling identity's cert authenticator. As upstream, the current certificate
 * must be presented on this very TLS connection: a session token alone (which may have leaked) is not
 * enough to take over the identity's certificate.
 */
export async function extendCertificate(ctx: Ctx, session: SessionWithIdentity | undefined, id: string, csrPem: string, presented: X509Certificate[]) {
  const a = await ownCertAuthenticator(ctx, session, id);
  // The session must have been opened with this very certificate.
  if (!isSet(session!.isCertExtendable) || session!.authenticatorId !== id) {
    throw refuse('Authenticate with the certificate to extend (method=cert) before extending it');
  }
  const leaf = presented[0];
  if (!leaf) throw refuse('Present the certificate to extend on the connection (TLS client certificate)');
  if (fingerprintOf(leaf.toString()) !== a.fingerprint) throw refuse('The certificate presented on the connection is not the one this authenticator holds');
  const { pem, fingerprint } = await signClientCsr(ctx, csrPem, session!.identityId);
  await writeTx(ctx, async (tx) => {
    const changed = { unverifiedCertPem: pem, unverifiedFingerprint: fingerprint, updatedAt: iso(ctx.clock.now()) };
    await tx.updateTable('authenticators').set(changed).where('id', '=', id).execute();
    await recordRowChange(tx, ctx, 'authenticators', 'updated', id, a as never, { ...a, ...changed }, 'extend');
  });
  return { ca: ctx.pki.caBundlePem, clientCert: pem };
}

export async function verifyExtendedCertificate(ctx: Ctx, session: SessionWithIdentity | undefined, id: string, certPem: string) {
  const a = await ownCertAuthenticator(ctx, session, id);
  let fingerprint: string;
  try {
    fingerprint = fingerprintOf(new X509Certificate(certPem).toString());
  } catch {
    throw new ApiError(400, 'COULD_NOT_PARSE_BODY', 'clientCert is not a PEM certificate');
  }
  if (!a.unverifiedFingerprint || a.unverifiedFingerprint !== fingerprint) throw refuse('clientCert is not the certificate returned by the last extend request');
  await writeTx(ctx, async (tx) => {
    const changed = { certPem: a.unverifiedCertPem, fingerprint, unverifiedCertPem: null, unverifiedFingerprint: null, updatedAt: iso(ctx.clock.now()) };
    const res = await tx.updateTable('authenticators').set(changed).where('id', '=', id).where('unverifiedFingerprint', '=', fingerprint).executeTakeFirst();
    // A concurrent verify of the same certificate did it first: one change, recorded once.
    if (Number(res.numUpdatedRows) === 1) await recordRowChange(tx, ctx, 'authenticators', 'updated', id, a as never, { ...a, ...changed }, 'extend-verify');
  });
}
