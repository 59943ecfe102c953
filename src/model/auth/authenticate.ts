// POST /authenticate: checks credentials by method and opens an API session.
import { X509Certificate } from 'node:crypto';
import type { Ctx } from '../context.js';
import { fingerprintOf } from '../pki/certs.js';
import { chainsTo, isCurrent, issuedByNetwork } from '../pki/client-certs.js';
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

export async function authenticate(ctx: Ctx, method: string, input: AuthenticateInput, ipAddress: string, presented: X509Certificate[] = []) {
  if (method === 'password') return authenticatePassword(ctx, input, ipAddress);
  if (method === 'cert') return authenticateCert(ctx, input, ipAddress, presented);
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

/** The certificate presented on the TLS connection (the handshake proved its key) matched to a cert authenticator. */
async function authenticateCert(ctx: Ctx, input: AuthenticateInput, ipAddress: string, presented: X509Certificate[]) {
  const leaf = presented[0];
  if (!leaf) throw new ApiError(401, 'INVALID_AUTH', 'The cert method needs a client certificate presented on the TLS connection');
  const row = await ctx.store.db
    .selectFrom('authenticators as a')
    .innerJoin('identities as i', 'i.id', 'a.identityId')
    .innerJoin('authPolicies as p', 'p.id', 'i.authPolicyId')
    .leftJoin('cas as c', 'c.id', 'a.caId')
    .select(['a.id', 'a.identityId', 'a.isIssuedByNetwork', 'a.caId', 'i.disabled', 'i.disabledUntil', 'p.primaryJson', 'c.certPem as caPem', 'c.isVerified as caVerified', 'c.isAuthEnabled as caAuth'])
    .where('a.method', '=', 'cert')
    .where('a.fingerprint', '=', fingerprintOf(leaf.toString()))
    .executeTakeFirst();
  if (!row) throw invalidAuth();
  const now = ctx.clock.now();
  const primary = JSON.parse(row.primaryJson || '{}') as { cert?: { allowed?: boolean; allowExpiredCerts?: boolean } };
  if (primary.cert?.allowed === false) throw invalidAuth();
  if (!isCurrent(leaf, now) && !primary.cert?.allowExpiredCerts) throw invalidAuth();
  if (isSet(row.isIssuedByNetwork)) {
    if (!issuedByNetwork(ctx, leaf, presented)) throw invalidAuth();
  } else if (!row.caPem || !isSet(row.caVerified) || !isSet(row.caAuth) || !chainsTo(leaf, presented, new X509Certificate(row.caPem))) {
    throw invalidAuth();
  }
  if (isSet(row.disabled) && (!row.disabledUntil || Date.parse(row.disabledUntil) > now.getTime())) throw invalidAuth();
  await recordClientInfo(ctx, row.identityId, input);
  const { token } = await createApiSession(ctx, {
    identityId: row.identityId,
    authenticatorId: row.id,
    ipAddress,
    configTypes: input.configTypes ?? [],
    isCertExtendable: isSet(row.isIssuedByNetwork),
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
