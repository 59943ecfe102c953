// CA verification and JWT, enrollment refresh, an identity's enrollments, authenticator re-enrollment and
// extension requests.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { endSessionsOf } from '../../../model/auth/revoke.js';
import type { Ctx } from '../../../model/context.js';
import { getResource, listResource, writeTx } from '../../../model/crud.js';
import { ApiError, notFound } from '../../../model/errors.js';
import { newId } from '../../../model/ids.js';
import { requestExtend } from '../../../model/pki/extend.js';
import { signEnrollmentJwt } from '../../../model/pki/jwt.js';
import { selfLink } from '../../../model/resource.js';
import { verifyCa } from '../../../model/resources/cas.js';
import { enrollmentDetail, enrollmentRefresh, enrollments, insertEnrollment, refreshEnrollment } from '../../../model/resources/enrollments.js';
import { CreateLocation, DateTime, Empty, Envelope, IdParams, ListEnvelope, ListQuery } from '../../../model/schemas/common.js';
import type { ListParams } from '../../../store/list.js';
import { recordRowChange } from '../../../model/events/record.js';
import { actorCtx } from '../../actor.js';
import { errors, filterableFields } from '../../crud.js';
import { empty, listOf, ok } from '../../envelope.js';
import { IGNORES_UNKNOWN_FIELDS } from '../../schema-compilers.js';

const admin = { access: 'admin' as const };

export function registerPkiManagement(app: FastifyInstance, ctx: Ctx) {
  app.post(
    '/cas/:id/verify',
    {
      config: admin,
      schema: {
        operationId: 'verifyCa', tags: ['Certificate Authority'], summary: 'Verify a CA: send (as text/plain) a certificate it signed whose common name is its verificationToken',
        params: IdParams, consumes: ['text/plain'], response: { 200: Envelope(Empty), ...errors(400, 401, 404, 409) },
      },
    },
    async (req) => {
      await verifyCa(actorCtx(ctx, req), (req.params as { id: string }).id, req.body);
      return empty();
    },
  );
  app.get(
    '/cas/:id/jwt',
    { config: admin, schema: { operationId: 'getCaJwt', tags: ['Certificate Authority'], summary: 'An enrollment JWT for CA auto-enrollment with this CA (application/jwt)', params: IdParams, produces: ['application/jwt'], response: errors(401, 404) } },
    async (req, reply) => {
      const { id } = req.params as { id: string };
      const ca = await ctx.store.db.selectFrom('cas').select('id').where('id', '=', id).executeTakeFirst();
      if (!ca) throw notFound('ca', id);
      const jwt = await signEnrollmentJwt(ctx, { subject: id, token: randomUUID(), method: 'ca', expiresAt: new Date(ctx.clock.now().getTime() + 3650 * 86_400_000), caId: id });
      return reply.type('application/jwt').send(jwt);
    },
  );

  app.post(
    '/enrollments/:id/refresh',
    {
      config: { ...admin, ...IGNORES_UNKNOWN_FIELDS },
      schema: { operationId: 'refreshEnrollment', tags: ['Enrollment'], summary: 'A new expiry for an enrollment (its JWT signed again); the token stays, so a JWT already handed out works again', params: IdParams, body: enrollmentRefresh, response: { 200: Envelope(enrollmentDetail), ...errors(400, 401, 404) } },
    },
    async (req) => {
      const { id } = req.params as { id: string };
      await refreshEnrollment(actorCtx(ctx, req), id, new Date((req.body as { expiresAt: string }).expiresAt));
      return ok(await getResource(ctx, enrollments, id));
    },
  );

  app.get(
    '/identities/:id/enrollments',
    { config: admin, schema: { operationId: 'getIdentityEnrollments', tags: ['Identities'], summary: 'The outstanding enrollments of an identity', params: IdParams, querystring: ListQuery, response: { 200: ListEnvelope(enrollmentDetail), ...errors(401, 404) } } },
    async (req) => {
      const { id } = req.params as { id: string };
      if (!(await ctx.store.db.selectFrom('identities').select('id').where('id', '=', id).executeTakeFirst())) throw notFound('identity', id);
      const scoped = { ...enrollments, source: (db: Ctx['store']['db']) => db.selectFrom('enrollments as e').where('e.identityId', '=', id) as never };
      const { items, pagination } = await listResource(ctx, scoped, req.query as ListParams);
      return listOf(items, pagination, filterableFields(enrollments));
    },
  );

  app.post(
    '/authenticators/:id/request-extend',
    {
      config: { ...admin, ...IGNORES_UNKNOWN_FIELDS },
      schema: {
        operationId: 'requestExtendAuthenticator', tags: ['Authenticator'],
        summary: 'Ask the identity to extend this certificate (and with rollKeys, to make a new key) at its next authentication; its API sessions say so until it does',
        params: IdParams, body: Type.Object({ rollKeys: Type.Optional(Type.Boolean()) }), response: { 200: Envelope(Empty), ...errors(400, 401, 404) },
      },
    },
    async (req) => {
      await requestExtend(actorCtx(ctx, req), (req.params as { id: string }).id, !!(req.body as { rollKeys?: boolean }).rollKeys);
      return empty();
    },
  );

  app.post(
    '/authenticators/:id/re-enroll',
    {
      config: { ...admin, ...IGNORES_UNKNOWN_FIELDS },
      schema: {
        operationId: 'reEnrollAuthenticator', tags: ['Authenticator'], summary: 'Replace an authenticator by an enrollment: updb gives updb, a network certificate ott, a CA certificate ottca',
        params: IdParams, body: Type.Object({ expiresAt: DateTime }, { additionalProperties: false }), response: { 201: Envelope(CreateLocation), ...errors(400, 401, 404) },
      },
    },
    async (req, reply) => {
      const { id } = req.params as { id: string };
      const expiresAt = new Date((req.body as { expiresAt: string }).expiresAt);
      const enrollmentId = newId();
      const c = actorCtx(ctx, req);
      await writeTx(c, async (tx) => {
        const a = await tx.selectFrom('authenticators').selectAll().where('id', '=', id).executeTakeFirst();
        if (!a) throw notFound('authenticator', id);
        await tx.deleteFrom('authenticators').where('id', '=', id).execute();
        await recordRowChange(tx, c, 'authenticators', 'deleted', id, a as never, null, 're-enroll');
        await endSessionsOf(tx, c, id);
        const method = a.method === 'updb' ? 'updb' : a.caId ? 'ottca' : 'ott';
        if (a.method !== 'updb' && a.method !== 'cert') throw new ApiError(400, 'INVALID_AUTHENTICATOR_PROPERTIES', `A ${a.method} authenticator cannot be re-enrolled`);
        await insertEnrollment(tx, c, enrollmentId, { identityId: a.identityId, method, expiresAt, caId: a.caId, username: a.username });
      });
      reply.code(201);
      return ok({ id: enrollmentId, _links: selfLink('enrollments', enrollmentId) });
    },
  );
}
