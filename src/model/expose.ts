// A whole service in one write (our extension, for upstream's requests #1663 and #1393): the
// intercept.v1 and host.v1 configs, the service, its Dial and Bind service policies and its service
// edge router policy, created in one transaction; unexpose removes exactly those. What expose made
// carries the tag EXPOSE_TAG whose value is the service's id, so a rename does not lose track of it.
import { Type, type Static } from 'typebox';
import type { Tx } from '../store/db.js';
import { byIdOrName } from '../store/by-id-or-name.js';
import { BUILTIN_CONFIG_TYPE_IDS } from './config-schemas.js';
import type { Ctx } from './context.js';
import { createIn, deleteIn, writeTx } from './crud.js';
import { ApiError, couldNotValidate, notFound } from './errors.js';
import { newId } from './ids.js';
import { configs } from './resources/configs.js';
import { serviceEdgeRouterPolicies, servicePolicies } from './resources/policies.js';
import { services } from './resources/services.js';
import type { ResourceDecl } from './resource.js';
import { Attributes, Name } from './schemas/common.js';

export const EXPOSE_TAG = 'ztc.expose';

const Roles = Type.Array(Type.String({ minLength: 2, maxLength: 300 }), { minItems: 1, maxItems: 1000, description: 'Roles: #attribute, @id or @name, #all' });
const Port = Type.Integer({ minimum: 1, maximum: 65535 });

export const ExposeBody = Type.Object(
  {
    name: Name,
    intercept: Type.Optional(
      Type.Object(
        {
          addresses: Type.Array(Type.String({ minLength: 1, maxLength: 255 }), { minItems: 1, maxItems: 100, description: 'Host names, IP addresses or CIDRs clients intercept' }),
          portRanges: Type.Array(Type.Object({ low: Port, high: Port }, { additionalProperties: false }), { minItems: 1, maxItems: 100 }),
          protocols: Type.Optional(Type.Array(Type.Union([Type.Literal('tcp'), Type.Literal('udp')]), { minItems: 1, maxItems: 2, description: 'Default: tcp' })),
        },
        { additionalProperties: false, description: 'Makes an intercept.v1 config named NAME-intercept-config' },
      ),
    ),
    host: Type.Optional(
      Type.Object(
        { protocol: Type.Union([Type.Literal('tcp'), Type.Literal('udp')]), address: Type.String({ minLength: 1, maxLength: 255 }), port: Port },
        { additionalProperties: false, description: 'Makes a host.v1 config named NAME-host-config: where the hosting identity sends the traffic' },
      ),
    ),
    dialRoles: Type.Optional(Roles),
    bindRoles: Type.Optional(Roles),
    edgeRouterRoles: Type.Optional(Roles),
    encryptionRequired: Type.Optional(Type.Boolean({ description: 'Default: true' })),
    roleAttributes: Type.Optional(Attributes),
  },
  { additionalProperties: false },
);
export type ExposeInput = Static<typeof ExposeBody>;

const Made = Type.Object({ kind: Type.String({ description: 'service, config, service-policy or service-edge-router-policy' }), id: Type.String(), name: Type.String() });
export const ExposeResult = Type.Object({ service: Made, made: Type.Array(Made) });

type MadeEntry = Static<typeof Made>;

export async function expose(ctx: Ctx, body: ExposeInput): Promise<Static<typeof ExposeResult>> {
  for (const r of body.intercept?.portRanges ?? []) if (r.low > r.high) throw couldNotValidate('intercept.portRanges', `low ${r.low} is above high ${r.high}`);
  if (!body.intercept && !body.host && !body.dialRoles && !body.bindRoles && !body.edgeRouterRoles) {
    throw new ApiError(400, 'COULD_NOT_VALIDATE', 'Nothing to expose: give at least an intercept, a host, or dial, bind or edge router roles');
  }
  const name = body.name;
  const serviceId = newId();
  const tags = { [EXPOSE_TAG]: serviceId };
  return writeTx(ctx, async (tx) => {
    const made: MadeEntry[] = [];
    const make = async (decl: ResourceDecl, kind: string, input: Record<string, unknown>, id?: string) => {
      const created = await createIn(tx, ctx, decl, { ...input, tags }, id);
      made.push({ kind, id: created.id, name: String(input.name) });
      return created.id;
    };
    const configIds: string[] = [];
    if (body.intercept) {
      const data = { protocols: body.intercept.protocols ?? ['tcp'], addresses: body.intercept.addresses, portRanges: body.intercept.portRanges };
      configIds.push(await make(configs, 'config', { name: `${name}-intercept-config`, configTypeId: BUILTIN_CONFIG_TYPE_IDS['intercept.v1'], data }));
    }
    if (body.host) {
      configIds.push(await make(configs, 'config', { name: `${name}-host-config`, configTypeId: BUILTIN_CONFIG_TYPE_IDS['host.v1'], data: body.host }));
    }
    await make(services, 'service', { name, encryptionRequired: body.encryptionRequired ?? true, configs: configIds, roleAttributes: body.roleAttributes ?? [] }, serviceId);
    for (const [type, roles] of [['Dial', body.dialRoles], ['Bind', body.bindRoles]] as const) {
      if (!roles) continue;
      await make(servicePolicies, 'service-policy', { name: `${name}-${type.toLowerCase()}-policy`, type, semantic: 'AnyOf', identityRoles: roles, serviceRoles: [`@${serviceId}`], postureCheckRoles: [] });
    }
    if (body.edgeRouterRoles) {
      await make(serviceEdgeRouterPolicies, 'service-edge-router-policy', { name: `${name}-service-edge-router-policy`, semantic: 'AnyOf', serviceRoles: [`@${serviceId}`], edgeRouterRoles: body.edgeRouterRoles });
    }
    const service = made.find((m) => m.kind === 'service')!;
    return { service, made };
  });
}

/** Undo an expose: what it made (found by its tag) goes, dependants first; other entities stay. */
export async function unexpose(ctx: Ctx, ref: string): Promise<Static<typeof ExposeResult>> {
  return writeTx(ctx, async (tx: Tx) => {
    const service = await byIdOrName<{ id: string; name: string }>(tx, 'services', ref, ['id', 'name']);
    if (!service) throw notFound('service', ref);
    const tagged = await tx.selectFrom('entityTags').select('entityId').where('tagKey', '=', EXPOSE_TAG).where('value', '=', service.id).execute();
    const ids = new Set(tagged.map((t) => t.entityId));
    if (!ids.has(service.id)) {
      throw new ApiError(400, 'COULD_NOT_VALIDATE', `The service '${service.name}' was not made by expose (it has no '${EXPOSE_TAG}' tag): delete its parts one by one`);
    }
    const removed: MadeEntry[] = [];
    // Policies before the service they name, the service before the configs it holds.
    const order: [ResourceDecl, string, 'servicePolicies' | 'serviceEdgeRouterPolicies' | 'services' | 'configs'][] = [
      [servicePolicies, 'service-policy', 'servicePolicies'],
      [serviceEdgeRouterPolicies, 'service-edge-router-policy', 'serviceEdgeRouterPolicies'],
      [services, 'service', 'services'],
      [configs, 'config', 'configs'],
    ];
    for (const [decl, kind, table] of order) {
      const rows = await tx.selectFrom(table).select(['id', 'name']).where('id', 'in', [...ids]).execute();
      for (const r of rows as { id: string; name: string }[]) {
        await deleteIn(tx, ctx, decl, r.id);
        removed.push({ kind, id: r.id, name: r.name });
      }
    }
    return { service: { kind: 'service', id: service.id, name: service.name }, made: removed };
  });
}
