// Links and circuits: the fabric's live state (model/fabric-state.ts writes it as routers report links
// and circuits are routed), read-only, listed under /fabric/v1 in the shapes upstream's Fabric API gives
// them and by `ztc fabric links|circuits`.
import { Type } from 'typebox';
import { fromJson } from '../../store/json.js';
import { baseDetail, baseFilterable, defineResource, entityRef, type Row } from '../resource.js';
import { baseFields, EntityRef } from '../schemas/common.js';

export const linkDetail = Type.Object({
  ...baseFields,
  protocol: Type.String(),
  dialAddress: Type.String(),
  sourceRouter: EntityRef,
  destRouter: EntityRef,
  state: Type.String({ description: 'Connected: reported by the router that dialed it, usable by circuits' }),
  down: Type.Boolean(),
  staticCost: Type.Integer(),
  sourceLatency: Type.Integer({ description: 'nanoseconds, as the dialing router last measured it (its metrics, every minute by default); 0 until then' }),
  destLatency: Type.Integer(),
  cost: Type.Integer(),
  iteration: Type.Integer(),
});

export const links = defineResource({
  name: 'link',
  plural: 'links',
  table: 'links',
  apis: [],
  ops: ['list', 'get'],
  description: 'Links: the connections routers dial between themselves, over which circuits cross routers',
  schemas: { detail: linkDetail },
  filterable: {
    ...baseFilterable,
    sourceRouter: { column: 'e.src_router_id', type: 'string', sortable: true },
    destRouter: { column: 'e.dst_router_id', type: 'string', sortable: true },
    protocol: { column: 'e.protocol', type: 'string', sortable: true },
    iteration: { column: 'e.iteration', type: 'number', sortable: true },
    cost: { column: 'e.cost', type: 'number', sortable: true },
  },
  detailQuery: (db) =>
    db
      .selectFrom('links as e')
      .leftJoin('routers as s', 's.id', 'e.srcRouterId')
      .leftJoin('routers as d', 'd.id', 'e.dstRouterId')
      .selectAll('e')
      .select(['s.name as srcName', 'd.name as dstName']) as never,
  toDetail: (r: Row) => Object.assign(baseDetail('links', r), {
    protocol: r.protocol,
    dialAddress: r.dialAddress,
    sourceRouter: entityRef('routers', r.srcRouterId, r.srcName ?? ''),
    destRouter: entityRef('routers', r.dstRouterId, r.dstName ?? ''),
    state: 'Connected',
    down: false,
    staticCost: Number(r.staticCost),
    sourceLatency: Number(r.srcLatency),
    destLatency: Number(r.dstLatency),
    cost: Number(r.cost),
    iteration: Number(r.iteration),
  }),
  cli: { columns: ['id', 'sourceRouter.name', 'destRouter.name', 'protocol', 'dialAddress', 'cost', 'iteration'] },
});

export const circuitDetail = Type.Object({
  ...baseFields,
  clientId: Type.String({ description: 'the dialing identity' }),
  service: EntityRef,
  terminator: EntityRef,
  path: Type.Object({ nodes: Type.Array(EntityRef), links: Type.Array(EntityRef) }),
});

export const circuits = defineResource({
  name: 'circuit',
  plural: 'circuits',
  table: 'circuits',
  apis: [],
  ops: ['list', 'get'],
  description: 'Circuits: dials in progress, each from the router the client reached to the terminator\'s, with the links between',
  schemas: { detail: circuitDetail },
  filterable: {
    ...baseFilterable,
    clientId: { column: 'e.client_id', type: 'string', sortable: true },
    service: { column: 'e.service_id', type: 'string', sortable: true },
    terminator: { column: 'e.terminator_id', type: 'string', sortable: true },
  },
  detailQuery: (db) => db.selectFrom('circuits as e').leftJoin('services as s', 's.id', 'e.serviceId').selectAll('e').select(['s.name as serviceName']) as never,
  // The routers of every path on the page, by name, in one query.
  expand: async (db, rows) => {
    const ids = [...new Set(rows.flatMap((r) => fromJson<string[]>(r.routerIds, [])))];
    const names = new Map<string, string>();
    for (let i = 0; i < ids.length; i += 500) for (const x of await db.selectFrom('routers').select(['id', 'name']).where('id', 'in', ids.slice(i, i + 500)).execute()) names.set(x.id, x.name);
    for (const r of rows) r.routerNames = names;
  },
  toDetail: (r: Row) => {
    const names = (r.routerNames as Map<string, string> | undefined) ?? new Map<string, string>();
    return Object.assign(baseDetail('circuits', r), {
      clientId: r.clientId,
      service: entityRef('services', r.serviceId, r.serviceName ?? ''),
      terminator: entityRef('terminators', r.terminatorId, r.terminatorId),
      path: {
        nodes: fromJson<string[]>(r.routerIds, []).map((id) => entityRef('routers', id, names.get(id) ?? '')),
        links: fromJson<string[]>(r.linkIds, []).map((id) => entityRef('links', id, id)),
      },
    });
  },
  cli: { columns: ['id', 'service.name', 'clientId', 'path.nodes', 'path.links', 'createdAt'] },
});
