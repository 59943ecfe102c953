// The token endpoint's grants, and revocation, introspection, userinfo and end of session:
// - authorization_code (PKCE S256 required): opens the JWT API session (a row in apiSessions, so logout,
//   deletion, disabling, revocations, expiry and the data plane's sweeps apply to it) and answers access,
//   refresh and ID tokens, and session_cert when the login sent a CSR;
// - refresh_token (the C SDK, client openziti, Basic auth allowed): single use, rotated: the token's id is
//   spent (a JTI revocation until it would have expired) in the statement that accepts it, as upstream
//   revokes a refreshed token;
// - RFC 8693 token exchange (the Go SDK, client native): a refresh or access token for an access, refresh or
//   ID token. The subject token stays valid, as upstream's does: the Go SDK exchanges the same refresh
//   token twice in a row (once for tokens, once for an ID token).
// A token bound to certificates (z_cfs: a cert login, or a session certificate from a CSR) is refreshed or
// exchanged only over TLS with one of them, as upstream's verifyCertBinding.
import type { X509Certificate } from 'node:crypto';
import { createHash } from 'node:crypto';
import type { Ctx } from '../../context.js';
import { iso } from '../../clock.js';
import { apiSessionCreated } from '../../events/emit.js';
import { safeEqual } from '../../ids.js';
import { fingerprintOf } from '../../pki/certs.js';
import { recordMfaPassed } from '../../posture/evaluate.js';
import { writeTx } from '../../crud.js';
import { isSet } from '../../../store/json.js';
import { createApiSession, hasExpired } from '../api-sessions.js';
import { loginState, recordClientInfo } from '../authenticate.js';
import { isRevoked, SPENT_REFRESH_TOKEN_TAGS } from '../revocations.js';
import { endApiSessions } from '../revoke.js';
import { issueSessionCertificate } from '../session-certificates.js';
import { invalidClient, invalidGrant, invalidRequest, OidcError } from './errors.js';
import { noteSession, takeCode, TOTP_AMR, type AuthRequest } from './requests.js';
import { GRANT, isClient, lifetimes, SCOPES, TOKEN_TYPE, URN, type ClientId } from './settings.js';
import { accessToken, idToken, InvalidToken, peek, refreshToken, verifyToken, type CustomClaims, type Issue, type TokenClaims } from './tokens.js';

export interface TokenCall {
  /** The form's fields (first value of each). */
  form: Record<string, string | undefined>;
  /** Client id and secret from HTTP Basic, when sent. */
  basic?: { id: string; secret: string };
  issuer: string;
  ipAddress: string;
  /** The certificates presented on the TLS connection. */
  presented: X509Certificate[];
}

const str = (v: unknown) => (typeof v === 'string' && v ? v : undefined);

/** The calling client: public, so its id is all there is (a secret sent along is ignored, as upstream's AuthMethodNone). */
function clientOf(call: TokenCall): ClientId {
  const id = str(call.form.client_id) ?? call.basic?.id;
  if (call.basic && str(call.form.client_id) && call.basic.id !== call.form.client_id) throw invalidClient('client_id in the form and in the Authorization header differ');
  if (!isClient(id)) throw invalidClient(`client_id must be openziti or native, got '${id ?? ''}'`);
  return id;
}

export async function tokenRequest(ctx: Ctx, call: TokenCall): Promise<Record<string, unknown>> {
  const grant = call.form.grant_type;
  const client = clientOf(call);
  if (grant === GRANT.code) return codeGrant(ctx, call, client);
  if (grant === GRANT.refresh) return refreshGrant(ctx, call, client);
  if (grant === GRANT.exchange) return exchangeGrant(ctx, call, client);
  throw new OidcError(400, 'unsupported_grant_type', `grant_type must be ${Object.values(GRANT).join(', ')}`);
}

/** RFC 7636: BASE64URL(SHA256(verifier)) must equal the challenge. */
function checkPkce(verifier: string | undefined, challenge: string) {
  if (!verifier || !/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) throw invalidGrant('code_verifier is missing or malformed (43 to 128 characters of A-Z a-z 0-9 - . _ ~)');
  const computed = createHash('sha256').update(verifier).digest('base64url');
  if (!safeEqual(computed, challenge)) throw invalidGrant('code_verifier does not match the code_challenge');
}

interface Identity {
  name: string;
  isAdmin: boolean;
  externalId: string | null;
}

async function identityOf(ctx: Ctx, id: string): Promise<Identity> {
  const r = await ctx.store.db.selectFrom('identities').select(['name', 'isAdmin', 'externalId']).where('id', '=', id).executeTakeFirst();
  if (!r) throw invalidGrant('the identity no longer exists');
  return { name: r.name, isAdmin: isSet(r.isAdmin), externalId: r.externalId ?? null };
}

/** The 2.x claims of a certificate login: an administrator asked for the certificate's extension (and a new key). */
const certStateOf = async (ctx: Ctx, authenticatorId: string | null) => {
  if (!authenticatorId) return { z_cer: false, z_ckrr: false, z_iccc: false };
  const r = (await ctx.store.db.selectFrom('authenticators').selectAll().where('id', '=', authenticatorId).where('method', '=', 'cert').executeTakeFirst().catch(() => undefined)) as Record<string, unknown> | undefined;
  return { z_cer: isSet(r?.isExtendRequested as number), z_ckrr: isSet(r?.isKeyRollRequested as number), z_iccc: false };
};

/** The answer's tokens: access always, refresh with offline_access, ID with openid. */
async function answer(ctx: Ctx, t: Issue, o: { refresh: boolean; sessionCert?: string }) {
  const access = await accessToken(ctx, t);
  const refresh = o.refresh ? await refreshToken(ctx, t) : undefined;
  const id = t.scopes.includes('openid') ? await idToken(ctx, t, access.token) : undefined;
  return {
    body: {
      access_token: access.token,
      token_type: 'Bearer',
      ...(refresh ? { refresh_token: refresh.token } : {}),
      expires_in: Math.max(0, Math.round((access.expiresAt.getTime() - ctx.clock.now().getTime()) / 1000)),
      ...(id ? { id_token: id } : {}),
      scope: t.scopes.join(' '),
      ...(o.sessionCert ? { session_cert: o.sessionCert } : {}),
    },
    refreshExpiresAt: refresh?.expiresAt,
    accessExpiresAt: access.expiresAt,
  };
}

async function codeGrant(ctx: Ctx, call: TokenCall, client: ClientId) {
  const r: AuthRequest = await takeCode(ctx, call.form.code);
  if (r.clientId !== client) throw invalidGrant('the code was issued to another client');
  checkPkce(call.form.code_verifier, r.codeChallenge);
  if (call.form.redirect_uri !== r.redirectUri) throw invalidGrant('redirect_uri does not correspond to the authorization request');
  const identityId = r.identityId!;
  let state: Awaited<ReturnType<typeof loginState>>;
  try {
    state = await loginState(ctx, identityId);
  } catch {
    throw invalidGrant('the identity may not log in');
  }
  const identity = await identityOf(ctx, identityId);
  const input = { sdkInfo: r.sdkInfo ? JSON.parse(r.sdkInfo) : undefined, envInfo: r.envInfo ? JSON.parse(r.envInfo) : undefined, configTypes: r.configTypes };
  await recordClientInfo(ctx, identityId, input);
  const withRefresh = r.scopes.includes('offline_access');
  const { refreshMs, accessMs } = lifetimes(ctx);
  const now = ctx.clock.now();
  const totp = r.amr.includes(TOTP_AMR);
  const session = await createApiSession(ctx, {
    identityId,
    authenticatorId: r.authenticatorId ?? '',
    ipAddress: call.ipAddress,
    configTypes: r.configTypes,
    isMfaRequired: state.isMfaRequired || !!r.totpRequired,
    isMfaComplete: totp,
    isCertExtendable: !!r.isCertExtendable,
    expiresAt: new Date(now.getTime() + (withRefresh ? refreshMs : accessMs)),
  });
  await noteSession(ctx, r.id, session.id);
  if (totp) await recordMfaPassed(ctx, session.id, identityId);
  const cfs = r.certFingerprint ? [r.certFingerprint] : [];
  let sessionCert: string | undefined;
  if (r.csrPem) {
    // A CSR that cannot be signed leaves no session behind.
    const made = await signSessionCsr(ctx, session.id, identityId, r.csrPem).catch(async (e) => {
      await ctx.store.db.deleteFrom('apiSessions').where('id', '=', session.id).execute();
      throw e;
    });
    cfs.push(made.fingerprint);
    sessionCert = made.pem;
  }
  const custom: CustomClaims = {
    z_asid: session.id, z_aid: client, z_t: TOKEN_TYPE.access, z_ct: r.configTypes, z_cfs: cfs, ...(r.certFingerprint ? { z_acf: r.certFingerprint } : {}),
    z_sdk: input.sdkInfo ?? null, z_env: input.envInfo ?? null, z_ra: call.ipAddress, z_ice: !!r.isCertExtendable, z_authid: r.authenticatorId ?? undefined,
    ...(await certStateOf(ctx, r.authenticatorId)),
  };
  const t: Issue = { issuer: call.issuer, clientId: client, subject: identityId, audience: [client], scopes: r.scopes, amr: r.amr, authTime: new Date(r.authTime ?? iso(now)), custom, identity, nonce: r.nonce || undefined };
  const out = await answer(ctx, t, { refresh: withRefresh, sessionCert });
  apiSessionCreated(ctx, { id: session.id, identityId, ipAddress: call.ipAddress }, 'created', 'jwt');
  return out.body;
}

async function signSessionCsr(ctx: Ctx, apiSessionId: string, identityId: string, csrPem: string) {
  try {
    // The certificate lasts as long as the session can without a refresh.
    return await issueSessionCertificate(ctx, { apiSessionId, identityId, csrPem, hours: Math.max(1, lifetimes(ctx).refreshMs / 3_600_000) });
  } catch (e) {
    throw invalidRequest(`invalid CSR: ${(e as Error).message}`);
  }
}

/** A refresh or access token of this network, live, its API session live, and bound to the caller's certificate if it is bound to any. */
async function subject(ctx: Ctx, call: TokenCall, token: string | undefined, type: string): Promise<{ claims: TokenClaims; session: { id: string; identityId: string; expiresAt: string | null } }> {
  if (!token) throw invalidRequest(type === TOKEN_TYPE.refresh ? 'refresh_token is required' : 'subject_token is required');
  let claims: TokenClaims;
  try {
    claims = await verifyToken(ctx, token, type);
  } catch (e) {
    if (e instanceof InvalidToken) throw invalidGrant(`${type === TOKEN_TYPE.refresh ? 'refresh' : 'access'} token: ${e.message}`);
    throw e;
  }
  if (await isRevoked(ctx, { jti: claims.jti, apiSessionId: claims.z_asid, identityId: claims.sub, issuedAt: (claims.iat ?? 0) * 1000 })) throw invalidGrant('the token has been revoked');
  const cfs = Array.isArray(claims.z_cfs) ? claims.z_cfs : [];
  if (cfs.length && !call.presented.some((c) => cfs.includes(fingerprintOf(c.toString())))) {
    throw new OidcError(403, 'access_denied', 'peer certificate fingerprint does not match token');
  }
  const row = await ctx.store.db
    .selectFrom('apiSessions as s')
    .innerJoin('identities as i', 'i.id', 's.identityId')
    .select(['s.id', 's.identityId', 's.expiresAt', 's.lastActivityAt', 'i.disabled', 'i.disabledUntil'])
    .where('s.id', '=', claims.z_asid)
    .executeTakeFirst();
  const now = ctx.clock.now().getTime();
  if (!row || row.identityId !== claims.sub || hasExpired(ctx, row, now)) throw invalidGrant('the API session of this token has ended: log in again');
  if (isSet(row.disabled) && (!row.disabledUntil || Date.parse(row.disabledUntil) > now)) throw invalidGrant('the identity is disabled');
  return { claims, session: row };
}

/** The Issue for new tokens of the same session: the session's claims carried over, the identity's read afresh. */
async function reissue(ctx: Ctx, call: TokenCall, claims: TokenClaims, client: ClientId, scopes: string[], csrPem: string | undefined): Promise<{ t: Issue; sessionCert?: string }> {
  const identity = await identityOf(ctx, String(claims.sub));
  const keys: (keyof CustomClaims)[] = ['z_asid', 'z_aid', 'z_ct', 'z_cfs', 'z_acf', 'z_sdk', 'z_env', 'z_ra', 'z_ice', 'z_cae', 'z_authid', 'z_cer', 'z_ckrr', 'z_iccc'];
  const custom = Object.fromEntries(keys.filter((k) => claims[k] !== undefined).map((k) => [k, claims[k]])) as unknown as CustomClaims;
  custom.z_cfs = Array.isArray(custom.z_cfs) ? custom.z_cfs : [];
  let sessionCert: string | undefined;
  // A CSR renews the session certificate only for a session bound to certificates (upstream: PoP mode).
  if (csrPem && custom.z_cfs.length) {
    const made = await signSessionCsr(ctx, claims.z_asid, String(claims.sub), csrPem);
    custom.z_cfs = [...(custom.z_acf ? [custom.z_acf] : []), made.fingerprint];
    sessionCert = made.pem;
  }
  const aud = (Array.isArray(claims.aud) ? claims.aud : [claims.aud]).filter((a): a is string => typeof a === 'string');
  return {
    t: { issuer: call.issuer, clientId: client, subject: String(claims.sub), audience: aud.length ? aud : [client], scopes, amr: Array.isArray(claims.amr) ? claims.amr : [], authTime: new Date((claims.auth_time ?? claims.iat ?? 0) * 1000), custom, identity },
    sessionCert,
  };
}

/** The scopes of a refresh: those asked for, each one the original grant had (none asked: the original's). */
function narrowed(asked: string | undefined, granted: string[]): string[] {
  const want = (asked ?? '').split(/\s+/).filter(Boolean);
  if (!want.length) return granted;
  for (const s of want) if (!granted.includes(s)) throw new OidcError(400, 'invalid_scope', `the scope ${s} was not granted to this token`);
  return want;
}

async function extend(ctx: Ctx, sessionId: string, until: Date | undefined) {
  const now = iso(ctx.clock.now());
  await ctx.store.db.updateTable('apiSessions').set({ lastActivityAt: now, ...(until ? { expiresAt: iso(until) } : {}) }).where('id', '=', sessionId).execute();
}

/** Spend a refresh token: its id revoked until it would have expired; false when it was already spent. */
async function spend(ctx: Ctx, claims: TokenClaims): Promise<boolean> {
  const now = iso(ctx.clock.now());
  const res = await ctx.store.db
    .insertInto('revocations')
    .values({ id: String(claims.jti), createdAt: now, updatedAt: now, tags: SPENT_REFRESH_TOKEN_TAGS, type: 'JTI', expiresAt: iso(new Date((claims.exp ?? 0) * 1000)), issuedBefore: now })
    .onConflict((oc) => oc.column('id').doNothing())
    .executeTakeFirst();
  return Number(res.numInsertedOrUpdatedRows ?? 0) === 1;
}

async function refreshGrant(ctx: Ctx, call: TokenCall, client: ClientId) {
  const { claims, session } = await subject(ctx, call, call.form.refresh_token, TOKEN_TYPE.refresh);
  if ((claims.client_id ?? claims.z_aid) !== client) throw invalidGrant('client_id does not match original grant');
  const scopes = narrowed(call.form.scope, Array.isArray(claims.scopes) ? claims.scopes : ['openid', 'offline_access']);
  if (!claims.jti || !(await spend(ctx, claims))) throw invalidGrant('the refresh token has already been used');
  const { t, sessionCert } = await reissue(ctx, call, claims, client, scopes, call.form.csr_pem);
  const out = await answer(ctx, t, { refresh: true, sessionCert });
  await extend(ctx, session.id, out.refreshExpiresAt);
  apiSessionCreated(ctx, { id: session.id, identityId: session.identityId, ipAddress: call.ipAddress }, 'refreshed', 'jwt');
  return out.body;
}

async function exchangeGrant(ctx: Ctx, call: TokenCall, client: ClientId) {
  const f = call.form;
  const subjectType = f.subject_token_type;
  if (subjectType !== URN.refresh && subjectType !== URN.access) throw invalidRequest(`subject_token_type must be ${URN.refresh} or ${URN.access}`);
  const requested = f.requested_token_type || URN.refresh;
  const allowed = subjectType === URN.refresh ? [URN.refresh, URN.access, URN.id] : [URN.access, URN.id];
  if (!allowed.includes(requested as never)) throw invalidRequest(`exchanging a ${subjectType === URN.refresh ? 'refresh' : 'access'} token for ${requested} is not supported`);
  for (const aud of (f.audience ?? '').split(/\s+/).filter(Boolean)) if (!isClient(aud)) throw invalidRequest(`invalid audience requested [${aud}]`);
  const { claims, session } = await subject(ctx, call, f.subject_token, subjectType === URN.refresh ? TOKEN_TYPE.refresh : TOKEN_TYPE.access);
  const granted = Array.isArray(claims.scopes) ? claims.scopes.filter((s) => (SCOPES as readonly string[]).includes(s)) : ['openid'];
  const scopes = narrowed(f.scope, granted);
  const { t, sessionCert } = await reissue(ctx, call, claims, client, scopes, f.csr_pem);
  const now = ctx.clock.now().getTime();
  if (requested === URN.id) {
    const token = await idToken(ctx, t);
    return { access_token: token, issued_token_type: URN.id, token_type: 'N_A', expires_in: Math.round(lifetimes(ctx).idMs / 1000), scope: scopes.join(' '), ...(sessionCert ? { session_cert: sessionCert } : {}) };
  }
  const access = await accessToken(ctx, t);
  const refresh = requested === URN.refresh ? await refreshToken(ctx, t) : undefined;
  await extend(ctx, session.id, refresh?.expiresAt);
  apiSessionCreated(ctx, { id: session.id, identityId: session.identityId, ipAddress: call.ipAddress }, 'exchanged', 'jwt');
  return {
    access_token: access.token,
    issued_token_type: requested,
    token_type: 'Bearer',
    expires_in: Math.max(0, Math.round((access.expiresAt.getTime() - now) / 1000)),
    ...(refresh ? { refresh_token: refresh.token } : {}),
    scope: scopes.join(' '),
    ...(sessionCert ? { session_cert: sessionCert } : {}),
  };
}

/**
 * RFC 7009: a refresh token is spent (it can no longer be used), an access token revoked by its id. An
 * unknown or invalid token is no error (the answer must not tell which tokens exist).
 */
export async function revokeToken(ctx: Ctx, token: string | undefined, call: Pick<TokenCall, 'form' | 'basic'>): Promise<void> {
  clientOf(call as TokenCall);
  if (!token) throw invalidRequest('token is required');
  for (const type of [TOKEN_TYPE.refresh, TOKEN_TYPE.access]) {
    const claims = await verifyToken(ctx, token, type).catch(() => undefined);
    if (!claims?.jti) continue;
    const now = iso(ctx.clock.now());
    await ctx.store.db
      .insertInto('revocations')
      .values({ id: String(claims.jti), createdAt: now, updatedAt: now, tags: '{}', type: 'JTI', expiresAt: iso(new Date((claims.exp ?? 0) * 1000)), issuedBefore: now })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    return;
  }
}

/** RFC 7662: whether an access or refresh token is live, and what it says. */
export async function introspect(ctx: Ctx, token: string | undefined): Promise<Record<string, unknown>> {
  if (!token) return { active: false };
  for (const type of [TOKEN_TYPE.access, TOKEN_TYPE.refresh]) {
    const claims = await verifyToken(ctx, token, type).catch(() => undefined);
    if (!claims) continue;
    if (await isRevoked(ctx, { jti: claims.jti, apiSessionId: claims.z_asid, identityId: claims.sub, issuedAt: (claims.iat ?? 0) * 1000 })) return { active: false };
    const row = await ctx.store.db.selectFrom('apiSessions').select(['id', 'expiresAt', 'lastActivityAt']).where('id', '=', claims.z_asid).executeTakeFirst();
    if (!row || hasExpired(ctx, row)) return { active: false };
    return {
      active: true, token_type: type === TOKEN_TYPE.access ? 'Bearer' : 'refresh_token', client_id: claims.client_id, sub: claims.sub, aud: claims.aud, iss: claims.iss,
      exp: claims.exp, iat: claims.iat, nbf: claims.nbf, jti: claims.jti, scope: Array.isArray(claims.scopes) ? claims.scopes.join(' ') : undefined, z_asid: claims.z_asid, z_t: claims.z_t,
    };
  }
  return { active: false };
}

/** OIDC userinfo for a live access token (already checked by the caller): who it is. */
export async function userinfo(ctx: Ctx, claims: TokenClaims): Promise<Record<string, unknown>> {
  const identity = await identityOf(ctx, String(claims.sub));
  return { sub: claims.sub, name: identity.name, z_ia: identity.isAdmin, ...(identity.externalId ? { z_eid: identity.externalId } : {}) };
}

/**
 * RP-initiated logout: the API session the ID token hint names ends (upstream revokes it); without a
 * usable hint nothing ends. The hint's signature is checked but not its expiry (OIDC allows an expired hint).
 */
export async function endSession(ctx: Ctx, idTokenHint: string | undefined): Promise<boolean> {
  if (!idTokenHint) return false;
  const claims = peek(idTokenHint);
  const asid = typeof claims?.z_asid === 'string' ? claims.z_asid : undefined;
  if (!asid || !claims?.sub) return false;
  // Signed by us? Verify as an access-token-shaped JWT ignoring z_t and expiry: re-sign check via jose.
  const { jwtVerify, decodeProtectedHeader } = await import('jose');
  const kid = decodeProtectedHeader(idTokenHint).kid;
  const key = ctx.pki.signingKeys.find((k) => k.kid === kid);
  if (!key) return false;
  try {
    const { createPublicKey } = await import('node:crypto');
    await jwtVerify(idTokenHint, createPublicKey(key.key), { algorithms: ['RS256', 'ES256', 'ES384', 'ES512'], currentDate: new Date(0) });
  } catch {
    return false;
  }
  const ended = await writeTx(ctx, (tx) => endApiSessions(tx, ctx, { apiSessionId: asid }, 'logout'));
  return ended > 0;
}
