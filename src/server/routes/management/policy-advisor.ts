// GET /policy-advisor (our extension, not upstream's): the policy advisor over every identity/service
// pair, or those of one identity and/or one service (model/policy/advisor.ts).
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Ctx } from '../../../model/context.js';
import { notFound } from '../../../model/errors.js';
import { advisePairs } from '../../../model/policy/advisor.js';
import { ListEnvelope } from '../../../model/schemas/common.js';
import { byIdOrName } from '../../../store/by-id-or-name.js';
import { errors } from '../../crud.js';
import { listOf } from '../../envelope.js';

const Named = Type.Object({ id: Type.String(), name: Type.String() });
const Reason = Type.Object({
  code: Type.String({ description: 'IDENTITY_DISABLED, IDENTITY_NOT_ENROLLED, MFA_MISSING, NO_SERVICE_POLICY, NO_EDGE_ROUTER_POLICY, NO_SERVICE_EDGE_ROUTER_POLICY, NO_COMMON_ROUTER, ROUTER_NOT_READY, POSTURE_CHECKS_REQUIRED, POSTURE_CHECKS_FAILING or NO_REACHABLE_TERMINATOR (the service is hosted only on routers the identity\'s routers cannot reach: no chain of links joins them)' }),
  message: Type.String(),
});
const Action = Type.Object({ allowed: Type.Boolean(), policies: Type.Array(Named), reasons: Type.Array(Reason) });
const PairAdvice = Type.Object({
  identity: Named,
  service: Named,
  dial: Action,
  bind: Action,
  edgeRouters: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), usable: Type.Boolean() })),
});

export function registerPolicyAdvisor(app: FastifyInstance, ctx: Ctx) {
  app.get(
    '/policy-advisor',
    {
      config: { access: 'admin' },
      schema: {
        operationId: 'listPolicyAdvice',
        tags: ['Identities'],
        summary: 'ztc extension: for each identity/service pair, whether the identity can dial and bind the service, through which edge routers, and why not',
        querystring: Type.Object(
          {
            identity: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'only this identity (id or name)' })),
            service: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'only this service (id or name)' })),
          },
          { additionalProperties: false },
        ),
        response: { 200: ListEnvelope(PairAdvice), ...errors(400, 401, 404) },
      },
    },
    async (req) => {
      const q = req.query as { identity?: string; service?: string };
      const db = ctx.store.db;
      const sel: { identityIds?: string[]; serviceIds?: string[] } = {};
      if (q.identity) {
        const found = await byIdOrName<{ id: string }>(db, 'identities', q.identity);
        if (!found) throw notFound('identity', q.identity);
        sel.identityIds = [found.id];
      }
      if (q.service) {
        const found = await byIdOrName<{ id: string }>(db, 'services', q.service);
        if (!found) throw notFound('service', q.service);
        sel.serviceIds = [found.id];
      }
      const pairs = await advisePairs(db, sel, ctx.clock.now());
      return listOf(pairs, { limit: pairs.length, offset: 0, totalCount: pairs.length }, []);
    },
  );
}
