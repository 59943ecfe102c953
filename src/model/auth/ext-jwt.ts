// method=ext-jwt: a JWT from an external identity provider, verified against one of our signers.
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, importX509, jwtVerify, type JWTVerifyGetKey, type CryptoKey } from 'jose';
import type { Ctx } from '../context.js';
import { ApiError, invalidAuth } from '../errors.js';
import type { AuthPolicy } from '../resources/auth-policies.js';
import { fromJson, isSet } from '../../store/json.js';
import type { ExternalJwtSignerRow } from '../../store/schema.js';
import type { AuthenticateInput } from './authenticate.js';
import { openSession } from './authenticate.js';

// One remote key set per URL: jose caches the keys and refetches when a token names an unknown kid.
const remoteSets = new Map<string, JWTVerifyGetKey>();

function keyOf(signer: ExternalJwtSignerRow, alg: string): Promise<CryptoKey | Uint8Array> | JWTVerifyGetKey {
  if (signer.certPem) return importX509(signer.certPem, alg);
  const url = signer.jwksEndpoint!;
  let set = remoteSets.get(url);
  if (!set) {
    set = createRemoteJWKSet(new URL(url), { timeoutDuration: 5000, cooldownDuration: 1000 });
    remoteSets.set(url, set);
  }
  return set;
}

export async function authenticateExtJwt(ctx: Ctx, authorization: string | undefined, input: AuthenticateInput, ipAddress: string) {
  const token = authorization && /^bearer /i.test(authorization) ? authorization.slice(7).trim() : '';
  if (!token) throw new ApiError(401, 'INVALID_AUTH', 'The ext-jwt method needs the JWT in the Authorization header (Bearer)');
  let iss: string;
  let alg: string;
  try {
    iss = String(decodeJwt(token).iss ?? '');
    alg = decodeProtectedHeader(token).alg ?? '';
  } catch {
    throw invalidAuth();
  }
  const signers = await ctx.store.db.selectFrom('externalJwtSigners').selectAll().where('issuer', '=', iss).where('enabled', '=', 1).execute();
  for (const signer of signers) {
    let payload: Record<string, unknown>;
    try {
      const key = keyOf(signer, alg);
      const options = { issuer: signer.issuer, audience: signer.audience || undefined, currentDate: ctx.clock.now() };
      payload = (typeof key === 'function' ? await jwtVerify(token, key, options) : await jwtVerify(token, await key, options)).payload;
    } catch {
      continue;
    }
    const claim = payload[signer.claimsProperty || 'sub'];
    if (typeof claim !== 'string' || !claim) throw invalidAuth();
    const identity = await ctx.store.db
      .selectFrom('identities as i')
      .innerJoin('authPolicies as p', 'p.id', 'i.authPolicyId')
      .select(['i.id', 'p.primaryJson'])
      .where(isSet(signer.useExternalId) ? 'i.externalId' : 'i.id', '=', claim)
      .executeTakeFirst();
    if (!identity) throw invalidAuth();
    const extJwt = fromJson<AuthPolicy['primary']>(identity.primaryJson, {} as AuthPolicy['primary']).extJwt;
    if (!extJwt?.allowed || (extJwt.allowedSigners?.length && !extJwt.allowedSigners.includes(signer.id))) throw invalidAuth();
    return openSession(ctx, { identityId: identity.id, authenticatorId: signer.id, ipAddress, input });
  }
  throw invalidAuth();
}
