import type { FastifyInstance } from 'fastify';
import type { Ctx } from '../../../model/context.js';
import { authenticators } from '../../../model/resources/authenticators.js';
import { identities } from '../../../model/resources/identities.js';
import { registerPkiManagement } from './pki.js';
import { registerIdentityActions } from './identity-actions.js';
import { configs, configTypes } from '../../../model/resources/configs.js';
import type { AnyQuery } from '../../../model/resource.js';
import { mountResource } from '../../crud.js';
import { managementResources } from '../../management-resources.js';
import { relatedList } from '../../related.js';
import { registerPolicyRoutes } from './policies.js';
import { registerPolicyAdvisor } from './policy-advisor.js';
import { registerPkiStatus } from './pki-status.js';
import { registerObservability } from './observability.js';
import { registerDatabase } from './database.js';
import { registerExpose } from './expose.js';
import { registerModel } from './model.js';
import { registerApiTokens } from './api-tokens.js';
import { registerEvents } from './events.js';

/** Every declared resource the management API serves (listed apart from the routes: the CLI's local reads use it). */
export { managementResources };

export function registerManagement(app: FastifyInstance, ctx: Ctx) {
  for (const decl of managementResources) mountResource(app, ctx, decl);
  registerPkiManagement(app, ctx);
  registerIdentityActions(app, ctx);
  registerEvents(app, ctx);
  registerPolicyRoutes(app, ctx);
  registerPolicyAdvisor(app, ctx);
  registerPkiStatus(app, ctx);
  registerObservability(app, ctx);
  registerDatabase(app, ctx);
  registerExpose(app, ctx);
  registerModel(app, ctx);
  registerApiTokens(app, ctx);
  const childrenOf = (column: string) => (_db: unknown, id: string) => (q: AnyQuery) => q.where(`e.${column}` as never, '=', id as never);
  relatedList(app, ctx, { url: '/config-types/:id/configs', operationId: 'listConfigsForConfigType', tags: ['Config'], summary: 'The configs of a config type', parent: { decl: configTypes }, decl: configs, scope: childrenOf('config_type_id') });
  relatedList(app, ctx, { url: '/identities/:id/authenticators', operationId: 'getIdentityAuthenticators', tags: ['Identities'], summary: 'The authenticators of an identity', parent: { decl: identities }, decl: authenticators, scope: childrenOf('identity_id') });
}


