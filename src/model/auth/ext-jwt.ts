// method=ext-jwt: a JWT from an external identity provider, verified against one of our signers.
import { decodeJwt, decodeProtectedHeader, importX509, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import type { Ctx } from '../context.js';
import { ApiError, loginRefused as refused } from '../errors.js';
import type { AuthPolicy } from '../resources/auth-policies.js';
import { fromJson, isSet, sortedStrings } from '../../store/json.js';
import type { ExternalJwtSignerRow } from '../../store/schema.js';
import type { AuthenticateInput, Finish } from './login.js';
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

export async function authenticateExtJwt<T>(ctx: Ctx, token: string | undefined, input: AuthenticateInput, ipAddress: string, finish: Finish<T>) {
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

/** How a second-factor JWT turned out: given, or why not (upstream's WWW-Authenticate errors). */
export type SecondaryResult = 'ok' | 'missing' | 'expired' | 'invalid';

/** The bearer tokens of Authorization header values (`Bearer x`, several headers, or several in one separated by commas), at most 3 as upstream. */
export function bearerTokens(values: (string | undefined)[]): string[] {
  const out: string[] = [];
  for (const v of values) {
    if (!v) continue;
    for (const part of v.split(',')) {
      const m = /^\s*bearer\s+(\S+)\s*$/i.exec(part);
      if (m) out.push(m[1]);
    }
  }
  return out.slice(0, 3);
}

/**
 * An auth policy's secondary.requireExtJwtSigner (upstream model/authenticator_mod_ext_jwt.go
 * ProcessSecondary): among the request's bearer tokens, one that the signer (enabled) verifies and whose
 * claim names this identity, as a primary ext-jwt login would find it. 'expired' when the best candidate
 * from that signer's issuer is past its exp, 'invalid' for any other refusal, 'missing' without one.
 */
export async function checkSecondaryJwt(ctx: Ctx, signerId: string, identityId: string, tokens: string[]): Promise<SecondaryResult> {
  const signer = await ctx.store.db.selectFrom('externalJwtSigners').selectAll().where('id', '=', signerId).executeTakeFirst();
  if (!signer || !isSet(signer.enabled)) return tokens.length ? 'invalid' : 'missing';
  let result: SecondaryResult = 'missing';
  for (const token of tokens) {
    let claims: JWTPayload;
    try {
      claims = decodeJwt(token);
    } catch {
      continue;
    }
    if (claims.iss !== signer.issuer) continue;
    const payload = await verifiedBySigner(ctx, signer, token);
    if (!payload) {
      const expired = typeof claims.exp === 'number' && claims.exp * 1000 + CLOCK_SKEW_SECONDS * 1000 < ctx.clock.now().getTime();
      if (result !== 'expired') result = expired ? 'expired' : 'invalid';
      continue;
    }
    const claim = payload[signer.claimsProperty || 'sub'];
    if (typeof claim !== 'string' || !claim) {
      result = 'invalid';
      continue;
    }
    const identity = await ctx.store.db.selectFrom('identities').select('id').where(isSet(signer.useExternalId) ? 'externalId' : 'id', '=', claim).executeTakeFirst();
    // A JWT of someone else's does not stand for this identity's second factor.
    if (identity?.id === identityId) return 'ok';
    result = 'invalid';
  }
  return result;
}

/** The auth query of a session or an OIDC login that owes a JWT from `signerId` (upstream env.NewAuthQueryExtJwt). */
export async function extJwtAuthQuery(ctx: Ctx, signerId: string) {
  const s = await ctx.store.db.selectFrom('externalJwtSigners').select(['id', 'clientId', 'externalAuthUrl', 'scopes']).where('id', '=', signerId).executeTakeFirst();
  return { typeId: 'EXT-JWT', provider: 'url', id: signerId, httpUrl: s?.externalAuthUrl ?? '', clientId: s?.clientId ?? '', scopes: sortedStrings(s?.scopes) };
}

/** Upstream's WWW-Authenticate for a second-factor JWT not given (errorz.NewUnauthorizedSecondaryExtToken*). */
export async function secondaryChallenge(ctx: Ctx, signerId: string, result: Exclude<SecondaryResult, 'ok'>): Promise<string> {
  const s = await ctx.store.db.selectFrom('externalJwtSigners').select('issuer').where('id', '=', signerId).executeTakeFirst();
  const description = { missing: 'no matching token was provided', expired: 'token expired', invalid: 'token is invalid' }[result];
  return `Bearer realm="openziti-secondary-ext-jwt" error="${result}" error_description="${description}" id="${signerId}" issuer="${s?.issuer ?? ''}"`;
}
