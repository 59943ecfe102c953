// POST /services/expose and DELETE /services/{id}/expose (our extension, not upstream's): a whole
// service with its configs and policies in one transaction, and its removal (model/expose.ts).
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Ctx } from '../../../model/context.js';
import { expose, ExposeBody, ExposeResult, unexpose, type ExposeInput } from '../../../model/expose.js';
import { Envelope } from '../../../model/schemas/common.js';
import { errors } from '../../crud.js';
import { ok } from '../../envelope.js';
import { actorCtx } from '../../actor.js';

export function registerExpose(app: FastifyInstance, ctx: Ctx) {
  app.post(
    '/services/expose',
    {
      config: { access: 'admin' },
      schema: {
        operationId: 'exposeService',
        tags: ['Services'],
        summary:
          'ztc extension: create a service with its intercept.v1 and host.v1 configs, Dial and Bind service policies and service edge router policy, all or nothing',
        body: ExposeBody,
        response: { 201: Envelope(ExposeResult), ...errors(400, 401) },
      },
    },
    async (req, reply) => {
      const result = await expose(actorCtx(ctx, req), req.body as ExposeInput);
      reply.code(201);
      return ok(result);
    },
  );
  app.delete(
    '/services/:id/expose',
    {
      config: { access: 'admin' },
      schema: {
        operationId: 'unexposeService',
        tags: ['Services'],
        summary: 'ztc extension: delete a service made by exposeService together with exactly the configs and policies it made',
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 255, description: 'the service id or name' }) }),
        response: { 200: Envelope(ExposeResult), ...errors(400, 401, 404) },
      },
    },
    async (req) => ok(await unexpose(actorCtx(ctx, req), (req.params as { id: string }).id)),
  );
}
