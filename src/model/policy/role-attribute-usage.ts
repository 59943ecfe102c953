// Role attributes with where they are used (OpenZiti 2.1's `*-role-attribute-usage` lists, ziti#1593):
// for one kind of entity, every attribute its entities carry or a policy names (`#attr` on that kind's
// side; `#all` is a wildcard, not an attribute, and `@id` names an entity), and per source how many
// entities carry it and how many policies of each kind name it. Plain SQL over the tables the policies
// are evaluated from (entity_role_attributes, policy_roles), the same on SQLite and PostgreSQL.
import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import type { PolicyKind, Side } from './membership.js';
import { sideQuery } from './membership.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

export type UsageSourceName = 'identities' | 'edgeRouters' | 'services' | 'postureChecks' | 'servicePolicies' | 'edgeRouterPolicies' | 'serviceEdgeRouterPolicies';

/** One population that uses a kind's attributes: the entities of the kind, or the policies of some kinds naming them on its side. */
type UsageSource = { name: UsageSourceName; entities: Side } | { name: UsageSourceName; side: Side; kinds: PolicyKind[] };

const SERVICE_POLICY_KINDS: PolicyKind[] = ['dial', 'bind', 'invalid'];

/** The sources of each kind, in the order upstream lists them (controller/model/role_attribute_usage.go). */
export const USAGE_SOURCES: Record<Side, UsageSource[]> = {
  identity: [
    { name: 'identities', entities: 'identity' },
    { name: 'servicePolicies', side: 'identity', kinds: SERVICE_POLICY_KINDS },
    { name: 'edgeRouterPolicies', side: 'identity', kinds: ['erp'] },
  ],
  'edge-router': [
    { name: 'edgeRouters', entities: 'edge-router' },
    { name: 'edgeRouterPolicies', side: 'edge-router', kinds: ['erp'] },
    { name: 'serviceEdgeRouterPolicies', side: 'edge-router', kinds: ['serp'] },
  ],
  service: [
    { name: 'services', entities: 'service' },
    { name: 'servicePolicies', side: 'service', kinds: SERVICE_POLICY_KINDS },
    { name: 'serviceEdgeRouterPolicies', side: 'service', kinds: ['serp'] },
  ],
  'posture-check': [
    { name: 'postureChecks', entities: 'posture-check' },
    { name: 'servicePolicies', side: 'posture-check', kinds: SERVICE_POLICY_KINDS },
  ],
};

/** (attribute, id) of one source: the entities carrying an attribute, or the policies naming `#attribute`; `only` these attributes when given. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function sourceRows(db: AnyDb, s: UsageSource, only?: string[]): SelectQueryBuilder<any, any, { attr: string; id: string }> {
  if ('entities' in s) {
    let q = db
      .selectFrom('entityRoleAttributes as r')
      .select([sql.ref<string>('r.attribute').as('attr'), sql.ref<string>('r.entityId').as('id')])
      .where('r.entityId', 'in', sideQuery(db, s.entities).select('e.id') as never);
    if (only) q = q.where('r.attribute', 'in', only);
    return q;
  }
  let q = db
    .selectFrom('policyRoles as p')
    .select([sql<string>`substr(p.role, 2)`.as('attr'), sql.ref<string>('p.policyId').as('id')])
    .where('p.side', '=', s.side)
    .where('p.kind', 'in', s.kinds)
    .where(sql<boolean>`p.role like '#%'`)
    .where(sql<boolean>`length(p.role) > 1`)
    .where('p.role', '<>', '#all');
  if (only) q = q.where('p.role', 'in', only.map((a) => `#${a}`));
  return q;
}

/**
 * Every attribute of the kind, one row each as a list source (`id` the attribute, `created_at` empty, as
 * the role-attribute lists have it), for the filter language to page and sort.
 */
export function usageAttributes(db: AnyDb, kind: Side) {
  const [first, ...rest] = USAGE_SOURCES[kind].map((s) => sourceRows(db, s));
  let all = first;
  for (const q of rest) all = all.unionAll(q as never);
  return db.selectFrom(all.as('u')).select([sql.ref<string>('u.attr').as('id'), sql<string>`''`.as('created_at')]).distinct();
}

export interface SourceUsage {
  count: number;
  ids?: string[];
}

/**
 * The usage of these attributes of the kind: per attribute, every source of the kind (zero when it
 * names none) with its count, and the ids behind it when asked (sorted).
 */
export async function usageOf(db: AnyDb, kind: Side, attributes: string[], withIds: boolean): Promise<Map<string, Record<string, SourceUsage>>> {
  const sources = USAGE_SOURCES[kind];
  const out = new Map<string, Record<string, SourceUsage>>();
  for (const a of attributes) out.set(a, Object.fromEntries(sources.map((s) => [s.name, withIds ? { count: 0, ids: [] } : { count: 0 }])));
  for (let i = 0; i < attributes.length; i += 500) {
    const chunk = attributes.slice(i, i + 500);
    for (const s of sources) {
      const rows = sourceRows(db, s, chunk);
      if (withIds) {
        for (const r of await rows.orderBy('id').execute()) {
          const u = out.get(r.attr)?.[s.name];
          if (!u) continue;
          u.count++;
          u.ids!.push(r.id);
        }
      } else {
        const counted = (await db
          .selectFrom(rows.as('x'))
          .select(['x.attr', sql<number>`count(*)`.as('n')])
          .groupBy('x.attr')
          .execute()) as { attr: string; n: number | string }[];
        for (const r of counted) {
          const u = out.get(r.attr)?.[s.name];
          if (u) u.count = Number(r.n);
        }
      }
    }
  }
  return out;
}
