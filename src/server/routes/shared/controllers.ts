// Where the network's controllers are: the controllers list (both APIs) and the client's keyed map of
// the addresses it can reach this controller at.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { advertisedApiUrl } from '../../../config.js';
import type { Ctx } from '../../../model/context.js';
import { controllers } from '../../../model/resources/controllers.js';
import { Envelope, MapOf } from '../../../model/schemas/common.js';
import { mountResource } from '../../crud.js';
import { ok } from '../../envelope.js';

export function registerControllers(app: FastifyInstance, ctx: Ctx, api: 'client' | 'management') {
  // Any client may find the controllers; in the management API, as every operation there, admins only.
  mountResource(app, ctx, controllers, { access: { list: api === 'client' ? 'session' : 'admin' } });
  if (api !== 'client') return;
  app.get(
    '/protocols',
    { config: { access: 'public' }, schema: { operationId: 'listProtocols', tags: ['Informational'], summary: 'The addresses of this controller\'s client API, by protocol', response: { 200: Envelope(MapOf(Type.Object({ address: Type.String() }))) } } },
    async () => ok({ https: { address: advertisedApiUrl(ctx.config) } }),
  );
}
