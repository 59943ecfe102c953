// POST /enroll/token (2.x edge API): an external identity provider's JWT enrolls a new identity, just in
// time, as upstream's EnrollModuleToken does (controller/model/enrollment_mod_token.go, v2.0.3). The JWT
// is verified by the signer that issued it (named by the ziti-token-issuer-id header, or found by its iss)
// with its issuer AND audience checked either way (GHSA-4h58-w989-xgg4), the signer must allow the kind
// of enrolment (enrollToCertEnabled with a CSR, enrollToTokenEnabled without), and so must the auth
// policy the identity will have (the signer's enrollAuthPolicyId, or the default one). The identity is
// named by the signer's enrollNameClaimsSelector, takes its role attributes from
// enrollAttributeClaimsSelector and its externalId from the claim that identifies it (claimsProperty),
// which also makes a second enrolment of the same subject a 409. With a CSR it gets a certificate from
// the network's CA; without, it logs in with the signer's JWTs (method ext-jwt; the signer's
// useExternalId makes the login find it by that externalId).
import { decodeJwt, type JWTPayload } from 'jose';
import type { Ctx } from '../context.js';
import { createIn, writeTx } from '../crud.js';
import { ApiError, conflict } from '../errors.js';
import { newId } from '../ids.js';
import { verifiedBySigner } from '../auth/ext-jwt.js';
import type { AuthPolicy } from '../resources/auth-policies.js';
import { DEFAULT_AUTH_POLICY_ID, identities } from '../resources/identities.js';
import { fromJson, isSet } from '../../store/json.js';
import type { ExternalJwtSignerRow } from '../../store/schema.js';
import { signClientCsr } from './client-certs.js';
import { addCertAuthenticator } from './enroll.js';

/** Upstream's answers (controller/apierror/messages.go). */
const invalidToken = () => new ApiError(400, 'INVALID_ENROLLMENT_TOKEN', 'The supplied token is not valid');
const notAllowed = (why: string) => conflict('INVALID_ENROLLMENT_NOT_ALLOWED', `The configuration does not allow this enrollment: ${why}`);

/**
 * A claim by JSON pointer (RFC 6901), a bare name being the root property's pointer ("sub" is "/sub"), as
 * upstream resolves claims selectors. Undefined when it leads nowhere.
 */
export function claimAt(claims: JWTPayload, selector: string): unknown {
  const pointer = selector.startsWith('/') ? selector : `/${selector}`;
  let at: unknown = claims;
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(at) && /^(0|[1-9]\d*)$/.test(key)) at = at[Number(key)];
    else if (at && typeof at === 'object' && !Array.isArray(at) && Object.prototype.hasOwnProperty.call(at, key)) at = (at as Record<string, unknown>)[key];
    else return undefined;
  }
  return at;
}

/** Role attributes from a claim: a string is one, an array of strings are several; absent or null is none. */
function attributesAt(claims: JWTPayload, selector: string): string[] {
  if (!selector) return [];
  const v = claimAt(claims, selector);
  if (v === undefined || v === null) return [];
  if (typeof v === 'string') return v ? [v] : [];
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return [...new Set(v.filter(Boolean) as string[])];
  // Upstream refuses a claim of another shape.
  throw invalidToken();
}

async function signerFor(ctx: Ctx, token: string, issuerId: string | undefined): Promise<ExternalJwtSignerRow> {
  const q = ctx.store.db.selectFrom('externalJwtSigners').selectAll().where('enabled', '=', 1);
  if (issuerId) {
    const s = await q.where('id', '=', issuerId).executeTakeFirst();
    if (!s) throw invalidToken();
    return s;
  }
  let iss: string;
  try {
    iss = String(decodeJwt(token).iss ?? '');
  } catch {
    throw invalidToken();
  }
  const s = iss ? await q.where('issuer', '=', iss).executeTakeFirst() : undefined;
  if (!s) throw invalidToken();
  return s;
}

export async function enrollByToken(ctx: Ctx, o: { authorization: string | undefined; issuerId?: string; clientCsr?: string }): Promise<{ cert?: string; ca?: string }> {
  const token = o.authorization && /^bearer /i.test(o.authorization) ? o.authorization.slice(7).trim() : '';
  if (!token) throw invalidToken();
  const signer = await signerFor(ctx, token, o.issuerId || undefined);
  // The issuer and the audience are checked whichever way the signer was found (GHSA-4h58-w989-xgg4).
  const claims = await verifiedBySigner(ctx, signer, token, { requireAudience: true });
  if (!claims) throw invalidToken();
  const externalId = claimAt(claims, signer.claimsProperty || 'sub');
  const name = claimAt(claims, signer.enrollNameClaimsSelector || '/sub');
  if (typeof externalId !== 'string' || !externalId.trim() || typeof name !== 'string' || !name) throw invalidToken();
  const roleAttributes = attributesAt(claims, signer.enrollAttributeClaimsSelector ?? '');
  const enrolled = await ctx.store.db.selectFrom('identities').select('id').where('externalId', '=', externalId.trim()).executeTakeFirst();
  if (enrolled) throw conflict('ENROLLMENT_IDENTITY_ALREADY_ENROLLED', 'The token supplied for this enrollment already has a matching identity, cannot enroll a new identity');

  const csr = o.clientCsr?.trim() ? o.clientCsr : undefined;
  if (csr && !isSet(signer.enrollToCertEnabled)) throw notAllowed(`the external JWT signer '${signer.name}' does not enroll identities to certificates (enrollToCertEnabled)`);
  if (!csr && !isSet(signer.enrollToTokenEnabled)) throw notAllowed(`the external JWT signer '${signer.name}' does not enroll identities to its tokens (enrollToTokenEnabled)`);
  const authPolicyId = signer.enrollAuthPolicyId || DEFAULT_AUTH_POLICY_ID;
  const policy = await ctx.store.db.selectFrom('authPolicies').select('primaryJson').where('id', '=', authPolicyId).executeTakeFirst();
  if (!policy) throw new ApiError(500, 'UNHANDLED', `The auth policy '${authPolicyId}' of the external JWT signer's enrolments is missing`);
  const primary = fromJson<Partial<AuthPolicy['primary']>>(policy.primaryJson, {});
  if (csr && !primary.cert?.allowed) throw notAllowed(`the auth policy '${authPolicyId}' does not allow certificate logins`);
  if (!csr) {
    if (!primary.extJwt?.allowed) throw notAllowed(`the auth policy '${authPolicyId}' does not allow external JWT logins`);
    const allowed = primary.extJwt.allowedSigners ?? [];
    if (allowed.length && !allowed.includes(signer.id)) throw notAllowed(`the auth policy '${authPolicyId}' does not allow logins with the external JWT signer '${signer.name}'`);
  }

  const id = newId();
  if (ctx.enrolling) ctx.enrolling.identityId = id;
  // Slow work (signing) before the transaction.
  const pem = csr ? (await signClientCsr(ctx, csr, id)).pem : undefined;
  await writeTx(ctx, async (tx) => {
    // Again inside the write: two enrolments of one subject at once make one identity (on SQLite; on
    // PostgreSQL a unique name keeps the second out when the name claim is the same).
    if (await tx.selectFrom('identities').select('id').where('externalId', '=', externalId.trim()).executeTakeFirst()) {
      throw conflict('ENROLLMENT_IDENTITY_ALREADY_ENROLLED', 'The token supplied for this enrollment already has a matching identity, cannot enroll a new identity');
    }
    await createIn(tx, ctx, identities, { name, type: 'Default', isAdmin: false, authPolicyId, externalId: externalId.trim(), roleAttributes }, id);
    if (pem) await addCertAuthenticator(tx, ctx, id, pem, { network: true });
  });
  return pem ? { cert: pem, ca: ctx.pki.caBundlePem } : {};
}
