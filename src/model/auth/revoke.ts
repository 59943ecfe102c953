// A credential taken away takes its API sessions with it: deleting an authenticator (or an external
// JWT signer), re-enrolling it, or changing its password ends every API session opened with it, in the
// same transaction (their Dial/Bind sessions go with them by cascade). Disabling an identity already
// ends all of its sessions.
import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.js';

/**
 * End the API sessions opened with this authenticator (or signer), but `keep`: the caller's own
 * session when it changes its own password, so the change does not log out the one who made it.
 */
export async function endSessionsOf(tx: Kysely<Database>, authenticatorId: string, keep?: string): Promise<number> {
  let q = tx.deleteFrom('apiSessions').where('authenticatorId', '=', authenticatorId);
  if (keep) q = q.where('id', '!=', keep);
  const res = await q.executeTakeFirst();
  return Number(res.numDeletedRows);
}

/** Key of a prepared authenticator input naming the API session to keep (never from a request body). */
export const KEEP_API_SESSION = Symbol('keepApiSession');
