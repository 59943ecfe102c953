import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Ctx } from '../../../model/context.js';
import { presentedCertificates } from '../../../model/pki/client-certs.js';
import { extendCertificate, verifyExtendedCertificate } from '../../../model/pki/extend.js';
import { actorCtx } from '../../actor.js';
import { Empty, Envelope, IdParams } from '../../../model/schemas/common.js';
import { errors } from '../../crud.js';
import { empty, ok } from '../../envelope.js';

const session = { access: 'session' as const };

export function registerExtend(app: FastifyInstance, ctx: Ctx) {
  const tags = ['Current Identity'];
  app.post(
    '/current-identity/authenticators/:id/extend',
    {
      config: session,
      schema: {
        operationId: 'extendCurrentIdentityAuthenticator', tags, summary: 'Get a new client certificate for a CSR, presenting the current one on the connection; the current one stays valid until extend-verify',
        params: IdParams, body: Type.Object({ clientCertCsr: Type.String({ minLength: 1, maxLength: 65536 }) }),
        response: { 200: Envelope(Type.Object({ ca: Type.String(), clientCert: Type.String() })), ...errors(400, 401) },
      },
    },
    async (req) => ok(await extendCertificate(actorCtx(ctx, req), req.apiSession, (req.params as { id: string }).id, (req.body as { clientCertCsr: string }).clientCertCsr, presentedCertificates(req.raw.socket))),
  );
  app.post(
    '/current-identity/authenticators/:id/extend-verify',
    {
      config: session,
      schema: {
        operationId: 'extendVerifyCurrentIdentityAuthenticator', tags, summary: 'Put the certificate from extend in force: later certificate logins use it',
        params: IdParams, body: Type.Object({ clientCert: Type.String({ minLength: 1, maxLength: 65536 }) }),
        response: { 200: Envelope(Empty), ...errors(400, 401) },
      },
    },
    async (req) => {
      await verifyExtendedCertificate(actorCtx(ctx, req), req.apiSession, (req.params as { id: string }).id, (req.body as { clientCert: string }).clientCert);
      return empty();
    },
  );
}
