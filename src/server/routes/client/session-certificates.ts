// Short-lived certificates bound to the calling API session (they end with it).
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Ctx } from '../../../model/context.js';
import { listResource, writeTx } from '../../../model/crud.js';
import { recordRowChange } from '../../../model/events/record.js';
import { ApiError, notFound, unauthorized } from '../../../model/errors.js';
import { issueSessionCertificate, SESSION_CERT_HOURS } from '../../../model/auth/session-certificates.js';
import { aliases, baseFilterable, defineResource, selfLink } from '../../../model/resource.js';
import { baseFields, Empty, Envelope, IdParams, ListEnvelope, ListQuery } from '../../../model/schemas/common.js';
import { fromJson } from '../../../store/json.js';
import type { ListParams } from '../../../store/list.js';
import { actorCtx } from '../../actor.js';
import { errors, filterableFields } from '../../crud.js';
import { empty, listOf, ok } from '../../envelope.js';

export { SESSION_CERT_HOURS };

const detail = Type.Object({ ...baseFields, certificate: Type.String(), fingerprint: Type.String(), subject: Type.String(), validFrom: Type.String(), validTo: Type.String() });

const sessionCertificates = defineResource({
  name: 'api session certificate',
  plural: 'current-api-session/certificates',
  table: 'apiSessionCertificates',
  apis: ['client'],
  ops: [],
  description: 'Certificates of the calling API session',
  schemas: { detail },
  filterable: {
    ...baseFilterable,
    apiSession: { column: 'e.api_session_id', type: 'string', sortable: true },
    fingerprint: { column: 'e.fingerprint', type: 'string', sortable: true },
    subject: { column: 'e.subject', type: 'string', sortable: true },
    ...aliases({
      validFrom: { column: 'e.valid_from', type: 'datetime', sortable: true },
      validTo: { column: 'e.valid_to', type: 'datetime', sortable: true },
    }),
  },
  toDetail: (r) => ({
    id: r.id, _links: selfLink('current-api-session/certificates', r.id), createdAt: r.createdAt, updatedAt: r.updatedAt, tags: fromJson(r.tags, {}),
    certificate: r.certPem, fingerprint: r.fingerprint, subject: r.subject, validFrom: r.validFrom, validTo: r.validTo,
  }),
  cli: { columns: ['id', 'subject', 'validTo'] },
});

export function registerSessionCertificates(app: FastifyInstance, ctx: Ctx) {
  const tags = ['Current API Session'];
  const config = { access: 'session' as const };
  const sessionId = (req: { apiSession?: { id: string } }) => {
    if (!req.apiSession) throw unauthorized('This operation needs an API session');
    return req.apiSession.id;
  };
  const scoped = (id: string) => ({ ...sessionCertificates, source: (db: Ctx['store']['db']) => db.selectFrom('apiSessionCertificates as e').where('e.apiSessionId', '=', id) as never });

  app.get(
    '/current-api-session/certificates',
    { config, schema: { operationId: 'listCurrentApiSessionCertificates', tags, summary: 'Certificates of this API session', querystring: ListQuery, response: { 200: ListEnvelope(detail), ...errors(400, 401) } } },
    async (req) => {
      const { items, pagination } = await listResource(ctx, scoped(sessionId(req)), req.query as ListParams);
      return listOf(items, pagination, filterableFields(sessionCertificates));
    },
  );
  app.post(
    '/current-api-session/certificates',
    {
      config,
      schema: {
        operationId: 'createCurrentApiSessionCertificate', tags, summary: `Sign a CSR into a certificate valid for ${SESSION_CERT_HOURS} hours, bound to this API session`,
        body: Type.Object({ csr: Type.String({ minLength: 1, maxLength: 65536 }) }),
        response: { 201: Envelope(Type.Object({ id: Type.String(), _links: Type.Unsafe({ type: 'object', additionalProperties: true }), certificate: Type.String(), cas: Type.String() })), ...errors(400, 401) },
      },
    },
    async (req, reply) => {
      const sid = sessionId(req);
      const { id, pem } = await issueSessionCertificate(actorCtx(ctx, req), { apiSessionId: sid, identityId: req.apiSession!.identityId, csrPem: (req.body as { csr: string }).csr });
      reply.code(201);
      return ok({ id, _links: selfLink('current-api-session/certificates', id), certificate: pem, cas: ctx.pki.caBundlePem });
    },
  );
  const one = async (sid: string, id: string) => {
    const row = await ctx.store.db.selectFrom('apiSessionCertificates').selectAll().where('id', '=', id).where('apiSessionId', '=', sid).executeTakeFirst();
    if (!row) throw notFound('certificate', id);
    return row;
  };
  app.get(
    '/current-api-session/certificates/:id',
    { config, schema: { operationId: 'detailCurrentApiSessionCertificate', tags, summary: 'One certificate of this API session', params: IdParams, response: { 200: Envelope(detail), ...errors(401, 404) } } },
    async (req) => ok(sessionCertificates.toDetail(await one(sessionId(req), (req.params as { id: string }).id), ctx)),
  );
  app.delete(
    '/current-api-session/certificates/:id',
    { config, schema: { operationId: 'deleteCurrentApiSessionCertificate', tags, summary: 'Delete a certificate of this API session', params: IdParams, response: { 200: Envelope(Empty), ...errors(400, 401, 404) } } },
    async (req) => {
      const sid = sessionId(req);
      const { id } = req.params as { id: string };
      const existing = await one(sid, id);
      const c = actorCtx(ctx, req);
      await writeTx(c, async (tx) => {
        const res = await tx.deleteFrom('apiSessionCertificates').where('id', '=', id).where('apiSessionId', '=', sid).executeTakeFirst();
        if (Number(res.numDeletedRows) !== 1) throw new ApiError(404, 'NOT_FOUND', `The certificate with id '${id}' was not found`);
        await recordRowChange(tx, c, 'apiSessionCertificates', 'deleted', id, existing as never, null);
      });
      return empty();
    },
  );
}
