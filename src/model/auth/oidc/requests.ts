// OIDC authorization requests: /oidc/authorize opens one, a login at /oidc/login/{method} proves who
// asks (the same credential checks, auth policies, lockouts and rate budgets as POST /authenticate),
// TOTP finishes it when the identity owes MFA, and the callback turns it into a one-time code (60 s,
// single use, bound to the PKCE challenge and the redirect URI) that the token endpoint exchanges.
// Rows live in the database, so any controller sharing it can serve any step.
import type { X509Certificate } from 'node:crypto';
import { iso } from '../../clock.js';
import type { Ctx } from '../../context.js';
import { ApiError } from '../../errors.js';
import { authenticationSucceeded } from '../../events/emit.js';
import { hashSecret, newSecret } from '../../ids.js';
import { fingerprintOf } from '../../pki/certs.js';
import { parseCsr } from '../../pki/csr.js';
import { fromJson } from '../../../store/json.js';
import type { OidcAuthRequestRow } from '../../../store/schema.js';
import { authenticate, loginState, type AuthenticateInput, type PrimaryAuth } from '../authenticate.js';
import { bearerTokens, checkSecondaryJwt, extJwtAuthQuery, secondaryChallenge } from '../ext-jwt.js';
import { failOnSession, forgetSession, MAX_PARTIAL_FAILURES } from '../mfa-budget.js';
import { checkCode, deleteMfa, getMfa, invalidCode, mfaDetail, startMfa, verifyMfa } from '../mfa.js';
import { invalidGrant, OidcError } from './errors.js';
import { AUTH_REQUEST_TTL_MS, CODE_TTL_MS, isAllowedRedirect, isClient, OIDC_PATH, requestedScopes } from './settings.js';

export const LOGIN_METHODS = ['password', 'cert', 'ext-jwt'] as const;
export type LoginMethod = (typeof LOGIN_METHODS)[number];
const PRIMARY = new Set<string>(LOGIN_METHODS);
export const TOTP_AMR = 'totp';
/** The amr of a second-factor JWT from an external signer, as upstream's (AuthMethodSecondaryExtJwt "ejs:<id>"). */
export const extJwtAmr = (signerId: string) => `ejs:${signerId}`;

/** An error to send back to the client's redirect URI (RFC 6749 4.1.2.1): the URI is known to be allowed. */
export class RedirectError extends OidcError {
  constructor(
    readonly redirectUri: string,
    readonly state: string,
    error: string,
    description: string,
  ) {
    super(302, error, description);
  }
  get location() {
    return withQuery(this.redirectUri, { error: this.error, error_description: this.description, ...(this.state ? { state: this.state } : {}) });
  }
}

function withQuery(uri: string, params: Record<string, string>): string {
  const q = new URLSearchParams(params).toString();
  return `${uri}${uri.includes('?') ? '&' : '?'}${q}`;
}

const str = (v: unknown) => (typeof v === 'string' ? v : Array.isArray(v) && typeof v[0] === 'string' ? v[0] : undefined);

/**
 * Open an authorization request (GET or POST /oidc/authorize). A bad client or redirect URI is answered
 * to the caller (400: never a redirect to a URI that is not allowed); what is wrong after that goes back to
 * the redirect URI. Returns the request's id and the login page to send the user agent to.
 */
export async function createAuthRequest(ctx: Ctx, p: Record<string, unknown>, o: { remoteAddress: string; hasPeerCert: boolean }): Promise<{ id: string; loginPath: string }> {
  const clientId = str(p.client_id);
  if (!isClient(clientId)) throw new OidcError(400, 'invalid_client', `client_id must be openziti or native, got '${clientId ?? ''}'`);
  const redirectUri = str(p.redirect_uri);
  if (!isAllowedRedirect(ctx, redirectUri)) throw new OidcError(400, 'invalid_request', 'redirect_uri is missing or is not one this provider allows (openziti://auth/callback, http(s)://localhost|127.0.0.1:PORT/auth/callback, or one configured in oidcRedirectUris)');
  const state = str(p.state) ?? '';
  const fail = (error: string, description: string) => new RedirectError(redirectUri, state, error, description);
  if (str(p.response_type) !== 'code') throw fail('unsupported_response_type', 'response_type must be code (the authorization code flow with PKCE)');
  let scopes: string[];
  try {
    scopes = requestedScopes(str(p.scope));
  } catch (e) {
    throw fail('invalid_scope', (e as Error).message);
  }
  const challenge = str(p.code_challenge) ?? '';
  if (!challenge) throw fail('invalid_request', 'code_challenge is required: this provider takes only PKCE requests (S256)');
  if (str(p.code_challenge_method) !== 'S256') throw fail('invalid_request', 'code_challenge_method must be S256 (plain is not accepted)');
  if (!/^[A-Za-z0-9_-]{43}$/.test(challenge)) throw fail('invalid_request', 'code_challenge must be the base64url SHA-256 of the code verifier (43 characters)');
  if (str(p.prompt) === 'none') throw fail('login_required', 'prompt=none: this provider keeps no login to reuse');
  const method = str(p.method) ?? '';
  const configTypes = ([] as unknown[]).concat(p.configTypes ?? []).filter((x): x is string => typeof x === 'string').slice(0, 100);
  const now = ctx.clock.now();
  const id = newSecret();
  await ctx.store.db
    .insertInto('oidcAuthRequests')
    .values({
      id, createdAt: iso(now), expiresAt: iso(new Date(now.getTime() + AUTH_REQUEST_TTL_MS)), clientId, redirectUri, state: state.slice(0, 2048),
      nonce: (str(p.nonce) ?? '').slice(0, 2048), codeChallenge: challenge, remoteAddress: o.remoteAddress, requestedMethod: PRIMARY.has(method) ? method : '',
      scopes: JSON.stringify(scopes), configTypes: JSON.stringify(configTypes), amr: '[]', totpRequired: 0, totpEnrolled: 0, isCertExtendable: 0, extJwtSigner: null,
    })
    .execute();
  // As upstream's login resolver: the method asked for, else cert when the TLS connection carried one, else password.
  const login = PRIMARY.has(method) ? (method === 'password' ? 'username' : method) : o.hasPeerCert ? 'cert' : 'username';
  return { id, loginPath: `${OIDC_PATH}/login/${login}?authRequestID=${encodeURIComponent(id)}` };
}

export interface AuthRequest extends Omit<OidcAuthRequestRow, 'scopes' | 'configTypes' | 'amr'> {
  scopes: string[];
  configTypes: string[];
  amr: string[];
}

const parse = (r: OidcAuthRequestRow): AuthRequest => ({ ...r, scopes: fromJson(r.scopes, []), configTypes: fromJson(r.configTypes, []), amr: fromJson(r.amr, []) });

export const notFoundRequest = () => new ApiError(401, 'INVALID_AUTH', 'The authorization request is unknown, used or too old: start again at /oidc/authorize');

/** A live request (not expired, its code not yet used), or 401. */
export async function getAuthRequest(ctx: Ctx, id: unknown): Promise<AuthRequest> {
  if (typeof id !== 'string' || !id || id.length > 64) throw notFoundRequest();
  const row = await ctx.store.db.selectFrom('oidcAuthRequests').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row || Date.parse(row.expiresAt) <= ctx.clock.now().getTime() || row.codeUsedAt) throw notFoundRequest();
  return parse(row);
}

export const hasPrimary = (r: AuthRequest) => !!r.identityId && r.amr.some((a) => PRIMARY.has(a));
export const needsTotp = (r: AuthRequest) => !!r.totpRequired && !r.amr.includes(TOTP_AMR);
export const needsExtJwt = (r: AuthRequest) => !!r.extJwtSigner && !r.amr.includes(extJwtAmr(r.extJwtSigner));
export const isDone = (r: AuthRequest) => hasPrimary(r) && !needsTotp(r) && !needsExtJwt(r);

/** What the login still owes, as upstream lists it (AuthRequest.GetAuthQueries): its TOTP code, the JWT of the signer its auth policy requires. */
export async function authQueries(ctx: Ctx, r: AuthRequest) {
  return [
    ...(needsTotp(r) ? [{ typeId: 'TOTP', format: 'numeric', httpMethod: 'POST', httpUrl: './oidc/login/totp', maxLength: 8, minLength: 6, provider: 'ziti', isTotpEnrolled: !!r.totpEnrolled }] : []),
    ...(needsExtJwt(r) ? [await extJwtAuthQuery(ctx, r.extJwtSigner!)] : []),
  ];
}

export interface LoginInput extends AuthenticateInput {
  csrPem?: string;
}

/**
 * The primary login of a request: the method's credentials checked exactly as POST /authenticate checks
 * them (finish = the request's step instead of a legacy session). A request logs in once: its identity
 * cannot be replaced by a second login (a login CSRF would hand the victim's client the attacker's session).
 */
export async function loginRequest(ctx: Ctx, id: unknown, method: LoginMethod, input: LoginInput, ipAddress: string, presented: X509Certificate[], authorization?: string): Promise<AuthRequest> {
  const r = await getAuthRequest(ctx, id);
  // The ext-jwt step of a request logged in that owes its second-factor JWT: that JWT, not a second login.
  if (hasPrimary(r) && method === 'ext-jwt' && needsExtJwt(r)) return secondaryExtJwt(ctx, r, authorization);
  if (hasPrimary(r)) throw new ApiError(400, 'INVALID_AUTH', 'This authorization request is already logged in: continue with its next step, or start again at /oidc/authorize');
  // A CSR to sign at the code's exchange (OIDC_AUTH_WITH_CSR) must be one.
  if (input.csrPem) {
    try {
      parseCsr(input.csrPem);
    } catch (e) {
      throw new ApiError(400, 'COULD_NOT_VALIDATE', `csrPem is not a valid certificate signing request: ${(e as Error).message}`, { field: 'csrPem', reason: 'must be a PEM certificate signing request' });
    }
  }
  const primary = await authenticate(ctx, method, input, ipAddress, presented, authorization, async (_c, p: PrimaryAuth) => p);
  const state = await loginState(ctx, primary.identityId);
  const now = iso(ctx.clock.now());
  const leaf = method === 'cert' ? presented[0] : undefined;
  const changed = {
    identityId: primary.identityId,
    authenticatorId: primary.authenticatorId,
    authTime: now,
    amr: JSON.stringify([method]),
    totpRequired: state.isMfaRequired ? 1 : 0,
    totpEnrolled: state.isTotpEnrolled ? 1 : 0,
    extJwtSigner: state.extJwtSigner,
    isCertExtendable: primary.isCertExtendable ? 1 : 0,
    certFingerprint: leaf ? fingerprintOf(leaf.toString()) : null,
    sdkInfo: input.sdkInfo ? JSON.stringify(input.sdkInfo) : null,
    envInfo: input.envInfo ? JSON.stringify(input.envInfo) : null,
    csrPem: typeof input.csrPem === 'string' && input.csrPem ? input.csrPem.slice(0, 65536) : null,
    ...(input.configTypes?.length ? { configTypes: JSON.stringify(input.configTypes.slice(0, 100)) } : {}),
  };
  // Only the first login of the request counts (two at once: the second finds it taken).
  const res = await ctx.store.db.updateTable('oidcAuthRequests').set(changed).where('id', '=', r.id).where('identityId', 'is', null).executeTakeFirst();
  if (Number(res.numUpdatedRows) !== 1) throw new ApiError(400, 'INVALID_AUTH', 'This authorization request is already logged in');
  authenticationSucceeded(ctx, method, { identityId: primary.identityId, authenticatorId: primary.authenticatorId, ipAddress });
  const done = parse({ ...(await ctx.store.db.selectFrom('oidcAuthRequests').selectAll().where('id', '=', r.id).executeTakeFirstOrThrow()) });
  // As upstream's login: a bearer JWT sent with any login may be the second factor already.
  if (state.extJwtSigner && (await checkSecondaryJwt(ctx, state.extJwtSigner, primary.identityId, bearerTokens([authorization]))) === 'ok') return addAmr(ctx, done, extJwtAmr(state.extJwtSigner));
  return done;
}

/** An error that says which second-factor JWT is missing, expired or invalid (upstream's WWW-Authenticate rides on it). */
export class SecondaryJwtError extends ApiError {
  constructor(readonly challenge: string) {
    super(401, 'INVALID_AUTH', 'The JWT of the external signer this identity\'s auth policy requires as a second factor is missing, expired or not valid', undefined, { headers: { 'www-authenticate': challenge } });
  }
}

/** The ext-jwt step after the primary login: the bearer JWT of the signer the auth policy requires, for this identity. */
async function secondaryExtJwt(ctx: Ctx, r: AuthRequest, authorization?: string): Promise<AuthRequest> {
  const result = await checkSecondaryJwt(ctx, r.extJwtSigner!, r.identityId!, bearerTokens([authorization]));
  if (result !== 'ok') throw new SecondaryJwtError(await secondaryChallenge(ctx, r.extJwtSigner!, result));
  return addAmr(ctx, r, extJwtAmr(r.extJwtSigner!));
}

async function addAmr(ctx: Ctx, r: AuthRequest, amr: string, extra: Partial<OidcAuthRequestRow> = {}): Promise<AuthRequest> {
  const next = [...new Set([...r.amr, amr])];
  await ctx.store.db.updateTable('oidcAuthRequests').set({ amr: JSON.stringify(next), ...extra }).where('id', '=', r.id).execute();
  return { ...r, ...extra, amr: next } as AuthRequest;
}

/** A request past its primary login whose identity owes TOTP (or may enroll it), or 401. */
async function loggedIn(ctx: Ctx, id: unknown): Promise<AuthRequest & { identityId: string }> {
  const r = await getAuthRequest(ctx, id);
  if (!hasPrimary(r)) throw new ApiError(401, 'INVALID_AUTH', 'Log in first (POST /oidc/login/password, cert or ext-jwt with this request id)');
  return r as AuthRequest & { identityId: string };
}

/**
 * The TOTP code of a login that owes one (or a recovery code), budgeted as POST /authenticate/mfa's: the
 * identity's budget, and MAX_PARTIAL_FAILURES wrong codes end the request.
 */
export async function verifyTotp(ctx: Ctx, id: unknown, code: unknown): Promise<AuthRequest> {
  const r = await loggedIn(ctx, id);
  if (!needsTotp(r)) throw new ApiError(400, 'INVALID_AUTH', 'TOTP supplied but not enabled or required on identity');
  const m = await getMfa(ctx, r.identityId);
  if (!m || !m.isVerified) throw new ApiError(400, 'MFA_NOT_ENROLLED', 'This identity has no verified TOTP: enroll it (POST /oidc/login/totp/enroll)');
  if (!(await checkCode(ctx, m, typeof code === 'string' ? code.trim() : code, { recovery: true }))) {
    if (failOnSession(ctx, r.id) >= MAX_PARTIAL_FAILURES) {
      forgetSession(ctx, r.id);
      await ctx.store.db.deleteFrom('oidcAuthRequests').where('id', '=', r.id).execute();
      throw new ApiError(400, 'MFA_INVALID_TOKEN', `The TOTP code is not valid, and this login has had ${MAX_PARTIAL_FAILURES} wrong codes: it has ended, start again`);
    }
    throw invalidCode(400);
  }
  forgetSession(ctx, r.id);
  return addAmr(ctx, r, TOTP_AMR);
}

/** Start enrolling TOTP during a login (the identity must enroll when its policy requires TOTP). */
export async function startTotpEnroll(ctx: Ctx, id: unknown) {
  const r = await loggedIn(ctx, id);
  await startMfa(ctx, r.identityId);
  const m = await getMfa(ctx, r.identityId);
  const identity = await ctx.store.db.selectFrom('identities').select('name').where('id', '=', r.identityId).executeTakeFirstOrThrow();
  return mfaDetail(ctx, m!, identity.name);
}

/** Drop an enrollment during a login (a verified one only with a current code), as upstream's DELETE. */
export async function deleteTotpEnroll(ctx: Ctx, id: unknown, code: unknown) {
  const r = await loggedIn(ctx, id);
  await deleteMfa(ctx, r.identityId, typeof code === 'string' ? code : undefined);
}

/** Verify the enrollment started during this login: the login has then given its TOTP. */
export async function verifyTotpEnroll(ctx: Ctx, id: unknown, code: unknown): Promise<AuthRequest> {
  const r = await loggedIn(ctx, id);
  await verifyMfa(ctx, r.identityId, undefined, typeof code === 'string' ? code.trim() : code);
  return addAmr(ctx, r, TOTP_AMR, { totpEnrolled: 1 });
}

/**
 * The callback (GET /oidc/authorize/callback?id=): a finished request gets its one-time code, sent to its
 * redirect URI with its state. A new code replaces an earlier one the client never used.
 */
export async function issueCode(ctx: Ctx, id: unknown): Promise<string> {
  const r = await getAuthRequest(ctx, id);
  if (!isDone(r)) throw new RedirectError(r.redirectUri, r.state, 'access_denied', needsTotp(r) ? 'the login still owes its TOTP code' : needsExtJwt(r) ? "the login still owes the JWT of the external signer its auth policy requires" : 'the request is not logged in');
  // Still allowed to log in (disabled since, for one): else no code.
  try {
    await loginState(ctx, r.identityId!);
  } catch {
    throw new RedirectError(r.redirectUri, r.state, 'access_denied', 'the identity may not log in');
  }
  const code = newSecret();
  await ctx.store.db.updateTable('oidcAuthRequests').set({ codeHash: hashSecret(code), codeExpiresAt: iso(new Date(ctx.clock.now().getTime() + CODE_TTL_MS)) }).where('id', '=', r.id).execute();
  return withQuery(r.redirectUri, { code, ...(r.state ? { state: r.state } : {}) });
}

/**
 * Take a code for its tokens, once: the request it names is marked used in the same statement that finds
 * it, so a second use (a replay, or two at once) finds nothing. A replayed code ends the API session the
 * first use opened (RFC 6749 4.1.2: the code may have been stolen). Returns the request.
 */
export async function takeCode(ctx: Ctx, code: unknown): Promise<AuthRequest> {
  if (typeof code !== 'string' || !code || code.length > 128) throw invalidGrant('code is missing or not valid');
  const hash = hashSecret(code);
  const now = iso(ctx.clock.now());
  const res = await ctx.store.db.updateTable('oidcAuthRequests').set({ codeUsedAt: now }).where('codeHash', '=', hash).where('codeUsedAt', 'is', null).where('codeExpiresAt', '>', now).executeTakeFirst();
  const row = await ctx.store.db.selectFrom('oidcAuthRequests').selectAll().where('codeHash', '=', hash).executeTakeFirst();
  if (Number(res.numUpdatedRows) !== 1 || !row) {
    if (row?.codeUsedAt && row.apiSessionId) await endReplayedSession(ctx, row.apiSessionId);
    throw invalidGrant(row?.codeUsedAt ? 'the code has already been used' : 'the code is not valid or has expired');
  }
  return parse(row);
}

async function endReplayedSession(ctx: Ctx, apiSessionId: string) {
  const { endApiSessions } = await import('../revoke.js');
  const { writeTx } = await import('../../crud.js');
  await writeTx(ctx, (tx) => endApiSessions(tx, ctx, { apiSessionId }, 'code-replayed'));
}

/** Note the API session a code opened (for endReplayedSession). */
export async function noteSession(ctx: Ctx, requestId: string, apiSessionId: string) {
  await ctx.store.db.updateTable('oidcAuthRequests').set({ apiSessionId }).where('id', '=', requestId).execute();
}

/** Requests past their lifetime (and codes used long ago) are forgotten by the minute sweep. */
export async function sweepAuthRequests(ctx: Ctx): Promise<number> {
  const res = await ctx.store.db.deleteFrom('oidcAuthRequests').where('expiresAt', '<', iso(ctx.clock.now())).executeTakeFirst();
  return Number(res.numDeletedRows);
}

/** Check a request body's id field the way upstream reads it (body id, else ?authRequestID, else ?id). */
export function requestIdOf(body: Record<string, unknown> | undefined, query: Record<string, unknown>): string | undefined {
  return str(body?.id) || str(query.authRequestID) || str(query.id) || undefined;
}

