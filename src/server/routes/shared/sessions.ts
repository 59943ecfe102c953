// Sessions in both APIs (the client's own; every session for admins), terminators (management CRUD,
// and a service's terminators for clients) and the service-change indicator.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { lastServiceChange, lastServiceChangeWithSession } from '../../../model/changes.js';
import type { Ctx } from '../../../model/context.js';
import { listResource } from '../../../model/crud.js';
import { canUse } from '../../../model/policy/access.js';
import { clientSessions, createSession, sessionCreate, sessions } from '../../../model/resources/sessions.js';
import { services } from '../../../model/resources/services.js';
import { terminators } from '../../../model/resources/terminators.js';
import type { AnyQuery } from '../../../model/resource.js';
import { notFound } from '../../../model/errors.js';
import { Envelope, IdParams, ListEnvelope, ListQuery } from '../../../model/schemas/common.js';
import type { ListParams } from '../../../store/list.js';
import { errors, filterableFields, mountResource } from '../../crud.js';
import { listOf, ok } from '../../envelope.js';
import { principalOf, readsAll } from '../../plugins/auth.js';
import { parentExists } from '../../related.js';
import { IGNORES_UNKNOWN_FIELDS } from '../../schema-compilers.js';

const own = (req: FastifyRequest) => {
  const p = principalOf(req);
  return (q: AnyQuery) => q.where('e.identity_id' as never, '=', p.identityId as never);
};

export function registerSessions(app: FastifyInstance, ctx: Ctx, api: 'client' | 'management') {
  app.get(
    '/current-api-session/service-updates',
    // Read with the API session in one statement (the SDKs' poll); an API token's request reads it after.
    { config: { access: 'session', withSession: (ctx, tokenHash) => lastServiceChangeWithSession(ctx.store.db, tokenHash) }, schema: { operationId: 'listServiceUpdates', tags: ['Current API Session'], summary: 'When the caller\'s service list last changed: poll this and re-list services when it moves', response: { 200: Envelope(Type.Object({ lastChangeAt: Type.String() })), ...errors(401) } } },
    async (req) => ok({ lastChangeAt: typeof req.prefetched === 'string' ? req.prefetched : await lastServiceChange(ctx.store.db, principalOf(req).apiSessionId) }),
  );

  if (api === 'management') {
    mountResource(app, ctx, sessions);
    mountResource(app, ctx, terminators);
    app.get(
      '/sessions/:id/route-path',
      { config: { access: 'admin' }, schema: { operationId: 'detailSessionRoutePath', tags: ['Sessions'], summary: 'The routers a session\'s traffic crosses (none: this controller runs no data plane)', params: IdParams, response: { 200: Envelope(Type.Object({ routePath: Type.Array(Type.String()) })), ...errors(401, 404) } } },
      async (req) => {
        const { id } = req.params as { id: string };
        await parentExists(ctx, sessions, id);
        return ok({ routePath: [] });
      },
    );
    return;
  }

  mountResource(app, ctx, clientSessions, { scope: own, access: { list: 'session', get: 'session', delete: 'session' } });
  app.post(
    '/sessions',
    { config: { access: 'session', ...IGNORES_UNKNOWN_FIELDS }, schema: { operationId: 'createSession', tags: ['Sessions'], summary: 'Open a Dial or Bind session for a service the caller may use', body: sessionCreate, response: { 201: Envelope(clientSessions.schemas.detail), ...errors(400, 401, 404) } } },
    async (req, reply) => {
      const detail = await createSession(ctx, principalOf(req), req.body as { serviceId: string; type?: string });
      reply.code(201);
      return ok(detail);
    },
  );

  app.get(
    '/services/:id/terminators',
    { config: { access: 'session' }, schema: { operationId: 'listServiceTerminators', tags: ['Services'], summary: 'The terminators of a service the caller may use', params: IdParams, querystring: ListQuery, response: { 200: ListEnvelope(terminators.schemas.detail), ...errors(400, 401, 404) } } },
    async (req) => {
      const p = principalOf(req);
      const { id } = req.params as { id: string };
      await parentExists(ctx, services, id);
      if (!readsAll(p) && !(await canUse(ctx.store.db, p.identityId, id))) throw notFound('service', id);
      const { items, pagination } = await listResource(ctx, terminators, req.query as ListParams, (q) => q.where('e.service_id' as never, '=', id as never));
      return listOf(items, pagination, filterableFields(terminators));
    },
  );
}
