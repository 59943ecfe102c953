// The part of upstream's Fabric Management API (/fabric/v1, newer than the edge API 0.26.28) that
// operators and current clients read (ZAC's dashboard and network map, `ziti fabric list`): routers as
// the control channel sees them, the links routers report, circuits in progress, terminators and
// services. Read-only, from the store (the data plane writes links and circuits as they change), so every
// controller on one database answers the same. Any other fabric path is a 404.
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Ctx } from '../../model/context.js';
import { baseDetail, selfLink, type Operation, type ResourceDecl } from '../../model/resource.js';
import { circuits, links } from '../../model/resources/fabric.js';
import { isOnline, routers } from '../../model/resources/routers.js';
import { services } from '../../model/resources/services.js';
import { terminators } from '../../model/resources/terminators.js';
import { baseFields, EntityRef, MapOf } from '../../model/schemas/common.js';
import { fromJson, isSet } from '../../store/json.js';
import { FABRIC_PATH } from '../api-paths.js';
import { VERSION } from '../../version.js';
import { mountResource } from '../crud.js';
import type { SpecRegistry } from '../specs.js';

export { FABRIC_PATH };

const FabricRouter = Type.Object({
  ...baseFields,
  name: Type.String(),
  // null until the router enrolls, as upstream's fabric API (a pointer there).
  fingerprint: Type.Union([Type.String(), Type.Null()]),
  connected: Type.Boolean(),
  cost: Type.Integer(),
  noTraversal: Type.Boolean(),
  disabled: Type.Boolean(),
  listenerAddresses: Type.Array(Type.Object({ address: Type.String(), protocol: Type.String() })),
  ctrlChanListeners: MapOf(Type.Array(Type.String())),
  interfaces: Type.Array(Type.Object({ name: Type.String() }, { additionalProperties: true })),
});

/**
 * A terminator as upstream's fabric API shows it: the hosting identity as hostId and the edge API's
 * `identity` as instanceId, both "" when unset (upstream's CLI reads *hostId without a nil check:
 * `ziti edge validate service-hosting` panics on a terminator without it).
 */
const FabricTerminator = Type.Object({
  ...baseFields,
  serviceId: Type.String(), service: EntityRef, routerId: Type.String(), router: EntityRef,
  binding: Type.String(), address: Type.String(), instanceId: Type.String(), hostId: Type.String(),
  cost: Type.Integer(), dynamicCost: Type.Integer(), precedence: Type.String(),
});
/** Fabric entity refs link to the fabric's own paths: the entity and its terminators. */
const fabricRef = (plural: string, id: string, name: string) => ({
  _links: { ...selfLink(plural, id), terminators: { href: `./${plural}/${id}/terminators` } },
  entity: plural, id, name,
});

export async function registerFabric(app: FastifyInstance, ctx: Ctx, specs: SpecRegistry) {
  await app.register(
    async (child) => {
      await child.register(swagger, {
        openapi: {
          openapi: '3.1.0',
          info: { title: 'ztc Fabric Management API', version: VERSION, description: 'The part of the Fabric Management API that ztc serves, read-only: routers as the control channel sees them, links between routers, circuits in progress, terminators and services.' },
          components: { securitySchemes: { ztSession: { type: 'apiKey', in: 'header', name: 'zt-session' } } },
          security: [{ ztSession: [] }],
        },
      });
      specs.add('fabric', 'Fabric Management API', () => child.swagger() as unknown as Record<string, unknown>);

      // Routers with what the control channel knows of them: connected, and the link listeners their hello named.
      const fabricRouters: ResourceDecl = {
        ...routers,
        schemas: { detail: FabricRouter },
        toDetail: (r) => Object.assign(baseDetail('routers', r), {
          name: r.name, fingerprint: r.fingerprint || null, connected: isOnline(r), cost: Number(r.cost), noTraversal: isSet(r.noTraversal), disabled: isSet(r.disabled),
          listenerAddresses: fromJson<{ address: string; protocol: string }[]>(r.linkListeners, []), ctrlChanListeners: fromJson(r.ctrlChanListeners, {}), interfaces: [],
        }),
      };
      const fabricTerminators: ResourceDecl = {
        ...terminators,
        schemas: { detail: FabricTerminator },
        toDetail: (r) => Object.assign(baseDetail('terminators', r), {
          serviceId: r.serviceId, service: fabricRef('services', r.serviceId, r.serviceName),
          routerId: r.routerId, router: fabricRef('routers', r.routerId, r.routerName),
          binding: r.binding, address: r.address, instanceId: r.identity ?? '', hostId: r.hostId ?? '',
          cost: Number(r.cost), dynamicCost: Number(r.cost), precedence: r.precedence,
        }),
      };
      const readOnly = { only: ['list', 'get'] as Operation[] };
      for (const decl of [fabricRouters, links, circuits, fabricTerminators, services]) mountResource(child, ctx, decl, readOnly);
    },
    { prefix: FABRIC_PATH },
  );
}
