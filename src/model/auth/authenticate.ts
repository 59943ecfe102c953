// POST /authenticate: checks credentials by method and opens an API session.
import type { Ctx } from '../context.js';
import { ApiError, invalidAuth } from '../errors.js';
import { isSet } from '../../store/json.js';
import { createApiSession, resolveSession } from './api-sessions.js';
import { verifyPassword } from './password.js';

export interface AuthenticateInput {
  username?: string;
  password?: string;
  configTypes?: string[];
  envInfo?: Record<string, string>;
  sdkInfo?: Record<string, string>;
}

export const AUTH_METHODS = ['password', 'cert', 'ext-jwt'] as const;

export async function authenticate(ctx: Ctx, method: string, input: AuthenticateInput, ipAddress: string) {
  if (method === 'password') return authenticatePassword(ctx, input, ipAddress);
  if ((AUTH_METHODS as readonly string[]).includes(method)) {
    throw new ApiError(400, 'INVALID_AUTH_METHOD', `The authentication method '${method}' is not enabled on this controller yet; use method=password`);
  }
  throw new ApiError(400, 'INVALID_AUTH_METHOD', `Unknown authentication method '${method}': use password, cert or ext-jwt`);
}

async function authenticatePassword(ctx: Ctx, input: AuthenticateInput, ipAddress: string) {
  if (typeof input.username !== 'string' || typeof input.password !== 'string') {
    throw new ApiError(400, 'COULD_NOT_VALIDATE', 'The password method needs username and password', {
      field: input.username === undefined ? 'username' : 'password',
      reason: 'is required',
    });
  }
  const row = await ctx.store.db
    .selectFrom('authenticators as a')
    .innerJoin('identities as i', 'i.id', 'a.identityId')
    .innerJoin('authPolicies as p', 'p.id', 'i.authPolicyId')
    .select(['a.id', 'a.identityId', 'a.passwordHash', 'i.disabled', 'i.disabledUntil', 'p.primaryJson'])
    .where('a.method', '=', 'updb')
    .where('a.username', '=', input.username)
    .executeTakeFirst();
  // verifyPassword does the full work even without a row, so timing does not reveal usernames.
  const ok = await verifyPassword(input.password, row?.passwordHash);
  if (!row || !ok) throw invalidAuth();
  const now = ctx.clock.now().getTime();
  if (isSet(row.disabled) && (!row.disabledUntil || Date.parse(row.disabledUntil) > now)) throw invalidAuth();
  const primary = JSON.parse(row.primaryJson || '{}') as { updb?: { allowed?: boolean } };
  if (primary.updb && primary.updb.allowed === false) throw invalidAuth();

  await recordClientInfo(ctx, row.identityId, input);
  const { token } = await createApiSession(ctx, {
    identityId: row.identityId,
    authenticatorId: row.id,
    ipAddress,
    configTypes: input.configTypes ?? [],
  });
  return { token, session: await resolveSession(ctx, token) };
}

async function recordClientInfo(ctx: Ctx, identityId: string, input: AuthenticateInput) {
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
