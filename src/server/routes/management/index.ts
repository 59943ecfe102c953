import type { FastifyInstance } from 'fastify';
import type { ResourceDecl } from '../../../model/resource.js';
import type { Ctx } from '../../../model/context.js';
import { listResource } from '../../../model/crud.js';
import { notFound } from '../../../model/errors.js';
import { authenticators } from '../../../model/resources/authenticators.js';
import { identities } from '../../../model/resources/identities.js';
import { identityTypes } from '../../../model/resources/identity-types.js';
import { cas } from '../../../model/resources/cas.js';
import { enrollments } from '../../../model/resources/enrollments.js';
import { registerPkiManagement } from './pki.js';
import { registerIdentityActions } from './identity-actions.js';
import { authPolicies } from '../../../model/resources/auth-policies.js';
import { apiSessions } from '../../../model/resources/api-sessions.js';
import { externalJwtSigners } from '../../../model/resources/external-jwt-signers.js';
import { configs, configTypes } from '../../../model/resources/configs.js';
import { IdParams, ListEnvelope, ListQuery } from '../../../model/schemas/common.js';
import type { ListParams } from '../../../store/list.js';
import { errors, filterableFields, mountResource } from '../../crud.js';
import { listOf } from '../../envelope.js';

/** Every declared resource the management API serves. */
export const managementResources = [identities, identityTypes, authenticators, cas, enrollments, authPolicies, apiSessions, externalJwtSigners, configTypes, configs];

export function registerManagement(app: FastifyInstance, ctx: Ctx) {
  for (const decl of managementResources) mountResource(app, ctx, decl);
  registerPkiManagement(app, ctx);
  registerIdentityActions(app, ctx);
  relatedList(app, ctx, { url: '/config-types/:id/configs', operationId: 'listConfigsForConfigType', tags: ['Config'], summary: 'The configs of a config type', parent: 'configTypes', parentName: 'config type', decl: configs, column: 'configTypeId' });

  relatedList(app, ctx, { url: '/identities/:id/authenticators', operationId: 'getIdentityAuthenticators', tags: ['Identities'], summary: 'The authenticators of an identity', parent: 'identities', parentName: 'identity', decl: authenticators, column: 'identityId' });
}

/** GET /parents/{id}/children: the children whose `column` names the parent, with the usual list machinery. */
export function relatedList(
  app: FastifyInstance,
  ctx: Ctx,
  o: { url: string; operationId: string; tags: string[]; summary: string; parent: 'identities' | 'configTypes'; parentName: string; decl: ResourceDecl; column: string },
) {
  app.get(
    o.url,
    { config: { access: 'admin' }, schema: { operationId: o.operationId, tags: o.tags, summary: o.summary, params: IdParams, querystring: ListQuery, response: { 200: ListEnvelope(o.decl.schemas.detail), ...errors(400, 401, 404) } } },
    async (req) => {
      const { id } = req.params as { id: string };
      if (!(await ctx.store.db.selectFrom(o.parent).select('id').where('id', '=', id).executeTakeFirst())) throw notFound(o.parentName, id);
      const scoped = { ...o.decl, source: (db: Ctx['store']['db']) => db.selectFrom(`${o.decl.table} as e` as never).where(`e.${o.column}` as never, '=', id as never) as never };
      const { items, pagination } = await listResource(ctx, scoped, req.query as ListParams);
      return listOf(items, pagination, filterableFields(o.decl));
    },
  );
}

