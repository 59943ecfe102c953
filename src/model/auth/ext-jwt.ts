// method=ext-jwt: a JWT from an external identity provider, verified against one of our signers.
import { decodeJwt, decodeProtectedHeader, importX509, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import type { Ctx } from '../context.js';
import { ApiError, loginRefused as refused } from '../errors.js';
import type { AuthPolicy } from '../resources/auth-policies.js';
import { fromJson, isSet } from '../../store/json.js';
import type { ExternalJwtSignerRow } from '../../store/schema.js';
import type { AuthenticateInput, Finish } from './authenticate.js';
import { keySet, remoteKeys } from './jwks-cache.js';

/** How far the signer's clock may be ahead or behind ours when checking exp and nbf. */
export const CLOCK_SKEW_SECONDS = 30;

/** A certificate signer's key, or a resolver over a JWKS signer's key set (fetched through the SSRF guard). */
function keyOf(ctx: Ctx, signer: ExternalJwtSignerRow, alg: string): Promise<Awaited<ReturnType<typeof importX509>>> | JWTVerifyGetKey {
  if (signer.certPem) return importX509(signer.certPem, alg);
  return remoteKeys(signer.jwksEndpoint!, ctx.config.jwksPrivateHosts);
}

/**
 * The claims of `token` when `signer` signed it: its key (the certificate's, or the key set's key the
 * token names; a certificate signer with a kid takes only tokens naming it), current (exp required, nbf
 * honoured, CLOCK_SKEW_SECONDS either way), and issued by the signer's issuer for its audience. The
 * audience is checked when the signer names one, and always with `requireAudience` (enrolment by JWT,
 * GHSA-4h58-w989-xgg4: a key shared between audiences must not let one audience's tokens enroll into
 * another's network). Undefined for anything else, a key set the fetch guard refused included.
 */
export async function verifiedBySigner(ctx: Ctx, signer: ExternalJwtSignerRow, token: string, o: { requireAudience?: boolean } = {}): Promise<JWTPayload | undefined> {
  let alg: string;
  let kid: string | undefined;
  try {
    const header = decodeProtectedHeader(token);
    alg = header.alg ?? '';
    kid = header.kid;
  } catch {
    return undefined;
  }
  if (o.requireAudience && !signer.audience) return undefined;
  if (signer.certPem && signer.kid && kid !== signer.kid) return undefined;
  try {
    const key = keyOf(ctx, signer, alg);
    // exp is required (a token without one would be valid forever); nbf is honoured when present.
    const options = { issuer: signer.issuer, audience: signer.audience || undefined, currentDate: ctx.clock.now(), requiredClaims: ['exp'], clockTolerance: CLOCK_SKEW_SECONDS };
    if (typeof key === 'function') {
      const { payload } = await jwtVerify(token, key, options);
      // Without a kid, jose takes the set's only key of that algorithm: refuse it when the set names its keys.
      if (!kid && (await keySet(signer.jwksEndpoint!, ctx.config.jwksPrivateHosts)).jwks.keys.some((k) => k.kid)) return undefined;
      return payload;
    }
    return (await jwtVerify(token, await key, options)).payload;
  } catch {
    // A key set refused by the fetch guard (jwks-fetch.ts) ends here too: the client learns nothing of it.
    return undefined;
  }
}

export async function authenticateExtJwt<T>(ctx: Ctx, authorization: string | undefined, input: AuthenticateInput, ipAddress: string, finish: Finish<T>) {
  const token = authorization && /^bearer /i.test(authorization) ? authorization.slice(7).trim() : '';
  if (!token) throw refused('invalid-token', new ApiError(401, 'INVALID_AUTH', 'The ext-jwt method needs the JWT in the Authorization header (Bearer)'));
  let iss: string;
  try {
    iss = String(decodeJwt(token).iss ?? '');
    decodeProtectedHeader(token);
  } catch {
    throw refused('invalid-token');
  }
  if (!iss) throw refused('invalid-token');
  const signers = await ctx.store.db.selectFrom('externalJwtSigners').selectAll().where('issuer', '=', iss).where('enabled', '=', 1).execute();
  for (const signer of signers) {
    const payload = await verifiedBySigner(ctx, signer, token);
    if (!payload) continue;
    const claim = payload[signer.claimsProperty || 'sub'];
    if (typeof claim !== 'string' || !claim) throw refused('invalid-token');
    const identity = await ctx.store.db
      .selectFrom('identities as i')
      .innerJoin('authPolicies as p', 'p.id', 'i.authPolicyId')
      .select(['i.id', 'p.primaryJson'])
      .where(isSet(signer.useExternalId) ? 'i.externalId' : 'i.id', '=', claim)
      .executeTakeFirst();
    if (!identity) throw refused('unknown-credential');
    const extJwt = fromJson<AuthPolicy['primary']>(identity.primaryJson, {} as AuthPolicy['primary']).extJwt;
    if (!extJwt?.allowed || (extJwt.allowedSigners?.length && !extJwt.allowedSigners.includes(signer.id))) throw Object.assign(refused('method-not-allowed'), { identityId: identity.id, authenticatorId: signer.id });
    return finish(ctx, { identityId: identity.id, authenticatorId: signer.id, ipAddress, input });
  }
  // No enabled signer of that issuer verifies it (signature, expiry, audience).
  throw refused('invalid-token');
}
