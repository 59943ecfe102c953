// POST /authenticate: checks credentials by method and opens an API session.
import { X509Certificate } from 'node:crypto';
import { iso } from '../clock.js';
import type { Ctx } from '../context.js';
import type { AuthPolicy } from '../resources/auth-policies.js';
import { authenticateExtJwt, bearerTokens, checkSecondaryJwt, type SecondaryResult } from './ext-jwt.js';
import { fingerprintOf } from '../pki/certs.js';
import { chainsTo, isCurrent, issuedByNetwork } from '../pki/client-certs.js';
import { syncClaimAttributes } from '../pki/claim-attributes.js';
import { ApiError, loginRefused, type LoginFailure } from '../errors.js';
import { isSet } from '../../store/json.js';
import { createApiSession, resolveSession } from './api-sessions.js';
import { loginBudget } from './login-budget.js';
import { verifyPassword } from './password.js';
import type { AuthenticateInput, Finish, PrimaryAuth } from './login.js';

export type { AuthenticateInput, Finish, PrimaryAuth } from './login.js';

export const AUTH_METHODS = ['password', 'cert', 'ext-jwt'] as const;

/**
 * A refused login whose credential was found: the same answer as any (INVALID_AUTH, nothing said about
 * why), carrying whose it was for the refused login's event, so the audit of that identity shows it (a
 * disabled identity's attempts, a locked or wrong password).
 */
const refusedFor = (identityId: string, authenticatorId: string | undefined, failure: LoginFailure) => Object.assign(loginRefused(failure), { identityId, ...(authenticatorId ? { authenticatorId } : {}) });
const refused = (failure: LoginFailure) => loginRefused(failure);

// The legacy login (an API session) last: ReturnType<typeof authenticate> names it.
export function authenticate<T>(ctx: Ctx, method: string, input: AuthenticateInput, ipAddress: string, presented: X509Certificate[], authorization: string | undefined, finish: Finish<T>): Promise<T>;
export function authenticate(ctx: Ctx, method: string, input: AuthenticateInput, ipAddress: string, presented?: X509Certificate[], authorization?: string): ReturnType<typeof openSession>;
export async function authenticate<T>(ctx: Ctx, method: string, input: AuthenticateInput, ipAddress: string, presented: X509Certificate[] = [], authorization?: string, finish: Finish<T> = openSession as never) {
  // As upstream, the bearer tokens sent with any login are candidates for the second factor.
  const bearers = bearerTokens([authorization]);
  const fin: Finish<T> = (c, o) => finish(c, { ...o, bearers });
  if (method === 'password') return authenticatePassword(ctx, input, ipAddress, fin);
  if (method === 'cert') return authenticateCert(ctx, input, ipAddress, presented, fin);
  if (method === 'ext-jwt') return authenticateExtJwt(ctx, bearers[0], input, ipAddress, fin);
  if ((AUTH_METHODS as readonly string[]).includes(method)) {
    throw new ApiError(400, 'INVALID_AUTH_METHOD', `The authentication method '${method}' is not enabled on this controller yet; use method=password`);
  }
  throw new ApiError(400, 'INVALID_AUTH_METHOD', `Unknown authentication method '${method}': use password, cert or ext-jwt`);
}

async function authenticatePassword<T>(ctx: Ctx, input: AuthenticateInput, ipAddress: string, finish: Finish<T>) {
  if (typeof input.username !== 'string' || typeof input.password !== 'string') {
    throw new ApiError(400, 'COULD_NOT_VALIDATE', 'The password method needs username and password', {
      field: input.username === undefined ? 'username' : 'password',
      reason: 'is required',
    });
  }
  // Before any hashing: an account that failed too often must wait (429), wherever the guesses come from.
  const budget = loginBudget(ctx);
  budget.take(input.username);
  const row = await ctx.store.db
    .selectFrom('authenticators as a')
    .innerJoin('identities as i', 'i.id', 'a.identityId')
    .innerJoin('authPolicies as p', 'p.id', 'i.authPolicyId')
    .select(['a.id', 'a.identityId', 'a.passwordHash', 'a.failedAttempts', 'a.lockedUntil', 'p.primaryJson'])
    .where('a.method', '=', 'updb')
    .where('a.username', '=', input.username)
    .executeTakeFirst();
  // verifyPassword does the full work even without a row, so timing does not reveal usernames.
  const ok = await verifyPassword(input.password, row?.passwordHash);
  if (!row) throw refused('unknown-credential');
  const now = ctx.clock.now();
  const updb = (JSON.parse(row.primaryJson || '{}') as AuthPolicy['primary']).updb;
  if (row.lockedUntil && Date.parse(row.lockedUntil) > now.getTime()) throw refusedFor(row.identityId, row.id, 'locked');
  if (!ok) {
    await recordFailure(ctx, row.id, updb);
    // The failed-login event names the identity the username belongs to (model/events/emit.ts).
    throw refusedFor(row.identityId, row.id, 'wrong-password');
  }
  if (updb && updb.allowed === false) throw refusedFor(row.identityId, row.id, 'method-not-allowed');
  budget.succeeded(input.username);
  if (row.failedAttempts || row.lockedUntil) {
    await ctx.store.db.updateTable('authenticators').set({ failedAttempts: 0, lockedUntil: null }).where('id', '=', row.id).execute();
  }
  return finish(ctx, { identityId: row.identityId, authenticatorId: row.id, ipAddress, input });
}

/** Count a failed password; at maxAttempts the authenticator locks (lockoutDurationMinutes 0: until the identity is enabled). */
async function recordFailure(ctx: Ctx, authenticatorId: string, updb: AuthPolicy['primary']['updb'] | undefined) {
  const res = await ctx.store.db
    .updateTable('authenticators')
    .set((eb) => ({ failedAttempts: eb('failedAttempts', '+', 1) }))
    .where('id', '=', authenticatorId)
    .returning('failedAttempts')
    .executeTakeFirst();
  const max = updb?.maxAttempts ?? 0;
  if (max > 0 && res && res.failedAttempts >= max) {
    const minutes = updb?.lockoutDurationMinutes ?? 0;
    const until = minutes > 0 ? new Date(ctx.clock.now().getTime() + minutes * 60_000) : new Date('9999-12-31T00:00:00Z');
    await ctx.store.db.updateTable('authenticators').set({ lockedUntil: iso(until), failedAttempts: 0 }).where('id', '=', authenticatorId).execute();
  }
}

/**
 * After a primary method succeeded: refuse disabled identities, decide whether MFA is still owed
 * (verified TOTP, or a policy that requires it), and open the API session.
 */
export async function openSession(ctx: Ctx, o: PrimaryAuth) {
  const { isMfaRequired, extJwtSigner } = await loginState(ctx, o.identityId).catch((e: unknown) => {
    throw Object.assign(e as object, { authenticatorId: (e as { authenticatorId?: string }).authenticatorId ?? o.authenticatorId });
  });
  // The second factor of secondary.requireExtJwtSigner: given now (a bearer JWT sent with the login), or owed.
  const extJwt: { signerId: string; result: SecondaryResult } | undefined = extJwtSigner ? { signerId: extJwtSigner, result: await checkSecondaryJwt(ctx, extJwtSigner, o.identityId, o.bearers ?? []) } : undefined;
  await recordClientInfo(ctx, o.identityId, o.input);
  const { token } = await createApiSession(ctx, {
    identityId: o.identityId,
    authenticatorId: o.authenticatorId,
    ipAddress: o.ipAddress,
    configTypes: o.input.configTypes ?? [],
    isCertExtendable: o.isCertExtendable,
    isMfaRequired,
    extJwtPending: extJwt && extJwt.result !== 'ok' ? extJwt.signerId : null,
  });
  return { token, session: await resolveSession(ctx, token), extJwt };
}

/**
 * Whether the identity may log in now (not disabled: else 401), and what its login still owes: MFA when
 * it has verified TOTP or its auth policy requires TOTP; a JWT from the signer its policy names as a
 * second factor (secondary.requireExtJwtSigner).
 */
export async function loginState(ctx: Ctx, identityId: string): Promise<{ isMfaRequired: boolean; isTotpEnrolled: boolean; extJwtSigner: string | null }> {
  const identity = await ctx.store.db
    .selectFrom('identities as i')
    .innerJoin('authPolicies as p', 'p.id', 'i.authPolicyId')
    .leftJoin('mfa as m', 'm.identityId', 'i.id')
    .select(['i.disabled', 'i.disabledUntil', 'p.secondaryJson', 'm.isVerified as mfaVerified'])
    .where('i.id', '=', identityId)
    .executeTakeFirst();
  if (!identity) throw refused('unknown-credential');
  const now = ctx.clock.now().getTime();
  if (isSet(identity.disabled) && (!identity.disabledUntil || Date.parse(identity.disabledUntil) > now)) throw refusedFor(identityId, undefined, 'identity-disabled');
  const secondary = JSON.parse(identity.secondaryJson || '{}') as AuthPolicy['secondary'];
  return { isMfaRequired: isSet(identity.mfaVerified) || !!secondary.requireTotp, isTotpEnrolled: isSet(identity.mfaVerified), extJwtSigner: secondary.requireExtJwtSigner || null };
}

/** The certificate presented on the TLS connection (the handshake proved its key) matched to a cert authenticator. */
async function authenticateCert<T>(ctx: Ctx, input: AuthenticateInput, ipAddress: string, presented: X509Certificate[], finish: Finish<T>) {
  const leaf = presented[0];
  if (!leaf) throw loginRefused('no-certificate', new ApiError(401, 'INVALID_AUTH', 'The cert method needs a client certificate presented on the TLS connection'));
  const row = await ctx.store.db
    .selectFrom('authenticators as a')
    .innerJoin('identities as i', 'i.id', 'a.identityId')
    .innerJoin('authPolicies as p', 'p.id', 'i.authPolicyId')
    .leftJoin('cas as c', 'c.id', 'a.caId')
    .select(['a.id', 'a.identityId', 'a.isIssuedByNetwork', 'a.caId', 'a.lastAuthResolvedToRoot', 'p.primaryJson', 'c.certPem as caPem', 'c.isVerified as caVerified', 'c.isAuthEnabled as caAuth', 'c.roleAttributeClaims as caClaims'])
    .where('a.method', '=', 'cert')
    .where('a.fingerprint', '=', fingerprintOf(leaf.toString()))
    .executeTakeFirst();
  if (!row) throw refused('unknown-credential');
  const now = ctx.clock.now();
  const primary = JSON.parse(row.primaryJson || '{}') as { cert?: { allowed?: boolean; allowExpiredCerts?: boolean } };
  if (primary.cert?.allowed === false) throw refusedFor(row.identityId, row.id, 'method-not-allowed');
  if (!isCurrent(leaf, now) && !primary.cert?.allowExpiredCerts) throw refusedFor(row.identityId, row.id, 'certificate-expired');
  if (isSet(row.isIssuedByNetwork)) {
    if (!issuedByNetwork(ctx, leaf, presented)) throw refusedFor(row.identityId, row.id, 'certificate-untrusted');
    // Upstream 2.x notes whether the chain led to the root (lastAuthResolvedToRoot; a session's
    // improperClientCertChain when it did not). The TLS layer completes a chain from the controller's
    // own CAs, so what the client sent and what the store added look alike here.
    const toRoot = chainsTo(leaf, presented, new X509Certificate(ctx.pki.rootPem), now) ? 1 : 0;
    if (toRoot !== Number(row.lastAuthResolvedToRoot)) await ctx.store.db.updateTable('authenticators').set({ lastAuthResolvedToRoot: toRoot }).where('id', '=', row.id).execute();
  } else if (!row.caPem || !isSet(row.caVerified) || !isSet(row.caAuth) || !chainsTo(leaf, presented, new X509Certificate(row.caPem), now)) {
    throw refusedFor(row.identityId, row.id, 'certificate-untrusted');
  } else {
    // A third-party CA's claim rules (ztc's, ziti#827): the identity's role attributes follow this certificate's claims.
    await syncClaimAttributes(ctx, row.identityId, row.caClaims, leaf);
  }
  return finish(ctx, { identityId: row.identityId, authenticatorId: row.id, ipAddress, input, isCertExtendable: isSet(row.isIssuedByNetwork) });
}

export async function recordClientInfo(ctx: Ctx, identityId: string, input: AuthenticateInput) {
  if (!input.envInfo && !input.sdkInfo) return;
  await ctx.store.db
    .updateTable('identities')
    .set({
      ...(input.envInfo ? { envInfo: JSON.stringify(input.envInfo) } : {}),
      ...(input.sdkInfo ? { sdkInfo: JSON.stringify(input.sdkInfo) } : {}),
    })
    .where('id', '=', identityId)
    .execute();
}
