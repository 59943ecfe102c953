// Revocations (upstream 2.x's POST /revocations): a JWT id (JTI), an API session or an identity whose
// tokens no longer count. Upstream keeps them for its JWT sessions (OIDC) and routers enforce them on
// live connections. Here a revocation also takes effect on what ztc already holds, in the transaction
// that records it: an API_SESSION revocation ends that API session, an IDENTITY revocation ends every API
// session the identity made up to then, and a JTI revocation ends the API session or service session
// whose id it names (the data plane then closes their connections within a second, as for a DELETE).
// Later token kinds (OIDC access tokens, JWT service sessions) ask isRevoked. A JWT API session that ends
// before its access token does (logout, deletion, a disabled or deleted identity, a credential taken away)
// is revoked here too, as upstream's end_session and identity constraint revoke: 2.x routers check access
// tokens on their own and hear of ended sessions only through these (the router data model carries every
// revocation but spent refresh tokens, which routers never see).
import type { Tx } from '../../store/db.js';
import { iso } from '../clock.js';
import type { Ctx } from '../context.js';
import { afterCommit, recordRowChange } from '../events/record.js';
import { sessionDeleted } from '../events/emit.js';
import { endApiSessions, revokeEndedJwtSessions } from './revoke.js';

export const REVOCATION_TYPES = ['JTI', 'IDENTITY', 'API_SESSION'] as const;
export type RevocationType = (typeof REVOCATION_TYPES)[number];

/**
 * How long a revocation is kept: upstream keeps it for the longest lifetime of the tokens it can name
 * (edge.oidc's refresh, access and ID token durations; 24 h, the refresh token's, by default), after which
 * no token it names can still be valid.
 */
export const REVOCATION_LIFETIME_MS = 24 * 3_600_000;

const UUID = /^(urn:uuid:)?\{?[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\}?$/i;
export const isUuid = (id: string) => UUID.test(id);
/** The jti of a token ztc's OIDC provider issued (ids.ts newId(22)). */
export const isTokenId = (id: string) => /^[0-9A-Za-z]{22}$/.test(id);

/**
 * The tags of a spent refresh token's revocation (model/auth/oidc/grants.ts): it only keeps the token from
 * being used twice at the token endpoint, and routers never see refresh tokens, so the router data model
 * leaves these out (an SDK refreshing every half hour would otherwise add 48 a day each).
 */
export const SPENT_REFRESH_TOKEN_TAGS = JSON.stringify({ 'ztc.spent': 'refresh-token' });

/** An identity about to be deleted: its JWT API sessions (which go with it by cascade) revoked by id. */
export async function revokeDeletedIdentity(tx: Tx, ctx: Ctx, identityId: string): Promise<number> {
  const sessions = await tx.selectFrom('apiSessions').select(['id', 'expiresAt']).where('identityId', '=', identityId).execute();
  return revokeEndedJwtSessions(tx, ctx, sessions, 'identity-deleted');
}

/**
 * What a revocation does to what is live now, in the transaction that records it. Returns how many API
 * sessions and service sessions it ended.
 */
export async function enforceRevocation(tx: Tx, ctx: Ctx, r: { id: string; type: string; issuedBefore: string }): Promise<{ apiSessions: number; sessions: number }> {
  if (r.type === 'IDENTITY') return { apiSessions: await endApiSessions(tx, ctx, { identityId: r.id, createdBy: r.issuedBefore }, 'revoked'), sessions: 0 };
  const apiSessions = await endApiSessions(tx, ctx, { apiSessionId: r.id }, 'revoked');
  let sessions = 0;
  if (r.type === 'JTI') {
    // A service session (its id is its token's jti); its API session goes on.
    const row = await tx.selectFrom('sessions').selectAll().where('id', '=', r.id).executeTakeFirst();
    if (row) {
      await tx.deleteFrom('sessions').where('id', '=', r.id).execute();
      await recordRowChange(tx, ctx, 'sessions', 'deleted', r.id, row as never, null, 'revoked');
      afterCommit(tx, ctx, sessionDeleted(ctx, row as never));
      sessions = 1;
    }
  }
  return { apiSessions, sessions };
}

/**
 * Whether a token is revoked: its id (jti), its API session or its identity is named by a revocation that
 * has not expired; an identity's only when the token was issued at or before the revocation (to the
 * second, as a JWT's iat is), so a later login counts again, as upstream checks it (env/security_ctx.go).
 */
export async function isRevoked(ctx: Ctx, t: { jti?: string; apiSessionId?: string; identityId?: string; issuedAt?: Date | string | number }): Promise<boolean> {
  const ids = [t.jti, t.apiSessionId, t.identityId].filter((x): x is string => !!x);
  if (!ids.length) return false;
  const rows = await ctx.store.db
    .selectFrom('revocations')
    .select(['id', 'type', 'issuedBefore'])
    .where('id', 'in', ids)
    .where('expiresAt', '>', iso(ctx.clock.now()))
    .execute();
  for (const r of rows) {
    if (r.type !== 'IDENTITY' && (r.id === t.jti || r.id === t.apiSessionId)) return true;
    if (r.type === 'IDENTITY' && r.id === t.identityId) {
      if (t.issuedAt === undefined) return true;
      const issued = Math.floor(new Date(t.issuedAt).getTime() / 1000);
      if (issued <= Math.floor(Date.parse(r.issuedBefore) / 1000)) return true;
    }
  }
  return false;
}

/** Revocations past their expiry name nothing that can still be valid: removed, 500 at a time. */
export async function pruneRevocations(ctx: Ctx): Promise<number> {
  const now = iso(ctx.clock.now());
  let total = 0;
  for (;;) {
    const ids = (await ctx.store.db.selectFrom('revocations').select('id').where('expiresAt', '<', now).limit(500).execute()).map((r) => r.id);
    if (!ids.length) return total;
    await ctx.store.db.deleteFrom('revocations').where('id', 'in', ids).execute();
    total += ids.length;
    if (ids.length < 500) return total;
  }
}

