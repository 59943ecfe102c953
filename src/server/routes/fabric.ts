// The part of upstream's Fabric Management API (/fabric/v1, newer than the edge API 0.26.28) that
// current clients read: ZAC's dashboard and network map list routers, links and circuits there. ztc is a
// control plane without a data plane: routers enroll, but none connects to this controller, so every
// router is listed as not connected and there are no links or circuits. Any other fabric path is a 404.
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Ctx } from '../../model/context.js';
import { listResource } from '../../model/crud.js';
import { routers } from '../../model/resources/routers.js';
import { baseFields, EntityRef, ListEnvelope, ListQuery, MapOf } from '../../model/schemas/common.js';
import { collect, resolvePaging, type ListParams } from '../../store/list.js';
import { VERSION } from '../../version.js';
import { errors, filterableFields } from '../crud.js';
import { listOf } from '../envelope.js';
import type { SpecRegistry } from '../specs.js';

export const FABRIC_PATH = '/fabric/v1';

const FabricRouter = Type.Object({
  ...baseFields,
  name: Type.String(),
  fingerprint: Type.String(),
  connected: Type.Boolean(),
  cost: Type.Integer(),
  noTraversal: Type.Boolean(),
  disabled: Type.Boolean(),
  listenerAddresses: Type.Array(Type.Object({ address: Type.String(), protocol: Type.String() })),
  ctrlChanListeners: MapOf(Type.Array(Type.String())),
  interfaces: Type.Array(Type.Object({ name: Type.String() }, { additionalProperties: true })),
});

const Link = Type.Object({
  id: Type.String(), protocol: Type.String(), sourceRouter: EntityRef, destRouter: EntityRef, state: Type.String(), down: Type.Boolean(),
  staticCost: Type.Integer(), sourceLatency: Type.Integer(), destLatency: Type.Integer(), cost: Type.Integer(), iteration: Type.Integer(),
});

const Circuit = Type.Object({
  ...baseFields,
  clientId: Type.Optional(Type.String()),
  service: EntityRef,
  terminator: EntityRef,
  path: Type.Object({ nodes: Type.Array(EntityRef), links: Type.Array(EntityRef) }),
});

const tags = ['Fabric'];

export async function registerFabric(app: FastifyInstance, ctx: Ctx, specs: SpecRegistry) {
  await app.register(
    async (child) => {
      await child.register(swagger, {
        openapi: {
          openapi: '3.1.0',
          info: { title: 'ztc Fabric Management API', version: VERSION, description: 'The part of the Fabric Management API that ztc serves: routers (never connected: ztc has no data plane), links and circuits (always none).' },
          components: { securitySchemes: { ztSession: { type: 'apiKey', in: 'header', name: 'zt-session' } } },
          security: [{ ztSession: [] }],
        },
      });
      specs.add('fabric', 'Fabric Management API', () => child.swagger() as unknown as Record<string, unknown>);

      const routerFields = filterableFields(routers);
      child.get(
        '/routers',
        { schema: { operationId: 'listRouters', tags, summary: 'List routers as the fabric sees them: every router, none connected', querystring: ListQuery, response: { 200: ListEnvelope(FabricRouter), ...errors(400, 401) } } },
        async (req) => {
          const { items, pagination } = await listResource(ctx, routers, req.query as ListParams);
          const all = Array.isArray(items) ? items : await collect(items);
          const data = all.map((r: Record<string, unknown>) => ({
            id: r.id, _links: r._links, createdAt: r.createdAt, updatedAt: r.updatedAt, tags: r.tags,
            name: r.name, fingerprint: r.fingerprint, connected: false, cost: r.cost, noTraversal: r.noTraversal, disabled: r.disabled,
            listenerAddresses: [], ctrlChanListeners: {}, interfaces: [],
          }));
          return listOf(data, pagination, routerFields);
        },
      );
      for (const [path, item, what] of [['/links', Link, 'links between routers'], ['/circuits', Circuit, 'circuits through routers']] as const) {
        child.get(
          path,
          { schema: { operationId: `list${path[1].toUpperCase()}${path.slice(2)}`, tags, summary: `List ${what}: always none, as no router connects to ztc`, querystring: ListQuery, response: { 200: ListEnvelope(item), ...errors(400, 401) } } },
          async (req) => {
            const { limit, offset } = resolvePaging(req.query as ListParams, {});
            return listOf([], { limit: limit === 'none' ? 0 : limit, offset, totalCount: 0  }, []);
          },
        );
      }
    },
    { prefix: FABRIC_PATH },
  );
}
