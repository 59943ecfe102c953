// GET /pki/status (our extension, not upstream's): every certificate the controller holds or issued, with
// days left, and warnings for its own that expire within 30 days (model/pki/status.ts).
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Ctx } from '../../../model/context.js';
import { ownCertificates, ownExpiryWarnings, storedCertificates } from '../../../model/pki/status.js';
import { Envelope, Nullable } from '../../../model/schemas/common.js';
import { errors } from '../../crud.js';
import { ok } from '../../envelope.js';

const CertStatus = Type.Object({
  kind: Type.String({ description: 'root, intermediate, server, signer (a key, no certificate), ca (trusted third-party CA), identity, router or router-server' }),
  name: Type.String(),
  ownerId: Nullable(Type.String()),
  subject: Type.String(),
  issuer: Type.String(),
  fingerprint: Type.String(),
  notBefore: Nullable(Type.String()),
  notAfter: Nullable(Type.String()),
  daysLeft: Nullable(Type.Integer()),
});

export function registerPkiStatus(app: FastifyInstance, ctx: Ctx) {
  app.get(
    '/pki/status',
    {
      config: { access: 'admin' },
      schema: {
        operationId: 'getPkiStatus',
        tags: ['Certificate Authority'],
        summary: 'ztc extension: every certificate the controller holds or issued, with days left, and warnings for its own expiring within 30 days',
        querystring: Type.Object({ own: Type.Optional(Type.Boolean({ description: 'only the controller\'s own certificates' })) }, { additionalProperties: false }),
        response: { 200: Envelope(Type.Object({ certificates: Type.Array(CertStatus), warnings: Type.Array(Type.String()) })), ...errors(400, 401) },
      },
    },
    async (req) => {
      const now = ctx.clock.now();
      const own = ownCertificates(ctx.pki, now);
      const stored = (req.query as { own?: boolean }).own ? [] : await storedCertificates(ctx.store.db, now);
      return ok({ certificates: [...own, ...stored], warnings: ownExpiryWarnings(ctx.pki, now) });
    },
  );
}
