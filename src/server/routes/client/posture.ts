// Posture responses: the client reports its device state; the controller keeps it per API session.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Ctx } from '../../../model/context.js';
import { actorCtx } from '../../actor.js';
import { assertSession, submitResponses, type PostureResponseInput } from '../../../model/posture/responses.js';
import { Envelope } from '../../../model/schemas/common.js';
import { errors } from '../../crud.js';
import { ok } from '../../envelope.js';
import { principalOf } from '../../plugins/auth.js';
import { IGNORES_UNKNOWN_FIELDS } from '../../schema-compilers.js';

const Str = Type.String({ maxLength: 1024 });
const Response = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 255 }),
    typeId: Type.Union(['OS', 'PROCESS', 'PROCESS_MULTI', 'DOMAIN', 'MAC', 'MFA', 'ENDPOINT_STATE'].map((t) => Type.Literal(t))),
    domain: Type.Optional(Str),
    macAddresses: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 256 })),
    type: Type.Optional(Str),
    version: Type.Optional(Str),
    build: Type.Optional(Str),
    path: Type.Optional(Str),
    isRunning: Type.Optional(Type.Boolean()),
    hash: Type.Optional(Str),
    signerFingerprints: Type.Optional(Type.Array(Str, { maxItems: 64 })),
    woken: Type.Optional(Type.Boolean()),
    unlocked: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
const Result = Envelope(Type.Object({ services: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), postureQueryType: Type.String(), timeout: Type.Integer(), timeoutRemaining: Type.Integer() })) }));

export function registerPosture(app: FastifyInstance, ctx: Ctx) {
  const tags = ['Posture Checks'];
  app.post(
    '/posture-response',
    { config: { access: 'session', ...IGNORES_UNKNOWN_FIELDS }, schema: { operationId: 'createPostureResponse', tags, summary: 'Report one posture answer (the id is the posture query\'s id)', body: Response, response: { 201: Result, ...errors(400, 401) } } },
    async (req, reply) => {
      const who = principalOf(req);
      assertSession(who);
      const result = await submitResponses(actorCtx(ctx, req), who, [req.body as PostureResponseInput], false);
      reply.code(201);
      return ok(result);
    },
  );
  app.post(
    '/posture-response-bulk',
    { config: { access: 'session', ...IGNORES_UNKNOWN_FIELDS }, schema: { operationId: 'createPostureResponseBulk', tags, summary: 'Report several posture answers at once (all or none are kept)', body: Type.Array(Response, { maxItems: 500 }), response: { 200: Result, ...errors(400, 401) } } },
    async (req) => {
      const who = principalOf(req);
      assertSession(who);
      return ok(await submitResponses(actorCtx(ctx, req), who, req.body as PostureResponseInput[], true));
    },
  );
}
