// An OIDC access token presented as `Authorization: Bearer` (or zt-session) on the client and management
// APIs and in an edge router hello: checked as upstream's controller checks it (env/appenv.go
// ValidateAccessToken: signature, audience, z_t "a", revocations of its id, API session and identity),
// then the API session it names is read and judged as any API session is (expired, ended, identity
// disabled): a JWT API session is another way to carry the same session, not a second session system.
import type { Ctx } from '../../context.js';
import { unauthorized } from '../../errors.js';
import { first, precompile } from '../../../store/precompiled.js';
import { resolveSession, type SessionWithIdentity } from '../api-sessions.js';
import { isRevoked } from '../revocations.js';
import { TOKEN_TYPE } from './settings.js';
import { InvalidToken, verifyToken, type TokenClaims } from './tokens.js';

const sessionById = precompile((db, p) =>
  db
    .selectFrom('apiSessions as s')
    .innerJoin('identities as i', 'i.id', 's.identityId')
    .selectAll('s')
    .select(['i.name as identityName', 'i.isAdmin', 'i.permissions', 'i.disabled', 'i.disabledUntil'])
    .where('s.id', '=', p(0)),
);

/** The claims of a live access token (not revoked), or InvalidToken. */
export async function checkAccessToken(ctx: Ctx, token: string): Promise<TokenClaims> {
  const claims = await verifyToken(ctx, token, TOKEN_TYPE.access);
  if (await isRevoked(ctx, { jti: claims.jti, apiSessionId: claims.z_asid, identityId: claims.sub, issuedAt: (claims.iat ?? 0) * 1000 })) throw new InvalidToken('its API session was revoked or has ended: log in again');
  return claims;
}

/** The API session behind an access token, checked as resolveSession checks any; 401 otherwise. */
export async function resolveJwtSession(ctx: Ctx, token: string): Promise<SessionWithIdentity> {
  let claims: TokenClaims;
  try {
    claims = await checkAccessToken(ctx, token);
  } catch (e) {
    if (e instanceof InvalidToken) throw unauthorized(`The access token is not accepted: ${e.message}`);
    throw e;
  }
  const row = (await first(ctx.store.db, sessionById, [claims.z_asid])) as SessionWithIdentity | undefined;
  if (!row || row.identityId !== claims.sub) throw unauthorized('The API session of this access token has ended: log in again');
  return resolveSession(ctx, token, '', row);
}
