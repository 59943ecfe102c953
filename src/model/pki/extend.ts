// Certificate extension of the calling identity: extend (a new certificate, the old one still valid)
// then extend-verify (the new one replaces the old).
import { X509Certificate } from 'node:crypto';
import type { SessionWithIdentity } from '../auth/api-sessions.js';
import { iso } from '../clock.js';
import type { Ctx } from '../context.js';
import { ApiError, notFound } from '../errors.js';
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

/**
 * The extension in force. It answers an administrator's request-extend (cleared here, as upstream clears
 * it), and records whether the new certificate has a new key (lastExtendRolledKeys).
 */
export async function verifyExtendedCertificate(ctx: Ctx, session: SessionWithIdentity | undefined, id: string, certPem: string) {
  const a = await ownCertAuthenticator(ctx, session, id);
  let fingerprint: string;
  try {
    fingerprint = fingerprintOf(new X509Certificate(certPem).toString());
  } catch {
    throw new ApiError(400, 'COULD_NOT_PARSE_BODY', 'clientCert is not a PEM certificate');
  }
  if (!a.unverifiedFingerprint || a.unverifiedFingerprint !== fingerprint) throw refuse('clientCert is not the certificate returned by the last extend request');
  const rolled = !a.certPem || !samePublicKey(a.certPem, a.unverifiedCertPem!);
  await writeTx(ctx, async (tx) => {
    const changed = {
      certPem: a.unverifiedCertPem, fingerprint, unverifiedCertPem: null, unverifiedFingerprint: null, updatedAt: iso(ctx.clock.now()),
      isExtendRequested: 0, isKeyRollRequested: 0, lastExtendRolledKeys: rolled ? 1 : 0,
    };
    const res = await tx.updateTable('authenticators').set(changed).where('id', '=', id).where('unverifiedFingerprint', '=', fingerprint).executeTakeFirst();
    // A concurrent verify of the same certificate did it first: one change, recorded once.
    if (Number(res.numUpdatedRows) === 1) await recordRowChange(tx, ctx, 'authenticators', 'updated', id, a as never, { ...a, ...changed }, 'extend-verify');
  });
}

function samePublicKey(a: string, b: string): boolean {
  try {
    const key = (pem: string) => new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' });
    return key(a).equals(key(b));
  } catch {
    return false;
  }
}

/**
 * POST /authenticators/{id}/request-extend: ask the identity's SDK to extend its certificate at its next
 * authentication (with a new key when `rollKeys`), as upstream's AuthenticatorManager.RequestExtend. The
 * SDK learns it from its API session (isCertExtendRequested, isCertKeyRollRequested) and extends through
 * /current-identity/authenticators/{id}/extend; extend-verify clears the request.
 */
export async function requestExtend(ctx: Ctx, id: string, rollKeys: boolean) {
  await writeTx(ctx, async (tx) => {
    const a = await tx.selectFrom('authenticators').selectAll().where('id', '=', id).executeTakeFirst();
    if (!a) throw notFound('authenticator', id);
    // Upstream's answer: 401 with the cause, whoever asks.
    if (a.method !== 'cert') throw new ApiError(401, 'UNAUTHORIZED', 'The authenticator is not a certificate authenticator: only certificates are extended');
    const now = iso(ctx.clock.now());
    const changed = { isExtendRequested: 1, isKeyRollRequested: rollKeys ? 1 : 0, extendRequestedAt: now, updatedAt: now };
    await tx.updateTable('authenticators').set(changed).where('id', '=', id).execute();
    await recordRowChange(tx, ctx, 'authenticators', 'updated', id, a as never, { ...a, ...changed }, 'request-extend');
  });
}

/**
 * What an API session says of its certificate (apiSessionDetail): whether an extension, and a new key,
 * is asked for the certificate authenticator it logged in with, and whether that login's chain failed to
 * resolve to the root (upstream's improperClientCertChain). All false for a session of another method.
 */
export async function certStateOf(ctx: Ctx, s: { authenticatorId: string; isCertExtendable: number }) {
  const none = { isCertExtendRequested: false, isCertKeyRollRequested: false, improperClientCertChain: false };
  if (!isSet(s.isCertExtendable)) return none;
  const a = await ctx.store.db
    .selectFrom('authenticators')
    .select(['isExtendRequested', 'isKeyRollRequested', 'lastAuthResolvedToRoot'])
    .where('id', '=', s.authenticatorId)
    .where('method', '=', 'cert')
    .executeTakeFirst();
  if (!a) return none;
  return { isCertExtendRequested: isSet(a.isExtendRequested), isCertKeyRollRequested: isSet(a.isKeyRollRequested), improperClientCertChain: !isSet(a.lastAuthResolvedToRoot) };
}
