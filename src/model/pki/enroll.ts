// The enrollment flows: a one-time token (or a trusted CA's certificate) becomes an authenticator.
// A token works once: the enrollment row is deleted in the same transaction that creates the
// authenticator, and only the transaction that deleted it goes on.
import type { X509Certificate } from 'node:crypto';
import type { Db, Tx } from '../../store/db.js';
import { iso } from '../clock.js';
import type { Ctx } from '../context.js';
import { writeTx } from '../crud.js';
import { ApiError, conflict } from '../errors.js';
import { hashSecret, newId } from '../ids.js';
import { hashPassword } from '../auth/password.js';
import { DEFAULT_AUTH_POLICY_ID } from '../resources/identities.js';
import { checkPasswordPolicy } from '../resources/auth-policies.js';
import { indexRoleAttributes } from '../../store/entity-index.js';
import { evaluateEntity } from '../policy/membership.js';
import { fromJson } from '../../store/json.js';
import type { EnrollmentRow } from '../../store/schema.js';
import { fingerprintOf } from './certs.js';
import { chainsTo, issuingCa, requireClientCert, requireCurrent, signClientCsr } from './client-certs.js';
import { X509Certificate as X509 } from 'node:crypto';
import { recordRowChange } from '../events/record.js';

// 400 INVALID_ENROLLMENT_TOKEN, as upstream answers an unknown token on every enroll operation
// (enrollment_manager.go); two of them (ottca, erott) declare no 404 at all.
const unknownToken = () => new ApiError(400, 'INVALID_ENROLLMENT_TOKEN', 'The enrollment token is unknown or has already been used');

/** The usable enrollment behind a token (not yet claimed). */
async function findEnrollment(db: Db | Tx, ctx: Ctx, token: unknown, methods: string[]): Promise<EnrollmentRow> {
  if (typeof token !== 'string' || !token) throw new ApiError(400, 'INVALID_ENROLLMENT_TOKEN', 'An enrollment token is required (query parameter token, or token in the body)');
  const row = await db.selectFrom('enrollments').selectAll().where('tokenHash', '=', hashSecret(token)).executeTakeFirst();
  if (!row) throw unknownToken();
  if (ctx.enrolling) {
    if (row.identityId) ctx.enrolling.identityId = row.identityId;
    if (row.routerId) ctx.enrolling.routerId = row.routerId;
  }
  if (!methods.includes(row.method)) throw new ApiError(400, 'INVALID_ENROLLMENT_TOKEN', `This token is for ${row.method} enrollment, not ${methods.join('/')}`);
  if (Date.parse(row.expiresAt) <= ctx.clock.now().getTime()) throw new ApiError(400, 'ENROLLMENT_EXPIRED', `This enrollment expired at ${row.expiresAt}: ask an administrator to refresh it`);
  return row;
}

/**
 * Check a token before slow work (signing) that must not run inside the write transaction; the
 * transaction then claims it with takeEnrollment, and only one claim of a token succeeds.
 */
export const peekEnrollment = (ctx: Ctx, token: unknown, methods: string[]) => findEnrollment(ctx.store.db, ctx, token, methods);

/** Claim the enrollment behind a token, once. */
export async function takeEnrollment(tx: Tx, ctx: Ctx, token: unknown, methods: string[]): Promise<EnrollmentRow> {
  const row = await findEnrollment(tx, ctx, token, methods);
  const gone = await tx.deleteFrom('enrollments').where('id', '=', row.id).where('tokenHash', '=', row.tokenHash).executeTakeFirst();
  if (Number(gone.numDeletedRows) !== 1) throw unknownToken();
  await recordRowChange(tx, ctx, 'enrollments', 'deleted', row.id, row as never, null, 'enroll');
  return row;
}

/** A certificate authenticator for the identity (409 when the certificate or the method is taken). */
export async function addCertAuthenticator(tx: Tx, ctx: Ctx, identityId: string, pem: string, o: { network: boolean; caId?: string | null }) {
  const fingerprint = fingerprintOf(pem);
  const inUse = await tx.selectFrom('authenticators').select('id').where('fingerprint', '=', fingerprint).executeTakeFirst();
  if (inUse) throw conflict('CERT_IN_USE', 'This certificate is already bound to an authenticator');
  const exists = await tx.selectFrom('authenticators').select('id').where('identityId', '=', identityId).where('method', '=', 'cert').executeTakeFirst();
  if (exists) throw conflict('MAX_AUTHENTICATOR_METHODS_REACHED', 'The identity already has a certificate authenticator');
  const now = iso(ctx.clock.now());
  const row = { id: newId(), createdAt: now, updatedAt: now, tags: '{}', identityId, method: 'cert', certPem: pem, fingerprint, isIssuedByNetwork: o.network ? 1 : 0, caId: o.caId ?? null };
  await tx.insertInto('authenticators').values(row as never).execute();
  await recordRowChange(tx, ctx, 'authenticators', 'created', row.id, null, row, 'enroll');
}

/** One-time token + CSR: a client certificate from the intermediate CA. */
export async function enrollOtt(ctx: Ctx, token: unknown, csrPem: unknown) {
  if (typeof csrPem !== 'string' || !csrPem.trim()) throw new ApiError(400, 'COULD_NOT_PROCESS_CSR', 'A PEM certificate signing request is required');
  const peeked = await peekEnrollment(ctx, token, ['ott']);
  const { pem } = await signClientCsr(ctx, csrPem, peeked.identityId!);
  return writeTx(ctx, async (tx) => {
    const e = await takeEnrollment(tx, ctx, token, ['ott']);
    await addCertAuthenticator(tx, ctx, e.identityId!, pem, { network: true });
    return { cert: pem, ca: ctx.pki.caBundlePem };
  });
}

/** One-time token + password: the username the administrator chose, the password the user chooses. */
export async function enrollUpdb(ctx: Ctx, token: unknown, password: string) {
  // The password is checked against the policy inside the transaction; hashing comes first (slow work outside it).
  const passwordHash = await hashPassword(password);
  await writeTx(ctx, async (tx) => {
    const e = await takeEnrollment(tx, ctx, token, ['updb']);
    await checkPasswordPolicy(ctx, tx, e.identityId!, password);
    const now = iso(ctx.clock.now());
    const row = { id: newId(), createdAt: now, updatedAt: now, tags: '{}', identityId: e.identityId!, method: 'updb', username: e.username, passwordHash, isIssuedByNetwork: 0 };
    await tx.insertInto('authenticators').values(row as never).execute();
    await recordRowChange(tx, ctx, 'authenticators', 'created', row.id, null, row, 'enroll');
  });
}

/** One-time token + a certificate from the enrollment's CA, presented on the TLS connection. */
export async function enrollOttCa(ctx: Ctx, token: unknown, presented: X509Certificate[]) {
  const leaf = requireClientCert(presented);
  requireCurrent(leaf, ctx.clock.now());
  await writeTx(ctx, async (tx) => {
    const e = await takeEnrollment(tx, ctx, token, ['ottca']);
    const ca = await tx.selectFrom('cas').selectAll().where('id', '=', e.caId!).executeTakeFirst();
    if (!ca || !ca.isVerified) throw new ApiError(400, 'ENROLLMENT_CA_NOT_VALID', 'The enrollment\'s CA is not verified: verify it first (POST /cas/{id}/verify)');
    if (!chainsTo(leaf, presented, new X509(ca.certPem), ctx.clock.now())) throw new ApiError(400, 'CERT_FAILED_VALIDATION', 'The presented certificate was not issued by the enrollment\'s CA');
    await addCertAuthenticator(tx, ctx, e.identityId!, leaf.toString(), { network: false, caId: ca.id });
  });
}

/** CA auto-enrollment: a certificate from a verified CA with auto-enrollment on creates its identity. */
export async function enrollCa(ctx: Ctx, presented: X509Certificate[]) {
  const leaf = requireClientCert(presented);
  requireCurrent(leaf, ctx.clock.now());
  const ca = await issuingCa(ctx, leaf, presented, 'isAutoCaEnrollmentEnabled');
  if (!ca) throw new ApiError(400, 'ENROLLMENT_NO_VALID_CAS', 'The presented certificate was not issued by a verified CA with auto-enrollment enabled');
  const commonName = /(?:^|\n)CN=([^\n]*)/.exec(leaf.subject)?.[1] ?? '';
  const made = await writeTx(ctx, async (tx) => {
    const id = newId();
    const base = ca.identityNameFormat
      .replace(/\[caName\]/g, ca.name)
      .replace(/\[caId\]/g, ca.id)
      .replace(/\[commonName\]/g, commonName)
      .replace(/\[identityId\]/g, id)
      .replace(/\[requestedName\]/g, commonName);
    let name = base || id;
    for (let n = 1; await tx.selectFrom('identities').select('id').where('name', '=', name).executeTakeFirst(); n++) name = `${base}-${String(n).padStart(6, '0')}`;
    const now = iso(ctx.clock.now());
    const roles = fromJson<string[]>(ca.identityRoles, []);
    const row = { id, name, typeId: 'Default', authPolicyId: DEFAULT_AUTH_POLICY_ID, isAdmin: 0, isDefaultAdmin: 0, roleAttributes: JSON.stringify(roles), createdAt: now, updatedAt: now, tags: '{}' };
    await tx.insertInto('identities').values(row as never).execute();
    await indexRoleAttributes(tx, id, roles);
    await evaluateEntity(tx, 'identity', id, roles);
    await recordRowChange(tx, ctx, 'identities', 'created', id, null, row, 'enroll');
    await addCertAuthenticator(tx, ctx, id, leaf.toString(), { network: false, caId: ca.id });
    return { id, name };
  });
  if (ctx.enrolling) ctx.enrolling.identityId = made.id;
  return made;
}
