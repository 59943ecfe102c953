// The three policy kinds. One factory declares them: each lists roles on two or three sides, and every
// write recomputes the policy's members in the same transaction (model/policy/membership.ts).
import { Type, type TSchema } from 'typebox';
import type { Db, Tx } from '../../store/db.js';
import type { Ctx } from '../context.js';
import { fromJson, isSet, sortedStrings } from '../../store/json.js';
import { ApiError, cannotDelete } from '../errors.js';
import { displayRoles, evaluatePolicy, forgetPolicy, normaliseRoles, roleNames, type PolicyKind, type PolicyShape, type Semantic, type Side } from '../policy/membership.js';
import { sql } from 'kysely';
import { baseDetail, baseFilterable, defineResource, type FieldSpec, type Row, type WriteMode } from '../resource.js';
import { baseFields, Name, Tags } from '../schemas/common.js';

const SemanticT = Type.Union([Type.Literal('AllOf'), Type.Literal('AnyOf')]);
const DialBind = Type.Union([Type.Literal('Dial'), Type.Literal('Bind'), Type.Literal('Invalid')]);
const Roles = Type.Unsafe<string[] | null>({ type: ['array', 'null'], items: { type: 'string', minLength: 2, maxLength: 300 }, maxItems: 1000, description: 'Roles: #attribute, @id (or @name) or #all' });
const NamedRoles = Type.Array(Type.Object({ role: Type.String(), name: Type.String() }));

interface PolicySpec {
  name: string;
  plural: string;
  table: 'edgeRouterPolicies' | 'serviceEdgeRouterPolicies' | 'servicePolicies';
  description: string;
  /** Request field (and column) of each side's roles. */
  sides: Record<string, Side>;
  /** Fields beyond name, semantic, roles and tags (service policies' type). */
  extra?: Record<string, TSchema>;
  kindOf: (row: Row) => PolicyKind;
  extraDetail?: (row: Row) => Record<string, unknown>;
  extraFilterable?: Record<string, FieldSpec>;
  /** Links to the policy's related lists. */
  links: string[];
  cliColumns: string[];
}

const shapers: ((db: Db) => Promise<PolicyShape[]>)[] = [];

/** Every policy of every kind, as the membership code sees it (for full recomputation and integrity checks). */
export async function policyShapes(db: Db): Promise<PolicyShape[]> {
  return (await Promise.all(shapers.map((f) => f(db)))).flat();
}

const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

function policyResource(spec: PolicySpec) {
  const roleFields = Object.keys(spec.sides);
  const roleSchemas = Object.fromEntries(roleFields.map((f) => [f, Type.Optional(Roles)]));
  const create = Type.Object({ name: Name, semantic: SemanticT, ...roleSchemas, ...(spec.extra ?? {}), tags: Type.Optional(Tags) }, { additionalProperties: false });
  const patch = Type.Object(
    { name: Type.Optional(Name), semantic: Type.Optional(SemanticT), ...roleSchemas, ...Object.fromEntries(Object.entries(spec.extra ?? {}).map(([k, v]) => [k, Type.Optional(v)])), tags: Type.Optional(Tags) },
    { additionalProperties: false },
  );
  const detail = Type.Object({
    ...baseFields,
    name: Type.String(),
    semantic: Type.String(),
    ...Object.fromEntries(roleFields.flatMap((f) => [[f, Type.Array(Type.String())], [`${f}Display`, NamedRoles]])),
    ...Object.fromEntries(Object.keys(spec.extra ?? {}).map((k) => [k, Type.String()])),
    ...(spec.table === 'edgeRouterPolicies' ? { isSystem: Type.Boolean() } : {}),
  });

  const shapeOf = (row: Row) => ({
    id: row.id as string,
    kind: spec.kindOf(row),
    semantic: row.semantic as Semantic,
    sides: Object.fromEntries(roleFields.map((f) => [spec.sides[f], fromJson<string[]>(row[f], [])])),
  });

  shapers.push(async (db) => (await db.selectFrom(spec.table).selectAll().execute()).map((r) => shapeOf(r as Row)));
  return defineResource({
    name: spec.name,
    plural: spec.plural,
    table: spec.table,
    touchesServices: true,
    apis: ['management'],
    ops: ['list', 'get', 'create', 'update', 'patch', 'delete'],
    description: spec.description,
    schemas: { detail, create, update: create, patch },
    filterable: {
      ...baseFilterable,
      name: { column: 'e.name', type: 'string', sortable: true },
      semantic: { column: 'e.semantic', type: 'string', sortable: true },
      ...Object.fromEntries(roleFields.map((f) => [f, { column: `e.${snake(f)}`, type: 'set' } as FieldSpec])),
      ...(spec.extraFilterable ?? {}),
    },
    expand: async (db: Db, rows: Row[]) => {
      for (const f of roleFields) {
        const names = await roleNames(db, spec.sides[f], rows.map((r) => fromJson<string[]>(r[f], [])));
        for (const r of rows) r[`${f}Display`] = displayRoles(sortedStrings(r[f]), names);
      }
    },
    toDetail: (r) => Object.assign(baseDetail(spec.plural, r, Object.fromEntries(spec.links.map((l) => [l, { href: `./${spec.plural}/${r.id}/${l}` }]))), {
      name: r.name,
      semantic: r.semantic,
      ...Object.fromEntries(roleFields.flatMap((f) => [[f, sortedStrings(r[f])], [`${f}Display`, r[`${f}Display`] ?? []]])),
      ...(spec.extraDetail?.(r) ?? {}),
    }),
    toRow: async (input: Row, mode: WriteMode, tx: Tx, ctx: Ctx, existing?: Row) => {
      // A system policy (a tunneler-enabled router's) is the router's to change, as upstream refuses it.
      if (existing && isSet(existing.isSystem) && !ctx.system) throw new ApiError(400, 'ENTITY_CAN_NOT_BE_UPDATED', `cannot update system ${spec.name} '${existing.name}'`);
      const out: Row = {};
      for (const k of ['name', 'semantic', ...Object.keys(spec.extra ?? {})]) if (mode !== 'patch' || k in input) out[k] = input[k];
      for (const f of roleFields) {
        if (mode !== 'patch' || f in input) out[f] = JSON.stringify(await normaliseRoles(tx, spec.sides[f], f, input[f]));
      }
      return out;
    },
    hooks: {
      afterWrite: async (tx, id) => {
        const row = await tx.selectFrom(spec.table).selectAll().where('id', '=', id).executeTakeFirstOrThrow();
        await evaluatePolicy(tx, shapeOf(row as Row));
      },
      beforeDelete: async (tx, existing, ctx) => {
        if (isSet(existing.isSystem) && !ctx.system) throw cannotDelete(`The ${spec.name} '${existing.name}' is a system policy and cannot be deleted`);
        await forgetPolicy(tx, existing.id);
      },
    },
    cli: { columns: spec.cliColumns },
  });
}

export const edgeRouterPolicies = policyResource({
  name: 'edge router policy',
  plural: 'edge-router-policies',
  table: 'edgeRouterPolicies',
  description: 'Edge router policies: which identities may connect through which edge routers',
  sides: { identityRoles: 'identity', edgeRouterRoles: 'edge-router' },
  kindOf: () => 'erp',
  extraDetail: (r) => ({ isSystem: isSet(r.isSystem) }),
  extraFilterable: { isSystem: { column: 'e.is_system', type: 'boolean', sortable: true } },
  links: ['edge-routers', 'identities'],
  cliColumns: ['id', 'name', 'semantic', 'identityRolesDisplay', 'edgeRouterRolesDisplay'],
});

export const serviceEdgeRouterPolicies = policyResource({
  name: 'service edge router policy',
  plural: 'service-edge-router-policies',
  table: 'serviceEdgeRouterPolicies',
  description: 'Service edge router policies: which services may be reached through which edge routers',
  sides: { serviceRoles: 'service', edgeRouterRoles: 'edge-router' },
  kindOf: () => 'serp',
  links: ['edge-routers', 'services'],
  cliColumns: ['id', 'name', 'semantic', 'serviceRolesDisplay', 'edgeRouterRolesDisplay'],
});

export const servicePolicies = policyResource({
  name: 'service policy',
  plural: 'service-policies',
  table: 'servicePolicies',
  description: 'Service policies: which identities may dial or bind which services, under which posture checks',
  sides: { identityRoles: 'identity', serviceRoles: 'service', postureCheckRoles: 'posture-check' },
  extra: { type: DialBind },
  kindOf: (r) => String(r.type).toLowerCase() as PolicyKind,
  extraDetail: (r) => ({ type: r.type }),
  extraFilterable: {
    // Upstream stores the type as a number (1 Dial, 2 Bind); "Dial" and "Bind" are accepted too.
    type: {
      column: 'e.type', type: 'number', sortable: true,
      expr: sql`(case ${sql.ref('e.type')} when 'Dial' then 1 when 'Bind' then 2 else 0 end)`,
      encode: (v) => ({ dial: 1, bind: 2 })[v.toLowerCase()] ?? 0,
    },
    identities: { column: 'e.id', type: 'set', members: { table: 'policy_members', owner: 'policy_id', value: 'entity_id', where: "side = 'identity'" } },
    services: { column: 'e.id', type: 'set', members: { table: 'policy_members', owner: 'policy_id', value: 'entity_id', where: "side = 'service'" } },
  },
  links: ['identities', 'services', 'posture-checks'],
  cliColumns: ['id', 'name', 'type', 'semantic', 'identityRolesDisplay', 'serviceRolesDisplay', 'postureCheckRolesDisplay'],
});
