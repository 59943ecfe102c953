// Lists that follow policies (an identity's services, a policy's edge routers, ...), role attributes in
// use, and the role-related actions: policy advice, identity service configs, edge router re-enroll.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import { Type } from 'typebox';
import type { Ctx } from '../../../model/context.js';
import { writeTx } from '../../../model/crud.js';
import { recordRowChange } from '../../../model/events/record.js';
import { actorCtx } from '../../actor.js';
import { touchServices } from '../../../model/changes.js';
import { invalidField, notFound } from '../../../model/errors.js';
import { canUse, idIn, kindsOfType, membersOf, policiesOf, relatedIds, sharedEdgeRouters } from '../../../model/policy/access.js';
import { SIDE_TABLES, sideQuery, type PolicyKind, type Side } from '../../../model/policy/membership.js';
import { USAGE_SOURCES, usageAttributes, usageOf } from '../../../model/policy/role-attribute-usage.js';
import { reEnrollRouter } from '../../../model/pki/router-enroll.js';
import type { AnyQuery, ResourceDecl } from '../../../model/resource.js';
import { entityRef } from '../../../model/resource.js';
import { identityRef } from '../../../model/resources/identity-links.js';
import { serviceRef } from '../../../model/resources/service-links.js';
import { configs } from '../../../model/resources/configs.js';
import { identities } from '../../../model/resources/identities.js';
import { edgeRouterPolicies, serviceEdgeRouterPolicies, servicePolicies } from '../../../model/resources/policies.js';
import { edgeRouters } from '../../../model/resources/routers.js';
import { services } from '../../../model/resources/services.js';
import { terminators } from '../../../model/resources/terminators.js';
import { isOnline } from '../../../model/resources/routers.js';
import { postureChecks } from '../../../model/resources/posture-checks.js';
import { EntityRef, Empty, Envelope, IdParams, ListQuery } from '../../../model/schemas/common.js';
import type { Db } from '../../../store/db.js';
import { byIdOrName } from '../../../store/by-id-or-name.js';
import { checkPagingParams, collect, listPage, type ListParams } from '../../../store/list.js';
import { errors, filterableFields } from '../../crud.js';
import { empty, listOf, ok } from '../../envelope.js';
import { parentExists, relatedList } from '../../related.js';
import { IGNORES_UNKNOWN_FIELDS } from '../../schema-compilers.js';

const EVERY_SERVICE_POLICY_KIND: PolicyKind[] = ['dial', 'bind', 'invalid'];
const PolicyTypeQuery = { policyType: Type.Optional(Type.Union([Type.Literal('dial'), Type.Literal('bind'), Type.Literal('Dial'), Type.Literal('Bind')])) };
const policyType = (req: FastifyRequest) => (req.query as { policyType?: string }).policyType;

type Scope = (db: Db, id: string, req: FastifyRequest) => (q: AnyQuery) => AnyQuery;
const within = (sub: (db: Db, id: string, req: FastifyRequest) => { compile(): unknown }): Scope => (db, id, req) => (q) => q.where(idIn(sub(db, id, req)) as never);

/** The lists that follow policies, declared as data: url, parent, children and how the children are chosen. */
function policyLists(): [string, string, ResourceDecl, ResourceDecl, Scope, Record<string, ReturnType<typeof Type.Optional>>?][] {
  const rel = (from: Side, to: Side, kinds: PolicyKind[]) => within((db, id) => relatedIds(db, from, id, to, kinds));
  const pol = (side: Side, kinds: PolicyKind[]) => within((db, id) => policiesOf(db, side, id, kinds));
  const mem = (side: Side) => within((db, id) => membersOf(db, id, side));
  return [
    ['/identities/:id/edge-router-policies', 'listIdentitysEdgeRouterPolicies', identities, edgeRouterPolicies, pol('identity', ['erp'])],
    ['/identities/:id/edge-routers', 'listIdentityEdgeRouters', identities, edgeRouters, rel('identity', 'edge-router', ['erp'])],
    ['/identities/:id/service-policies', 'listIdentityServicePolicies', identities, servicePolicies, pol('identity', EVERY_SERVICE_POLICY_KIND)],
    ['/identities/:id/services', 'listIdentityServices', identities, services, within((db, id, req) => relatedIds(db, 'identity', id, 'service', kindsOfType(policyType(req)))), PolicyTypeQuery],
    ['/edge-routers/:id/edge-router-policies', 'listEdgeRouterEdgeRouterPolicies', edgeRouters, edgeRouterPolicies, pol('edge-router', ['erp'])],
    ['/edge-routers/:id/identities', 'listEdgeRouterIdentities', edgeRouters, identities, rel('edge-router', 'identity', ['erp'])],
    ['/edge-routers/:id/service-edge-router-policies', 'listEdgeRouterServiceEdgeRouterPolicies', edgeRouters, serviceEdgeRouterPolicies, pol('edge-router', ['serp'])],
    ['/edge-routers/:id/services', 'listEdgeRouterServices', edgeRouters, services, rel('edge-router', 'service', ['serp'])],
    ['/edge-router-policies/:id/edge-routers', 'listEdgeRouterPolicyEdgeRouters', edgeRouterPolicies, edgeRouters, mem('edge-router')],
    ['/edge-router-policies/:id/identities', 'listEdgeRouterPolicyIdentities', edgeRouterPolicies, identities, mem('identity')],
    ['/service-edge-router-policies/:id/edge-routers', 'listServiceEdgeRouterPolicyEdgeRouters', serviceEdgeRouterPolicies, edgeRouters, mem('edge-router')],
    ['/service-edge-router-policies/:id/services', 'listServiceEdgeRouterPolicyServices', serviceEdgeRouterPolicies, services, mem('service')],
    ['/service-policies/:id/identities', 'listServicePolicyIdentities', servicePolicies, identities, mem('identity')],
    ['/service-policies/:id/services', 'listServicePolicyServices', servicePolicies, services, mem('service')],
    ['/services/:id/configs', 'listServiceConfig', services, configs, within((db, id) => db.selectFrom('serviceConfigs').select('configId').where('serviceId', '=', id))],
    ['/services/:id/edge-routers', 'listServiceEdgeRouters', services, edgeRouters, rel('service', 'edge-router', ['serp'])],
    ['/services/:id/identities', 'listServiceIdentities', services, identities, within((db, id, req) => relatedIds(db, 'service', id, 'identity', kindsOfType(policyType(req)))), PolicyTypeQuery],
    ['/services/:id/service-edge-router-policies', 'listServiceServiceEdgeRouterPolicies', services, serviceEdgeRouterPolicies, pol('service', ['serp'])],
    ['/services/:id/service-policies', 'listServiceServicePolicies', services, servicePolicies, pol('service', EVERY_SERVICE_POLICY_KIND)],
    ['/services/:id/terminators', 'listServiceTerminators', services, terminators, (_db, id) => (q) => q.where('e.service_id' as never, '=', id as never)],
    ['/service-policies/:id/posture-checks', 'listServicePolicyPostureChecks', servicePolicies, postureChecks, mem('posture-check')],
    ['/configs/:id/services', 'listConfigServices', configs, services, within((db, id) => db.selectFrom('serviceConfigs').select('serviceId').where('configId', '=', id))],
  ];
}

const tagOf = (decl: ResourceDecl) => decl.plural.replace(/(^|-)(\w)/g, (_, d: string, c: string) => (d ? ' ' : '') + c.toUpperCase());

/** Role attributes in use by one kind of entity, as a plain list of strings (filterable by `id`). */
function roleAttributeList(app: FastifyInstance, ctx: Ctx, url: string, operationId: string, side: Side) {
  const filterable = { id: { column: 'e.id', type: 'string' as const, sortable: true }, name: { column: 'e.id', type: 'string' as const, sortable: true, alias: true } };
  const table = SIDE_TABLES[side].table;
  const source = (db: Db) => {
    const owners = sideQuery(db, side).select('e.id');
    const attrs = db
      .selectFrom('entityRoleAttributes as r')
      .select([sql.ref<string>('r.attribute').as('id'), sql<string>`''`.as('created_at')])
      .where('r.entityId', 'in', owners as never)
      .distinct();
    return db.selectFrom(attrs.as('e')) as unknown as AnyQuery;
  };
  app.get(
    url,
    {
      config: { access: 'admin' },
      schema: { operationId, tags: ['Role Attributes'], summary: `Role attributes in use by ${table.replace(/_/g, ' ')}`, querystring: ListQuery, response: { 200: Type.Object({ data: Type.Array(Type.String()), meta: Type.Any() }), ...errors(400, 401) } },
    },
    async (req) => {
      // As upstream, only the filter pages these lists: without `limit N` in it, every attribute is answered.
      const { filter, sort } = req.query as ListParams;
      checkPagingParams(req.query as ListParams);
      const page = await listPage(ctx.store.db, ctx.store.dialect, { filterable, source, detailQuery: (db) => source(db).select('e.id' as never) }, { filter, sort, limit: -1 });
      const rows = page.chunks ? await collect(page.chunks) : page.rows;
      return listOf(rows.map((r) => String(r.id)), page.pagination, filterableFields({ filterable }));
    },
  );
}

const SourceUsage = Type.Object({
  count: Type.Integer({ description: 'How many entities of this source carry the attribute, or how many policies of this kind name it (#attribute)' }),
  ids: Type.Optional(Type.Array(Type.String(), { description: 'Their ids, with withIds=true' })),
});
const RoleAttributeUsage = Type.Object({
  roleAttribute: Type.String({ description: 'The role attribute, without its #' }),
  usage: Type.Record(Type.String(), SourceUsage, { description: 'By source: the kind\'s entities and the policies that may name it; a source that names it nowhere has count 0' }),
});

/**
 * 2.1's role attributes with their usage (ziti#1593): every attribute of one kind that an entity carries
 * or a policy names, with the counts per source (model/policy/role-attribute-usage.ts). Filtered, sorted
 * and paged by the filter as the plain lists above (`id` is the attribute); `withIds` adds the ids.
 */
function roleAttributeUsageList(app: FastifyInstance, ctx: Ctx, url: string, operationId: string, side: Side) {
  const filterable = { id: { column: 'e.id', type: 'string' as const, sortable: true }, name: { column: 'e.id', type: 'string' as const, sortable: true, alias: true } };
  const source = (db: Db) => db.selectFrom(usageAttributes(db, side).as('e')) as unknown as AnyQuery;
  const sources = USAGE_SOURCES[side].map((s) => s.name).join(', ');
  app.get(
    url,
    {
      config: { access: 'admin' },
      schema: {
        operationId,
        tags: ['Role Attributes'],
        summary: `${side.replace('-', ' ').replace(/^./, (c) => c.toUpperCase())} role attributes with where they are used: ${sources}`,
        querystring: Type.Object({ ...ListQuery.properties, withIds: Type.Optional(Type.Boolean({ description: 'Also list the ids behind each count' })) }),
        response: { 200: Type.Object({ data: Type.Array(RoleAttributeUsage), meta: Type.Any() }), ...errors(400, 401) },
      },
    },
    async (req) => {
      const { filter, sort, withIds } = req.query as ListParams & { withIds?: boolean };
      checkPagingParams(req.query as ListParams);
      const page = await listPage(ctx.store.db, ctx.store.dialect, { filterable, source, detailQuery: (db) => source(db).select('e.id' as never) }, { filter, sort, limit: -1 });
      const attributes = (page.chunks ? await collect(page.chunks) : page.rows).map((r) => String(r.id));
      const usage = await usageOf(ctx.store.db, side, attributes, withIds === true);
      return listOf(attributes.map((a) => ({ roleAttribute: a, usage: usage.get(a) })), page.pagination, filterableFields({ filterable }));
    },
  );
}

const ServiceConfigPair = Type.Object({ serviceId: Type.String({ minLength: 1, maxLength: 255 }), configId: Type.String({ minLength: 1, maxLength: 255 }) }, { additionalProperties: false });
const ServiceConfigDetail = Type.Object({ serviceId: Type.String(), service: EntityRef, configId: Type.String(), config: EntityRef });
const RouterRef = Type.Object({ ...EntityRef.properties, isOnline: Type.Boolean() });
const PolicyAdvice = Type.Object({
  identityId: Type.String(), identity: EntityRef, serviceId: Type.String(), service: EntityRef,
  isDialAllowed: Type.Boolean(), isBindAllowed: Type.Boolean(),
  identityRouterCount: Type.Integer(), serviceRouterCount: Type.Integer(), commonRouters: Type.Array(RouterRef),
});

export function registerPolicyRoutes(app: FastifyInstance, ctx: Ctx) {
  for (const [url, operationId, parent, child, scope, extraQuery] of policyLists()) {
    relatedList(app, ctx, { url, operationId, tags: [tagOf(parent)], summary: `The ${child.plural.replace(/-/g, ' ')} of ${parent.name === 'identity' ? 'an' : 'a'} ${parent.name}`, parent: { decl: parent }, decl: child, scope, extraQuery });
  }
  roleAttributeList(app, ctx, '/identity-role-attributes', 'listIdentityRoleAttributes', 'identity');
  roleAttributeList(app, ctx, '/edge-router-role-attributes', 'listEdgeRouterRoleAttributes', 'edge-router');
  roleAttributeList(app, ctx, '/service-role-attributes', 'listServiceRoleAttributes', 'service');
  roleAttributeList(app, ctx, '/posture-check-role-attributes', 'listPostureCheckRoleAttributes', 'posture-check');
  roleAttributeUsageList(app, ctx, '/identity-role-attribute-usage', 'listIdentityRoleAttributeUsage', 'identity');
  roleAttributeUsageList(app, ctx, '/edge-router-role-attribute-usage', 'listEdgeRouterRoleAttributeUsage', 'edge-router');
  roleAttributeUsageList(app, ctx, '/service-role-attribute-usage', 'listServiceRoleAttributeUsage', 'service');
  roleAttributeUsageList(app, ctx, '/posture-check-role-attribute-usage', 'listPostureCheckRoleAttributeUsage', 'posture-check');

  app.post(
    '/edge-routers/:id/re-enroll',
    { config: { access: 'admin' }, schema: { operationId: 'reEnrollEdgeRouter', tags: ['Edge Routers'], summary: 'Forget the edge router\'s certificates and issue a new enrollment', params: IdParams, response: { 200: Envelope(Empty), ...errors(401, 404) } } },
    async (req) => {
      await reEnrollRouter(actorCtx(ctx, req), (req.params as { id: string }).id);
      return empty();
    },
  );

  app.get(
    '/identities/:id/policy-advice/:serviceId',
    {
      config: { access: 'admin' },
      schema: { operationId: 'getIdentityPolicyAdvice', tags: ['Identities'], summary: 'Why an identity can or cannot use a service: its permissions and the edge routers it shares with the service', params: Type.Object({ id: Type.String({ maxLength: 255 }), serviceId: Type.String({ maxLength: 255 }) }), response: { 200: Envelope(PolicyAdvice), ...errors(401, 404) } },
    },
    async (req) => {
      const { id, serviceId } = req.params as { id: string; serviceId: string };
      const db = ctx.store.db;
      const identity = await db.selectFrom('identities').select(['id', 'name']).where('id', '=', id).executeTakeFirst();
      if (!identity) throw notFound('identity', id);
      const service = await db.selectFrom('services').select(['id', 'name']).where('id', '=', serviceId).executeTakeFirst();
      if (!service) throw notFound('service', serviceId);
      const count = async (q: { compile(): unknown }) => Number(((await db.selectFrom((q as AnyQuery).as('x') as never).select(sql<number>`count(*)`.as('n')).executeTakeFirst()) as { n: number }).n);
      const common = await db.selectFrom('routers').select(['id', 'name', 'onlineUntil']).where('id', 'in', sharedEdgeRouters(db, id, serviceId)).orderBy('name').execute();
      return ok({
        identityId: id, identity: identityRef(id, identity.name),
        serviceId, service: serviceRef(serviceId, service.name),
        isDialAllowed: await canUse(db, id, serviceId, ['dial']),
        isBindAllowed: await canUse(db, id, serviceId, ['bind']),
        identityRouterCount: await count(relatedIds(db, 'identity', id, 'edge-router', ['erp']).distinct()),
        serviceRouterCount: await count(relatedIds(db, 'service', serviceId, 'edge-router', ['serp']).distinct()),
        // Online as /edge-routers says it (upstream's CLI calls a pair with no online common router an error).
        commonRouters: common.map((r) => ({ ...entityRef('edge-routers', r.id, r.name), isOnline: isOnline(r) })),
      });
    },
  );

  registerIdentityServiceConfigs(app, ctx);
}

/** An identity's own config choices per service: list, add (replacing one of the same type), remove. */
function registerIdentityServiceConfigs(app: FastifyInstance, ctx: Ctx) {
  const tags = ['Identities'];
  const url = '/identities/:id/service-configs';
  app.get(url, { config: { access: 'admin' }, schema: { operationId: 'listIdentitysServiceConfigs', tags, summary: 'The configs an identity uses for services in place of the services\' own', params: IdParams, response: { 200: Type.Object({ data: Type.Array(ServiceConfigDetail), meta: Type.Any() }), ...errors(401, 404) } } }, async (req) => {
    const { id } = req.params as { id: string };
    await parentExists(ctx, identities, id);
    const rows = await ctx.store.db
      .selectFrom('identityServiceConfigs as o')
      .innerJoin('services as s', 's.id', 'o.serviceId')
      .innerJoin('configs as c', 'c.id', 'o.configId')
      .select(['o.serviceId', 's.name as serviceName', 'o.configId', 'c.name as configName'])
      .where('o.identityId', '=', id)
      .orderBy('s.name')
      .orderBy('c.name')
      .execute();
    const data = rows.map((r) => ({ serviceId: r.serviceId, service: serviceRef(r.serviceId, r.serviceName), configId: r.configId, config: entityRef('configs', r.configId, r.configName) }));
    return listOf(data, { limit: data.length, offset: 0, totalCount: data.length }, []);
  });

  /**
   * An identity's service-config overrides, as the states of its entity change: they live in a table of
   * their own, but upstream keeps them on the identity, and an audit of the identity should show them.
   */
  async function serviceConfigsState(tx: Db, id: string) {
    const identity = await tx.selectFrom('identities').select('name').where('id', '=', id).executeTakeFirst();
    const serviceConfigs = await tx.selectFrom('identityServiceConfigs').select(['serviceId', 'configId', 'configTypeId']).where('identityId', '=', id).orderBy('serviceId').orderBy('configTypeId').execute();
    return { id, name: identity?.name ?? '', serviceConfigs };
  }

  const pairs = (req: FastifyRequest) => (Array.isArray(req.body) ? (req.body as { serviceId: string; configId: string }[]) : []);
  async function resolvePairs(tx: Db, list: { serviceId: string; configId: string }[]) {
    const out = [];
    for (const [i, p] of list.entries()) {
      const service = await byIdOrName<{ id: string }>(tx, 'services', p.serviceId);
      if (!service) throw invalidField(`[${i}].serviceId`, `no service has the id or name '${p.serviceId}'`, p.serviceId);
      const config = await byIdOrName<{ id: string; configTypeId: string }>(tx, 'configs', p.configId, ['id', 'configTypeId']);
      if (!config) throw invalidField(`[${i}].configId`, `no config has the id or name '${p.configId}'`, p.configId);
      out.push({ serviceId: service.id, configId: config.id, configTypeId: config.configTypeId });
    }
    return out;
  }

  app.post(url, { config: { access: 'admin', ...IGNORES_UNKNOWN_FIELDS }, schema: { operationId: 'associateIdentitysServiceConfigs', tags, summary: 'Use these configs for these services (one config per type and service; a later one replaces an earlier one)', params: IdParams, body: Type.Array(ServiceConfigPair, { maxItems: 1000 }), response: { 200: Envelope(Empty), ...errors(400, 401, 404) } } }, async (req) => {
    const { id } = req.params as { id: string };
    await parentExists(ctx, identities, id);
    const c = actorCtx(ctx, req);
    await writeTx(c, async (tx) => {
      const before = await serviceConfigsState(tx, id);
      for (const p of await resolvePairs(tx as Db, pairs(req))) {
        await tx.deleteFrom('identityServiceConfigs').where('identityId', '=', id).where('serviceId', '=', p.serviceId).where('configTypeId', '=', p.configTypeId).execute();
        await tx.insertInto('identityServiceConfigs').values({ identityId: id, ...p }).execute();
      }
      await touchServices(tx, ctx);
      await recordRowChange(tx, c, 'identities', 'updated', id, before, await serviceConfigsState(tx, id), 'service-configs');
    });
    return empty();
  });

  app.delete(url, { config: { access: 'admin', ...IGNORES_UNKNOWN_FIELDS }, schema: { operationId: 'disassociateIdentitysServiceConfigs', tags, summary: 'Stop using these configs (no body, or an empty list: all of them)', params: IdParams, body: Type.Optional(Type.Union([Type.Array(ServiceConfigPair, { maxItems: 1000 }), Type.Null()])), response: { 200: Envelope(Empty), ...errors(400, 401, 404) } } }, async (req) => {
    const { id } = req.params as { id: string };
    await parentExists(ctx, identities, id);
    const list = pairs(req);
    const c = actorCtx(ctx, req);
    await writeTx(c, async (tx) => {
      await touchServices(tx, ctx);
      const before = await serviceConfigsState(tx, id);
      if (!list.length) {
        await tx.deleteFrom('identityServiceConfigs').where('identityId', '=', id).execute();
      } else {
        for (const p of await resolvePairs(tx as Db, list)) {
          await tx.deleteFrom('identityServiceConfigs').where('identityId', '=', id).where('serviceId', '=', p.serviceId).where('configId', '=', p.configId).execute();
        }
      }
      await recordRowChange(tx, c, 'identities', 'updated', id, before, await serviceConfigsState(tx, id), 'service-configs');
    });
    return empty();
  });
}
