// A credential taken away takes its API sessions with it: deleting an authenticator (or an external
// JWT signer), re-enrolling it, or changing its password ends every API session opened with it, in the
// same transaction (their Dial/Bind sessions go with them by cascade); so does disabling an identity.
// Sessions ended this way were ended by someone else's change, not by their owner's logout or idle
// timeout: each is recorded as an entity change (in the audit, with who did it) beside its
// edge.apiSessions event, as deleting one through the API is. A JWT API session so ended is also
// revoked by id (revokeEndedJwtSessions): 2.x routers hold its access token and check it on their own.
import type { Tx } from '../../store/db.js';
import type { Ctx } from '../context.js';
import { apiSessionDeleted } from '../events/emit.js';
import { afterCommit, recordRowChange } from '../events/record.js';
import { iso } from '../clock.js';
import { lifetimes } from './oidc/settings.js';

/**
 * End the API sessions opened with this authenticator (or signer), all of an identity's (those made
 * at or before `createdBy` when given), or one by its id, but `keep`: the caller's own session when it
 * changes its own password, so the change does not log out the one who made it. `reason` goes into the
 * events (credential-changed, identity-disabled, revoked).
 */
export async function endApiSessions(
  tx: Tx,
  ctx: Ctx,
  of: { authenticatorId: string } | { identityId: string; createdBy?: string } | { apiSessionId: string },
  reason: string,
  keep?: string,
): Promise<number> {
  let q = tx.selectFrom('apiSessions').selectAll();
  if ('authenticatorId' in of) q = q.where('authenticatorId', '=', of.authenticatorId);
  else if ('apiSessionId' in of) q = q.where('id', '=', of.apiSessionId);
  else {
    q = q.where('identityId', '=', of.identityId);
    if (of.createdBy) q = q.where('createdAt', '<=', of.createdBy);
  }
  if (keep) q = q.where('id', '!=', keep);
  const rows = await q.execute();
  if (!rows.length) return 0;
  const ids = rows.map((r) => r.id);
  for (let i = 0; i < ids.length; i += 500) await tx.deleteFrom('apiSessions').where('id', 'in', ids.slice(i, i + 500)).execute();
  for (const row of rows) {
    await recordRowChange(tx, ctx, 'apiSessions', 'deleted', row.id, row as unknown as Record<string, unknown>, null, reason);
    afterCommit(tx, ctx, apiSessionDeleted(ctx, row as unknown as Record<string, unknown>, reason));
  }
  await revokeEndedJwtSessions(tx, ctx, rows, reason);
  return rows.length;
}

/** A minute past the last access token a session could have been given: clocks differ a little. */
const SKEW_MS = 60_000;

/**
 * JWT API sessions (OIDC logins: `expiresAt` set) that ended, revoked by id (API_SESSION) until every
 * access token issued for them has expired (none is issued after the end), so 2.x routers close the
 * channels of SDKs still holding one. Legacy sessions need none: routers are told they ended
 * (ApiSessionRemoved). A session already revoked keeps its revocation. Each new one is an entity change
 * (the data plane reads the router data model again within a second of one).
 */
export async function revokeEndedJwtSessions(tx: Tx, ctx: Ctx, ended: { id: string; expiresAt?: string | null }[], reason: string): Promise<number> {
  const ids = [...new Set(ended.filter((s) => !!s.expiresAt).map((s) => s.id))];
  if (!ids.length) return 0;
  const now = ctx.clock.now();
  const at = iso(now);
  const expiresAt = iso(new Date(now.getTime() + lifetimes(ctx).accessMs + SKEW_MS));
  let made = 0;
  for (let i = 0; i < ids.length; i += 500) {
    const rows = ids.slice(i, i + 500).map((id) => ({ id, createdAt: at, updatedAt: at, tags: '{}', type: 'API_SESSION', expiresAt, issuedBefore: at }));
    const inserted = await tx.insertInto('revocations').values(rows).onConflict((oc) => oc.column('id').doNothing()).returning('id').execute();
    const fresh = new Set(inserted.map((r) => r.id));
    for (const r of rows) if (fresh.has(r.id)) await recordRowChange(tx, ctx, 'revocations', 'created', r.id, null, r, reason);
    made += fresh.size;
  }
  return made;
}

/** The API sessions of a credential taken away (see endApiSessions). */
export const endSessionsOf = (tx: Tx, ctx: Ctx, authenticatorId: string, keep?: string) => endApiSessions(tx, ctx, { authenticatorId }, 'credential-changed', keep);

/** Key of a prepared authenticator input naming the API session to keep (never from a request body). */
export const KEEP_API_SESSION = Symbol('keepApiSession');
