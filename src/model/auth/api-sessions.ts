// API sessions: a random bearer token (looked up by its hash; a sealed copy for the routers that must
// recognise it), refreshed by use, expired after the configured idle time. All state is in the database so several controllers can share it.
import { iso } from '../clock.js';
import type { Ctx } from '../context.js';
import { unauthorized } from '../errors.js';
import { hashSecret, newId, newSecret } from '../ids.js';
import { identityRef } from '../resources/identity-links.js';
import { selfLink } from '../resource.js';
import { fromJson, isSet } from '../../store/json.js';
import { first, precompile } from '../../store/precompiled.js';
import { apiSessionEnded } from '../events/emit.js';
import { pruneRevocations } from './revocations.js';
import { revokeEndedJwtSessions } from './revoke.js';
import { writeTx } from '../crud.js';
import { IDENTITY_COLUMNS, type SessionWithIdentity } from './session-row.js';

export { sessionColumns, takeSession, type SessionWithIdentity } from './session-row.js';

/** The auth query a session still owing its TOTP code must answer (mfa.ts checks the code). */
export const MFA_AUTH_QUERY = { typeId: 'MFA', provider: 'ziti', httpMethod: 'POST', httpUrl: './authenticate/mfa', minLength: 4, maxLength: 6, format: 'alphaNumeric' };

const timeoutMs = (ctx: Ctx) => ctx.config.sessionTimeoutMinutes * 60_000;

/** How stale lastActivityAt may get before a request writes it again: keeps reads free of writes. */
const touchEvery = (ctx: Ctx) => Math.min(60_000, timeoutMs(ctx) / 10);

export async function createApiSession(
  ctx: Ctx,
  o: { identityId: string; authenticatorId: string; ipAddress: string; configTypes: string[]; isMfaRequired?: boolean; isMfaComplete?: boolean; isCertExtendable?: boolean; expiresAt?: Date; extJwtPending?: string | null },
) {
  // A JWT API session (OIDC, expiresAt given) is carried by its signed tokens: its row's token is a random
  // value nobody is told, and routers are not handed one (they check the JWTs themselves).
  const token = newSecret();
  const now = iso(ctx.clock.now());
  const id = newId();
  await ctx.store.db
    .insertInto('apiSessions')
    .values({
      id,
      createdAt: now,
      updatedAt: now,
      tags: '{}',
      tokenHash: hashSecret(token),
      // Upstream routers need the token itself (they look SDKs' hellos up by it): sealed, never in clear.
      tokenSealed: o.expiresAt ? null : ctx.sealer.seal(token),
      identityId: o.identityId,
      authenticatorId: o.authenticatorId,
      ipAddress: o.ipAddress,
      configTypes: JSON.stringify(o.configTypes),
      isMfaRequired: o.isMfaRequired ? 1 : 0,
      isMfaComplete: o.isMfaComplete ? 1 : 0,
      isCertExtendable: o.isCertExtendable ? 1 : 0,
      lastActivityAt: now,
      expiresAt: o.expiresAt ? iso(o.expiresAt) : null,
      extJwtPending: o.extJwtPending ?? null,
    })
    .execute();
  return { id, token };
}

const sessionByTokenHash = precompile((db, p) =>
  db
    .selectFrom('apiSessions as s')
    .innerJoin('identities as i', 'i.id', 's.identityId')
    .selectAll('s')
    .select(Object.entries(IDENTITY_COLUMNS).map(([as, c]) => `i.${c} as ${as}`) as never)
    .where('s.tokenHash', '=', p(0)),
);

/**
 * The session behind a token, or a 401. Refreshes lastActivityAt when it has grown stale. `read`: the
 * session as a route already read it by this token's hash (with what else it needed), checked the same.
 */
export async function resolveSession(ctx: Ctx, token: string, tokenHash = hashSecret(token), read?: SessionWithIdentity): Promise<SessionWithIdentity> {
  const row = read ?? ((await first(ctx.store.db, sessionByTokenHash, [tokenHash])) as SessionWithIdentity | undefined);
  if (!row) throw unauthorized();
  const now = ctx.clock.now();
  const last = Date.parse(row.lastActivityAt);
  if (hasExpired(ctx, row, now.getTime())) {
    await endJwtAware(ctx, row, 'expired');
    apiSessionEnded(ctx, row, 'expired');
    throw unauthorized('The API session has expired: authenticate again');
  }
  if (isPartial(row) && now.getTime() - Date.parse(row.createdAt) > PARTIAL_SESSION_MS) {
    await ctx.store.db.deleteFrom('apiSessions').where('id', '=', row.id).execute();
    const totp = isSet(row.isMfaRequired) && !isSet(row.isMfaComplete);
    apiSessionEnded(ctx, row, totp ? 'mfa-not-given' : 'ext-jwt-not-given');
    throw unauthorized(`The ${totp ? 'MFA code' : "JWT of the external signer the auth policy requires"} was not given within ${PARTIAL_SESSION_MS / 60_000} minutes of the login: authenticate again`);
  }
  if (isSet(row.disabled) && (!row.disabledUntil || Date.parse(row.disabledUntil) > now.getTime())) {
    throw unauthorized('The identity is disabled');
  }
  if (now.getTime() - last > touchEvery(ctx)) {
    row.lastActivityAt = iso(now);
    await ctx.store.db.updateTable('apiSessions').set({ lastActivityAt: row.lastActivityAt }).where('id', '=', row.id).execute();
  }
  return row;
}

/** A session that still owes a second factor: its TOTP code, or a JWT from the signer its auth policy requires. */
export const isPartial = (row: { isMfaRequired: number; isMfaComplete: number; extJwtPending?: string | null }) => (isSet(row.isMfaRequired) && !isSet(row.isMfaComplete)) || !!row.extJwtPending;

/** A legacy session ends after the idle timeout; a JWT API session at its expiresAt (its tokens' lifetime). */
export const hasExpired = (ctx: Ctx, row: { lastActivityAt: string; expiresAt?: string | null }, now = ctx.clock.now().getTime()) =>
  row.expiresAt ? Date.parse(row.expiresAt) <= now : now - Date.parse(row.lastActivityAt) > timeoutMs(ctx);

/** End one API session (a logout, a login that failed its MFA): a JWT one is revoked for routers too. */
export async function deleteApiSession(ctx: Ctx, id: string, reason = 'logout') {
  const row = await ctx.store.db.selectFrom('apiSessions').select(['id', 'expiresAt']).where('id', '=', id).executeTakeFirst();
  if (row) await endJwtAware(ctx, row, reason);
}

/**
 * Delete an API session; a JWT one (an OIDC login) is revoked by id in the same transaction, so 2.x
 * routers, which check its access token on their own, close its SDK's channels (model/auth/revoke.ts).
 */
async function endJwtAware(ctx: Ctx, row: { id: string; expiresAt?: string | null }, reason: string) {
  if (!row.expiresAt) {
    await ctx.store.db.deleteFrom('apiSessions').where('id', '=', row.id).execute();
    return;
  }
  await writeTx(ctx, async (tx) => {
    await tx.deleteFrom('apiSessions').where('id', '=', row.id).execute();
    await revokeEndedJwtSessions(tx, ctx, [row], reason);
  });
}

/**
 * A session waiting for its MFA code lives this long: a login abandoned at the code prompt (or refused
 * codes) leaves no partial session behind for the idle timeout.
 */
export const PARTIAL_SESSION_MS = 5 * 60_000;

/** Sweep sessions idle past the timeout, and partial ones past theirs (the request path also refuses them on sight). */
export async function expireApiSessions(ctx: Ctx) {
  const now = ctx.clock.now().getTime();
  const cutoff = iso(new Date(now - timeoutMs(ctx)));
  const idle = await ctx.store.db
    .deleteFrom('apiSessions')
    .where((eb) => eb.or([eb.and([eb('expiresAt', 'is', null), eb('lastActivityAt', '<', cutoff)]), eb('expiresAt', '<=', iso(new Date(now)))]))
    .returning(['id', 'identityId', 'expiresAt'])
    .execute();
  const partial = await ctx.store.db
    .deleteFrom('apiSessions')
    .where((eb) => eb.or([eb.and([eb('isMfaRequired', '=', 1), eb('isMfaComplete', '=', 0)]), eb('extJwtPending', 'is not', null)]))
    .where('createdAt', '<', iso(new Date(now - PARTIAL_SESSION_MS)))
    .returning(['id', 'identityId', 'isMfaRequired', 'isMfaComplete'])
    .execute();
  for (const s of idle) apiSessionEnded(ctx, s, 'expired');
  // A JWT session past its end may leave an access token that lives on (one exchanged for another is
  // not bound to the session's end): revoked for routers as any other that ended.
  const jwt = idle.filter((s) => s.expiresAt);
  if (jwt.length) {
    await writeTx(ctx, (tx) => revokeEndedJwtSessions(tx, ctx, jwt, 'expired'));
  }
  for (const s of partial) apiSessionEnded(ctx, { id: s.id, identityId: s.identityId }, isSet(s.isMfaRequired) && !isSet(s.isMfaComplete) ? 'mfa-not-given' : 'ext-jwt-not-given');
  // The same sweep forgets revocations past their expiry (nothing they name can still be valid).
  await pruneRevocations(ctx);
  // ... and OIDC authorization requests past their lifetime (model/auth/oidc/requests.ts).
  await ctx.store.db.deleteFrom('oidcAuthRequests').where('expiresAt', '<', iso(new Date(now))).execute();
  return idle.length + partial.length;
}

/** The 2.x fields of an API session opened with a certificate (model/pki/extend.ts certStateOf). */
export interface CertState {
  isCertExtendRequested: boolean;
  isCertKeyRollRequested: boolean;
  improperClientCertChain: boolean;
}
export const NO_CERT_STATE: CertState = { isCertExtendRequested: false, isCertKeyRollRequested: false, improperClientCertChain: false };

/**
 * `own`: the detail answers the session's own request (login, current-api-session), which is its latest
 * activity. lastActivityAt is written only once it is a minute stale (touchEvery), but SDKs read
 * cachedLastActivityAt as the controller's clock: the C SDK logs "local clock is N seconds ahead" past
 * 10 s and shifts its refresh timer by the difference. Upstream answers its in-memory activity there;
 * the request's time is it. `cert`: what the session says of its certificate (an extension asked for).
 */
export function apiSessionDetail(ctx: Ctx, s: SessionWithIdentity, token: string, own = false, cert: CertState = NO_CERT_STATE, extJwtQuery?: Record<string, unknown>) {
  const expiresAt = s.expiresAt ? new Date(s.expiresAt) : new Date(Date.parse(s.lastActivityAt) + timeoutMs(ctx));
  return {
    id: s.id,
    _links: selfLink('api-sessions', s.id),
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    tags: fromJson(s.tags, {}),
    token,
    identity: identityRef(s.identityId, s.identityName),
    identityId: s.identityId,
    authenticatorId: s.authenticatorId,
    ipAddress: s.ipAddress,
    configTypes: fromJson<string[]>(s.configTypes, []),
    authQueries: [
      ...(isSet(s.isMfaRequired) && !isSet(s.isMfaComplete) ? [MFA_AUTH_QUERY] : []),
      // The second-factor JWT still owed (upstream's EXT-JWT query, with the signer's client id, scopes and URL when read).
      ...(s.extJwtPending ? [extJwtQuery ?? { typeId: 'EXT-JWT', provider: 'url', id: s.extJwtPending }] : []),
    ],
    isMfaRequired: isSet(s.isMfaRequired),
    isMfaComplete: isSet(s.isMfaComplete),
    isCertExtendable: isSet(s.isCertExtendable),
    isCertExtendRequested: cert.isCertExtendRequested,
    isCertKeyRollRequested: cert.isCertKeyRollRequested,
    improperClientCertChain: cert.improperClientCertChain,
    lastActivityAt: s.lastActivityAt,
    cachedLastActivityAt: own ? iso(ctx.clock.now()) : s.lastActivityAt,
    cachedUpdatedAt: s.updatedAt,
    expiresAt: iso(expiresAt),
    expirationSeconds: Math.max(0, Math.round((expiresAt.getTime() - ctx.clock.now().getTime()) / 1000)),
  };
}

