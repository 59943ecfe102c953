// Terminators: where a service's traffic leaves the network (a router, a binding and an address).
// Administered through the API, or made by a hosting SDK's Bind on a router (fabric/, binding "edge",
// with the hosting identity as hostId) and removed when that host goes away.
import { Type } from 'typebox';
import { serviceRef } from './service-links.js';
import type { Tx } from '../../store/db.js';
import { byIdOrName } from '../../store/by-id-or-name.js';
import { invalidField } from '../errors.js';
import { hashSecret } from '../ids.js';
import { aliases, baseDetail, baseFilterable, defineResource, entityRef, type Row, type WriteMode } from '../resource.js';
import { baseFields, Cost, EntityRef, Precedence, Tags } from '../schemas/common.js';

const Ref = Type.String({ minLength: 1, maxLength: 255 });
const writable = {
  address: Type.String({ minLength: 1, maxLength: 1024 }),
  binding: Type.String({ minLength: 1, maxLength: 255 }),
  router: Ref,
  service: Ref,
};
const optional = { cost: Type.Optional(Cost), precedence: Type.Optional(Precedence), tags: Type.Optional(Tags) };
const createOnly = {
  identity: Type.Optional(Type.String({ maxLength: 255 })),
  identitySecret: Type.Optional(Type.String({ maxLength: 4096, pattern: '^[A-Za-z0-9+/]*={0,2}$', description: 'base64; only its hash is kept' })),
};

export const terminatorDetail = Type.Object({
  ...baseFields,
  serviceId: Type.String(), service: EntityRef, routerId: Type.String(), router: EntityRef,
  binding: Type.String(), address: Type.String(), identity: Type.String(), cost: Type.Integer(), dynamicCost: Type.Integer(), precedence: Type.String(),
});

async function lookup(tx: Tx, table: 'services' | 'routers', field: string, ref: string) {
  const row = await byIdOrName<{ id: string }>(tx, table, ref);
  if (!row) throw invalidField(field, `no ${table === 'services' ? 'service' : 'router'} has the id or name '${ref}'`, ref);
  return row.id;
}

export const terminators = defineResource({
  name: 'terminator',
  plural: 'terminators',
  table: 'terminators',
  apis: ['management', 'client'],
  ops: ['list', 'get', 'create', 'update', 'patch', 'delete'],
  description: 'Terminators: the router, binding and address where a service\'s traffic leaves the network',
  schemas: {
    detail: terminatorDetail,
    create: Type.Object({ ...writable, ...optional, ...createOnly }, { additionalProperties: false }),
    update: Type.Object({ ...writable, ...optional }, { additionalProperties: false }),
    patch: Type.Object({ ...Object.fromEntries(Object.entries(writable).map(([k, v]) => [k, Type.Optional(v)])), ...optional }, { additionalProperties: false }),
  },
  filterable: {
    ...baseFilterable,
    service: { column: 'e.service_id', type: 'string', sortable: true },
    router: { column: 'e.router_id', type: 'string', sortable: true },
    // Upstream's only public traversals; joined in `source`, and (as upstream) not sortable.
    'service.name': { column: 'ts.name', type: 'string' },
    'router.name': { column: 'tr.name', type: 'string' },
    binding: { column: 'e.binding', type: 'string', sortable: true },
    address: { column: 'e.address', type: 'string', sortable: true },
    instanceId: { column: 'e.identity', type: 'string', sortable: true },
    // The hosting identity of terminators an SDK's Bind made (fabric/); those made through the API have none.
    hostId: { column: 'e.host_id', type: 'string', sortable: true },
    ...aliases({
      serviceId: { column: 'e.service_id', type: 'string', sortable: true },
      routerId: { column: 'e.router_id', type: 'string', sortable: true },
      identity: { column: 'e.identity', type: 'string', sortable: true },
      cost: { column: 'e.cost', type: 'number', sortable: true },
      precedence: { column: 'e.precedence', type: 'string', sortable: true },
    }),
  },
  source: (db) => db.selectFrom('terminators as e').innerJoin('services as ts', 'ts.id', 'e.serviceId').innerJoin('routers as tr', 'tr.id', 'e.routerId') as never,
  detailQuery: (db) =>
    db.selectFrom('terminators as e').innerJoin('services as s', 's.id', 'e.serviceId').innerJoin('routers as r', 'r.id', 'e.routerId').selectAll('e').select(['s.name as serviceName', 'r.name as routerName']) as never,
  toDetail: (r) => Object.assign(baseDetail('terminators', r), {
    serviceId: r.serviceId, service: serviceRef(r.serviceId, r.serviceName),
    routerId: r.routerId, router: entityRef('routers', r.routerId, r.routerName),
    binding: r.binding, address: r.address, identity: r.identity ?? '',
    cost: Number(r.cost), dynamicCost: Number(r.cost), precedence: r.precedence,
  }),
  toRow: async (input: Row, mode: WriteMode, tx: Tx) => {
    const out: Row = {};
    if (mode !== 'patch' || 'service' in input) out.serviceId = await lookup(tx, 'services', 'service', input.service);
    if (mode !== 'patch' || 'router' in input) out.routerId = await lookup(tx, 'routers', 'router', input.router);
    for (const k of ['address', 'binding']) if (mode !== 'patch' || k in input) out[k] = input[k];
    if (mode !== 'patch' || 'cost' in input) out.cost = input.cost ?? 0;
    if (mode !== 'patch' || 'precedence' in input) out.precedence = input.precedence ?? 'default';
    if (mode === 'create') {
      out.identity = input.identity ?? '';
      // Compared, never shown: keep only its hash.
      out.identitySecret = input.identitySecret ? hashSecret(input.identitySecret) : null;
    }
    return out;
  },
  cli: { columns: ['id', 'service.name', 'router.name', 'binding', 'address', 'cost', 'precedence'] },
});
