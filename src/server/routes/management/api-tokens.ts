// API tokens: listed, read and revoked (deleted) through the declaration's standard routes; created by
// the route below, which names the caller as the token's identity unless another admin is given, and
// answers the token itself, the one time it is ever shown.
import type { FastifyInstance } from 'fastify';
import type { Ctx } from '../../../model/context.js';
import { createResource } from '../../../model/crud.js';
import { selfLink, type Row } from '../../../model/resource.js';
import { apiTokenCreated, apiTokens } from '../../../model/resources/api-tokens.js';
import { Envelope } from '../../../model/schemas/common.js';
import { errors, mountResource, opIds } from '../../crud.js';
import { ok } from '../../envelope.js';
import { principalOf } from '../../plugins/auth.js';
import { actorCtx } from '../../actor.js';

export function registerApiTokens(app: FastifyInstance, ctx: Ctx) {
  mountResource(app, ctx, apiTokens, { only: ['list', 'get', 'delete'] });
  app.post(
    '/api-tokens',
    {
      config: { access: 'admin' },
      schema: {
        operationId: opIds(apiTokens).create, tags: ['API Tokens'],
        summary: 'Create an API token: the answer holds the token, shown this once (only its hash is kept)',
        body: apiTokens.schemas.create, response: { 201: Envelope(apiTokenCreated), ...errors(400, 401, 403) },
      },
    },
    async (req, reply) => {
      const body = req.body as Row;
      const created = await createResource(actorCtx(ctx, req), apiTokens, { ...body, identityId: body.identityId ?? principalOf(req).identityId });
      reply.code(201);
      return ok({ ...created, _links: selfLink('api-tokens', created.id) });
    },
  );
}
