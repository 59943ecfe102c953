// A credential taken away takes its API sessions with it: deleting an authenticator (or an external
// JWT signer), re-enrolling it, or changing its password ends every API session opened with it, in the
// same transaction (their Dial/Bind sessions go with them by cascade); so does disabling an identity.
// Sessions ended this way were ended by someone else's change, not by their owner's logout or idle
// timeout: each is recorded as an entity change (in the audit, with who did it) beside its
// edge.apiSessions event, as deleting one through the API is.
import type { Tx } from '../../store/db.js';
import type { Ctx } from '../context.js';
import { apiSessionDeleted } from '../events/emit.js';
import { afterCommit, recordRowChange } from '../events/record.js';

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
  return rows.length;
}

/** The API sessions of a credential taken away (see endApiSessions). */
export const endSessionsOf = (tx: Tx, ctx: Ctx, authenticatorId: string, keep?: string) => endApiSessions(tx, ctx, { authenticatorId }, 'credential-changed', keep);

/** Key of a prepared authenticator input naming the API session to keep (never from a request body). */
export const KEEP_API_SESSION = Symbol('keepApiSession');
