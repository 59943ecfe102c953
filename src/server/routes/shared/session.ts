// Authentication and the calling identity's own resources: the same on both APIs.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { apiSessionDetail, deleteApiSession } from '../../../model/auth/api-sessions.js';
import { authenticate, AUTH_METHODS } from '../../../model/auth/authenticate.js';
import { extJwtAuthQuery, secondaryChallenge } from '../../../model/auth/ext-jwt.js';
import { presentedCertificates } from '../../../model/pki/client-certs.js';
import { certStateOf } from '../../../model/pki/extend.js';
import { verifyPassword } from '../../../model/auth/password.js';
import { KEEP_API_SESSION } from '../../../model/auth/revoke.js';
import type { Ctx } from '../../../model/context.js';
import { detailOfRow, getResource, listResource, updateResource } from '../../../model/crud.js';
import { ApiError, notFound, unauthorized } from '../../../model/errors.js';
import type { Row } from '../../../model/resource.js';
import {
  authenticatorDetail, authenticators, ownAuthenticatorPatch, ownAuthenticatorUpdate,
} from '../../../model/resources/authenticators.js';
import { identities, identityDetail, identityWithSession } from '../../../model/resources/identities.js';
import { apiSessionSchema } from '../../../model/schemas/api-session.js';
import { Empty, Envelope, IdParams, ListEnvelope, ListQuery, Password, Username } from '../../../model/schemas/common.js';
import type { ListParams } from '../../../store/list.js';
import { errors, filterableFields } from '../../crud.js';
import { empty, listOf, ok } from '../../envelope.js';
import { authorizationOf, principalOf } from '../../plugins/auth.js';
import { actorCtx } from '../../actor.js';
import { apiSessionEnded, loginFailed, loginSucceeded } from '../../../model/events/emit.js';
import { IGNORES_UNKNOWN_FIELDS } from '../../schema-compilers.js';

const ClientInfo = Type.Object(
  Object.fromEntries(['arch', 'domain', 'hostname', 'os', 'osRelease', 'osVersion', 'appId', 'appVersion', 'branch', 'revision', 'type', 'version'].map((k) => [k, Type.Optional(Type.String({ maxLength: 255 }))])),
);

const AuthenticateBody = Type.Object({
  username: Type.Optional(Username),
  password: Type.Optional(Password),
  configTypes: Type.Optional(Type.Array(Type.String({ maxLength: 255 }), { maxItems: 100 })),
  envInfo: Type.Optional(ClientInfo),
  sdkInfo: Type.Optional(ClientInfo),
});

const session = { access: 'session' as const };
const partial = { access: 'partial' as const };

export function registerSessionRoutes(app: FastifyInstance, ctx: Ctx) {
  app.post(
    '/authenticate',
    {
      config: { access: 'public' },
      schema: {
        operationId: 'authenticate', tags: ['Authentication'], summary: 'Log in and open an API session',
        querystring: Type.Object({ method: Type.String({ description: `one of ${AUTH_METHODS.join(', ')}` }) }),
        body: Type.Optional(AuthenticateBody),
        response: { 200: Envelope(apiSessionSchema), ...errors(400, 401, 429) },
      },
    },
    async (req, reply) => {
      const { method } = req.query as { method: string };
      const body = (req.body ?? {}) as Row;
      let opened: Awaited<ReturnType<typeof authenticate>>;
      try {
        opened = await authenticate(ctx, method, body, req.ip, presentedCertificates(req.raw.socket), authorizationOf(req));
      } catch (err) {
        loginFailed(ctx, method, err, req.ip, { username: body.username });
        throw err;
      }
      const { token, session: s, extJwt } = opened;
      loginSucceeded(ctx, method, s);
      reply.header('zt-session', token);
      // A second-factor JWT not sent with the login: said as upstream says it (the session is partial until it is).
      if (extJwt && extJwt.result !== 'ok') reply.header('www-authenticate', await secondaryChallenge(ctx, extJwt.signerId, extJwt.result));
      return ok(apiSessionDetail(ctx, s, token, true, await certStateOf(ctx, s), s.extJwtPending ? await extJwtAuthQuery(ctx, s.extJwtPending) : undefined));
    },
  );

  app.get(
    '/current-api-session',
    { config: partial, schema: { operationId: 'getCurrentAPISession', tags: ['Current API Session'], summary: 'The API session of this request', response: { 200: Envelope(apiSessionSchema), ...errors(401) } } },
    async (req) => {
      if (!req.apiSession) throw unauthorized('The local administrator has no API session');
      const s = req.apiSession;
      return ok(apiSessionDetail(ctx, s, principalOf(req).token, true, await certStateOf(ctx, s), s.extJwtPending ? await extJwtAuthQuery(ctx, s.extJwtPending) : undefined));
    },
  );
  app.delete(
    '/current-api-session',
    { config: partial, schema: { operationId: 'deleteCurrentApiSession', tags: ['Current API Session'], summary: 'Log out: end this API session', response: { 200: Envelope(Empty), ...errors(401) } } },
    async (req) => {
      const p = principalOf(req);
      if (p.apiSessionId) {
        await deleteApiSession(ctx, p.apiSessionId);
        apiSessionEnded(ctx, { id: p.apiSessionId, identityId: p.identityId }, 'logout');
      }
      return empty();
    },
  );

  app.get(
    '/current-identity',
    {
      // The identity is read with the API session (one statement, by its token hash), not after it.
      config: { ...session, withSession: identityWithSession },
      schema: { operationId: 'getCurrentIdentity', tags: ['Current Identity'], summary: 'The identity of this API session', response: { 200: Envelope(identityDetail), ...errors(401) } },
    },
    async (req) => {
      const p = principalOf(req);
      // An API token or the local administrator has no session to read it by; a read that failed is
      // made again the usual way (which answers for the database if it is down).
      const row = req.prefetched as Row | undefined;
      const me = row?.id === p.identityId ? await detailOfRow(ctx, identities, row) : await getResource(ctx, identities, p.identityId);
      // As upstream: the caller's own MFA is one link away.
      return ok(Object.assign(me, { _links: Object.assign(me._links as Record<string, unknown>, { mfa: { href: './current-identity/mfa' } }) }));
    },
  );

  registerOwnAuthenticators(app, ctx);
}

function registerOwnAuthenticators(app: FastifyInstance, ctx: Ctx) {
  const tags = ['Current Identity'];
  const fields = filterableFields(authenticators);
  app.get(
    '/current-identity/authenticators',
    { config: session, schema: { operationId: 'listCurrentIdentityAuthenticators', tags, summary: "The calling identity's authenticators", querystring: ListQuery, response: { 200: ListEnvelope(authenticatorDetail), ...errors(400, 401) } } },
    async (req) => {
      const me = principalOf(req).identityId;
      const { items, pagination } = await listResource(ctx, { ...authenticators, source: (db) => db.selectFrom('authenticators as e').where('e.identityId', '=', me) as never }, req.query as ListParams);
      return listOf(items, pagination, fields);
    },
  );
  const own = async (identityId: string, id: string) => {
    const a = (await getResource(ctx, authenticators, id).catch(() => undefined)) as Row | undefined;
    if (!a || a.identityId !== identityId) throw notFound('authenticator', id);
    return a;
  };
  app.get(
    '/current-identity/authenticators/:id',
    { config: session, schema: { operationId: 'detailCurrentIdentityAuthenticator', tags, summary: "One of the calling identity's authenticators", params: IdParams, response: { 200: Envelope(authenticatorDetail), ...errors(401, 404) } } },
    async (req) => ok(await own(principalOf(req).identityId, (req.params as { id: string }).id)),
  );
  for (const [method, mode, body, operationId] of [
    ['PUT', 'update', ownAuthenticatorUpdate, 'updateCurrentIdentityAuthenticator'],
    ['PATCH', 'patch', ownAuthenticatorPatch, 'patchCurrentIdentityAuthenticator'],
  ] as const) {
    app.route({
      method,
      url: '/current-identity/authenticators/:id',
      config: { ...session, ...IGNORES_UNKNOWN_FIELDS },
      schema: { operationId, tags, summary: 'Change your own username or password (the current password is required)', params: IdParams, body, response: { 200: Envelope(Empty), ...errors(400, 401, 404) } },
      handler: async (req) => {
        const me = principalOf(req).identityId;
        const { id } = req.params as { id: string };
        const { currentPassword, ...changes } = req.body as Row;
        const a = await own(me, id);
        if (a.method !== 'updb') throw new ApiError(409, 'CANNOT_UPDATE_AUTHENTICATOR', 'Only username/password authenticators can be changed this way');
        const stored = await ctx.store.db.selectFrom('authenticators').select('passwordHash').where('id', '=', id).executeTakeFirst();
        if (!(await verifyPassword(currentPassword, stored?.passwordHash))) {
          throw new ApiError(401, 'UNAUTHORIZED', 'currentPassword is not the current password of this authenticator');
        }
        await updateResource(actorCtx(ctx, req), authenticators, id, { ...changes, [KEEP_API_SESSION]: principalOf(req).apiSessionId }, mode, (existing) => {
          if (existing.identityId !== me) throw notFound('authenticator', id);
        });
        return empty();
      },
    });
  }
}
