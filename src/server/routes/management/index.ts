import type { FastifyInstance } from 'fastify';
import type { Ctx } from '../../../model/context.js';
import { listResource } from '../../../model/crud.js';
import { notFound } from '../../../model/errors.js';
import { authenticatorDetail, authenticators } from '../../../model/resources/authenticators.js';
import { identities } from '../../../model/resources/identities.js';
import { identityTypes } from '../../../model/resources/identity-types.js';
import { cas } from '../../../model/resources/cas.js';
import { enrollments } from '../../../model/resources/enrollments.js';
import { registerPkiManagement } from './pki.js';
import { registerIdentityActions } from './identity-actions.js';
import { authPolicies } from '../../../model/resources/auth-policies.js';
import { apiSessions } from '../../../model/resources/api-sessions.js';
import { externalJwtSigners } from '../../../model/resources/external-jwt-signers.js';
import { IdParams, ListEnvelope, ListQuery } from '../../../model/schemas/common.js';
import type { ListParams } from '../../../store/list.js';
import { errors, filterableFields, mountResource } from '../../crud.js';
import { listOf } from '../../envelope.js';

/** Every declared resource the management API serves. */
export const managementResources = [identities, identityTypes, authenticators, cas, enrollments, authPolicies, apiSessions, externalJwtSigners];

export function registerManagement(app: FastifyInstance, ctx: Ctx) {
  for (const decl of managementResources) mountResource(app, ctx, decl);
  registerPkiManagement(app, ctx);
  registerIdentityActions(app, ctx);

  app.get(
    '/identities/:id/authenticators',
    {
      config: { access: 'admin' },
      schema: { operationId: 'getIdentityAuthenticators', tags: ['Identities'], summary: 'The authenticators of an identity', params: IdParams, querystring: ListQuery, response: { 200: ListEnvelope(authenticatorDetail), ...errors(401, 404) } },
    },
    async (req) => {
      const { id } = req.params as { id: string };
      const exists = await ctx.store.db.selectFrom('identities').select('id').where('id', '=', id).executeTakeFirst();
      if (!exists) throw notFound('identity', id);
      const { items, pagination } = await listResource(ctx, { ...authenticators, source: (db) => db.selectFrom('authenticators as e').where('e.identityId', '=', id) as never }, req.query as ListParams);
      return listOf(items, pagination, filterableFields(authenticators));
    },
  );
}
