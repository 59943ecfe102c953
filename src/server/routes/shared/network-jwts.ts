// GET /network-jwts (newer than API 0.26.28; ZAC's JWT signers page offers it as "Download Network JWT"):
// public on both APIs and at the server root, as upstream serves it (controller/internal/routes/network-jwt_router.go).
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Ctx } from '../../../model/context.js';
import { networkJwt } from '../../../model/pki/jwt.js';
import { ListEnvelope } from '../../../model/schemas/common.js';
import { ok } from '../../envelope.js';

const NetworkJwt = Type.Object({
  name: Type.String({ description: 'Always "default": a network has one' }),
  token: Type.String({ description: 'An enrollment JWT with method "network", signed by the controller\'s enrollment key (see /enroll/jwks), naming the controller\'s address' }),
});

export function registerNetworkJwts(app: FastifyInstance, ctx: Ctx, opIdSuffix = '') {
  app.get(
    '/network-jwts',
    {
      config: { access: 'public' },
      schema: {
        operationId: `listNetworkJWTs${opIdSuffix}`, tags: ['Enrollment'],
        summary: 'The network JWT: what a client needs to find and trust this network before it enrolls by another method',
        response: { 200: ListEnvelope(NetworkJwt) },
      },
    },
    async () => ok([{ name: 'default', token: await networkJwt(ctx) }]),
  );
}
