// Resolving an API token on a request: found by its hash, refused when expired or when its identity is
// disabled, and given no more than its identity may do now (a token outlives nothing it was granted:
// an admin demoted to read-only, or to nothing, takes its tokens down with it).
import { iso } from '../clock.js';
import type { Ctx, Principal } from '../context.js';
import { unauthorized } from '../errors.js';
import { hashSecret } from '../ids.js';
import { ADMIN_READONLY, hasPermission } from '../permissions.js';
import { isSet } from '../../store/json.js';
import { first, precompile } from '../../store/precompiled.js';

/** lastUsedAt is written at most this often per token, so reads stay free of writes. */
const TOUCH_MS = 60_000;

const tokenByHash = precompile((db, p) =>
  db
    .selectFrom('apiTokens as t')
    .innerJoin('identities as i', 'i.id', 't.identityId')
    .select(['t.id', 't.name', 't.identityId', 't.readOnly', 't.expiresAt', 't.lastUsedAt', 'i.name as identityName', 'i.isAdmin', 'i.permissions', 'i.disabled', 'i.disabledUntil'])
    .where('t.tokenHash', '=', p(0)),
);

interface TokenRow {
  id: string;
  identityId: string;
  identityName: string;
  readOnly: number;
  expiresAt: string | null;
  lastUsedAt: string | null;
  isAdmin: number;
  permissions: string;
  disabled: number;
  disabledUntil: string | null;
}

export async function resolveApiToken(ctx: Ctx, token: string): Promise<Principal> {
  const row = (await first(ctx.store.db, tokenByHash, [hashSecret(token)])) as TokenRow | undefined;
  // Unknown here: revoked (its row is deleted), or never issued by this network.
  if (!row) throw unauthorized('The API token is not known to this controller: it was revoked, or another network issued it; an admin can create another (ztc token create)');
  const now = ctx.clock.now();
  if (row.expiresAt && Date.parse(row.expiresAt) <= now.getTime()) throw unauthorized('The API token has expired: create another (ztc token create)');
  if (isSet(row.disabled) && (!row.disabledUntil || Date.parse(row.disabledUntil) > now.getTime())) throw unauthorized('The identity is disabled');
  if (!row.lastUsedAt || now.getTime() - Date.parse(row.lastUsedAt) > TOUCH_MS) {
    await ctx.store.db.updateTable('apiTokens').set({ lastUsedAt: iso(now) }).where('id', '=', row.id).execute();
  }
  const admin = isSet(row.isAdmin);
  const readsAsAdmin = admin || hasPermission(row.permissions, ADMIN_READONLY);
  return {
    identityId: row.identityId,
    identityName: row.identityName,
    isAdmin: admin && !isSet(row.readOnly),
    readOnlyAdmin: readsAsAdmin && !(admin && !isSet(row.readOnly)),
    apiSessionId: '',
    apiTokenId: row.id,
    token,
  };
}
