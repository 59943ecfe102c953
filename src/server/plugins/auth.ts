// Authorization by route: each route declares config.access; a route that declares nothing is
// admin-only, so a forgotten declaration fails closed.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { resolveSession, type SessionWithIdentity } from '../../model/auth/api-sessions.js';
import { resolveApiToken } from '../../model/auth/api-tokens.js';
import { resolveJwtSession } from '../../model/auth/oidc/bearer.js';
import { looksLikeJwt } from '../../model/auth/oidc/tokens.js';
import { bearerTokens, checkSecondaryJwt, secondaryChallenge, type SecondaryResult } from '../../model/auth/ext-jwt.js';
import { API_TOKEN_PREFIX } from '../../model/resources/api-tokens.js';
import type { Ctx, Principal } from '../../model/context.js';
import { ApiError, unauthorized } from '../../model/errors.js';
import { hashSecret, safeEqual } from '../../model/ids.js';
import { isSet } from '../../store/json.js';
import { ADMIN_READONLY, hasPermission, permits, READ_METHODS } from '../../model/permissions.js';
import { fromJson } from '../../store/json.js';

/**
 * public: anyone; partial: any API session, even one still owing MFA (the MFA routes, the session
 * itself, logout); session: any fully authenticated identity; admin: identities with isAdmin, and
 * read-only admins (the admin_readonly permission) for the methods that only read. This hook is the
 * one place that decides it, for both APIs and the Fabric API.
 */
export type Access = 'public' | 'partial' | 'session' | 'admin';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
    apiSession?: SessionWithIdentity;
    /** What the route's `withSession` read together with the API session (set once the session passed). */
    prefetched?: unknown;
  }
  interface FastifyContextConfig {
    access?: Access;
    /**
     * A read of the caller's own data in the same statement as its API session, by the session's token
     * hash (on PostgreSQL one wait on the server instead of two): the session it returns is checked as
     * any is, and `prefetched` is set to the rest only then. Undefined (no such session) or a failed
     * read: the session is read the usual way. Runs before the request is validated: a read that
     * depends on its query reads it as sent, and answers undefined for anything it does not expect.
     */
    withSession?: WithSession;
  }
}

export type WithSession = (ctx: Ctx, tokenHash: string, request: FastifyRequest) => Promise<{ session: SessionWithIdentity; rest: unknown } | undefined>;

export function sessionToken(request: FastifyRequest): string | undefined {
  const header = request.headers['zt-session'];
  if (typeof header === 'string' && header) return header;
  const auth = request.headers.authorization;
  if (typeof auth === 'string' && /^bearer /i.test(auth)) return auth.slice(7).trim() || undefined;
  return undefined;
}

/**
 * Every Authorization header of the request as one value (Node keeps only the first of several): upstream
 * reads up to three bearer tokens, a second factor's JWT among them.
 */
export function authorizationOf(request: FastifyRequest): string | undefined {
  const raw = request.raw.rawHeaders;
  const values: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i].toLowerCase() === 'authorization') values.push(raw[i + 1]);
  return values.length > 1 ? values.join(', ') : request.headers.authorization;
}

export interface LocalAdmin {
  /** A per-process secret that only in-process (inject) callers know. */
  token: string;
  identityId: string;
  identityName: string;
}

export function registerAuth(app: FastifyInstance, ctx: Ctx, localAdmin?: LocalAdmin) {
  app.decorateRequest('principal', undefined);
  app.decorateRequest('apiSession', undefined);
  app.addHook('onRequest', async (request) => {
    const access: Access = request.routeOptions.config?.access ?? 'admin';
    if (access === 'public' || !request.routeOptions.url) return;
    const token = sessionToken(request);
    if (!token) throw unauthorized();
    if (localAdmin && safeEqual(token, localAdmin.token)) {
      request.principal = { identityId: localAdmin.identityId, identityName: localAdmin.identityName, isAdmin: true, readOnlyAdmin: false, apiSessionId: '', local: true, token };
      return;
    }
    // An API token (automation): no API session, so no MFA to owe; what it may do is its identity's, capped by its scope.
    if (token.startsWith(API_TOKEN_PREFIX)) {
      request.principal = await resolveApiToken(ctx, token);
      if (access === 'admin') assertAdmin(request.principal, request.method, request.url);
      return;
    }
    let s: SessionWithIdentity;
    if (looksLikeJwt(token)) {
      // An OIDC access token: verified, then its API session read by id and judged as any (oidc/bearer.ts).
      s = await resolveJwtSession(ctx, token);
    } else {
      const tokenHash = hashSecret(token);
      const withSession = request.routeOptions.config?.withSession;
      const both = withSession ? await withSession(ctx, tokenHash, request).catch(() => undefined) : undefined;
      s = await resolveSession(ctx, token, tokenHash, both?.session);
      if (both) request.prefetched = both.rest;
    }
    // A session that owes its second-factor JWT takes it from any request that sends it (beside zt-session).
    const secondary = s.extJwtPending ? await takeSecondaryJwt(ctx, s, request) : undefined;
    request.apiSession = s;
    const isAdmin = isSet(s.isAdmin);
    request.principal = { identityId: s.identityId, identityName: s.identityName, isAdmin, readOnlyAdmin: !isAdmin && hasPermission(s.permissions, ADMIN_READONLY), permissions: fromJson<string[]>(s.permissions, []), apiSessionId: s.id, token };
    if (access !== 'partial' && isSet(s.isMfaRequired) && !isSet(s.isMfaComplete)) {
      throw new ApiError(401, 'MFA_REQUIRED', 'This API session must complete MFA first: POST /authenticate/mfa with a code (or enroll MFA, as the auth policy requires)');
    }
    if (access !== 'partial' && s.extJwtPending) {
      throw new ApiError(401, 'UNAUTHORIZED', `This API session owes the JWT of external signer '${s.extJwtPending}' its auth policy requires: send it as Authorization: Bearer (beside zt-session) on this or any request`, undefined, {
        headers: { 'www-authenticate': await secondaryChallenge(ctx, s.extJwtPending, secondary && secondary !== 'ok' ? secondary : 'missing') },
      });
    }
    if (access === 'admin') assertAdmin(request.principal, request.method, request.url);
  });
}

/**
 * The second factor of secondary.requireExtJwtSigner given on a later request (upstream checks the bearer
 * tokens of every request; ztc, like TOTP, marks the session once it has seen one, since SDKs send it with
 * their login only). Only the bearer tokens that are not the session's own token count.
 */
async function takeSecondaryJwt(ctx: Ctx, s: SessionWithIdentity, request: FastifyRequest): Promise<SecondaryResult> {
  const fromZtSession = typeof request.headers['zt-session'] === 'string' && !!request.headers['zt-session'];
  const tokens = bearerTokens([authorizationOf(request)]).filter((t) => fromZtSession || t !== sessionToken(request));
  if (!tokens.length) return 'missing';
  const result = await checkSecondaryJwt(ctx, s.extJwtPending!, s.identityId, tokens);
  if (result !== 'ok') return result;
  await ctx.store.db.updateTable('apiSessions').set({ extJwtPending: null }).where('id', '=', s.id).where('extJwtPending', '=', s.extJwtPending).execute();
  s.extJwtPending = null;
  return result;
}

/**
 * Admin routes: admins; read-only admins when the method only reads (403: known, but not allowed to
 * change); an identity whose permissions name the entity of a Management API path, or that action on it.
 */
function assertAdmin(p: Principal, method: string, url: string) {
  if (p.isAdmin) return;
  if (p.permissions && permits(p.permissions, method, url)) return;
  if (!p.readOnlyAdmin) {
    if (p.permissions?.length) throw new ApiError(403, 'UNAUTHORIZED', `This operation needs an administrator or a permission for it: the calling identity '${p.identityName}' holds ${p.permissions.join(', ')}`);
    throw new ApiError(401, 'UNAUTHORIZED', 'This operation needs an administrator: the calling identity is not an admin');
  }
  if (READ_METHODS.has(method)) return;
  // Said with what to do instead: the caller cannot fix this by retrying or logging in again.
  if (p.apiTokenId) throw new ApiError(403, 'UNAUTHORIZED', `This operation changes the network: the calling API token is read-only, which may only read; make the change with an admin's API token created without --read-only, or logged in as an admin`);
  throw new ApiError(403, 'UNAUTHORIZED', `This operation changes the network: the calling identity '${p.identityName}' is a read-only admin, which may only read; make the change as an admin (log in as one), or have an admin grant this identity isAdmin`);
}

/** Whether the caller reads as an admin does (sees every service, every terminator). */
export const readsAll = (p: Principal) => p.isAdmin || p.readOnlyAdmin;

/** The principal of a route that has access 'session' or 'admin' (set by the hook above). */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw unauthorized();
  return request.principal;
}
