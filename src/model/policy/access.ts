// Reading the denormalised policy state: every question ("which services may this identity dial",
// "which edge routers serve this service") is a subquery over policy_members, driven by its indexes.
import { sql, type Kysely, type RawBuilder, type SqlBool } from 'kysely';
import type { PolicyKind, Side } from './membership.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

export const SERVICE_POLICY_KINDS: PolicyKind[] = ['dial', 'bind'];
export const kindsOfType = (policyType?: string): PolicyKind[] =>
  policyType === 'dial' || policyType === 'Dial' ? ['dial'] : policyType === 'bind' || policyType === 'Bind' ? ['bind'] : SERVICE_POLICY_KINDS;

/** Ids of the `to` entities that share a policy of the given kinds with the entity `fromId` on side `from`. */
export function relatedIds(db: AnyDb, from: Side, fromId: string, to: Side, kinds: PolicyKind[]) {
  return db
    .selectFrom('policyMembers as f')
    .innerJoin('policyMembers as t', (j) => j.onRef('t.policyId', '=', 'f.policyId').on('t.side', '=', to))
    .select('t.entityId')
    .where('f.entityId', '=', fromId)
    .where('f.side', '=', from)
    .where('f.kind', 'in', kinds);
}

/** Ids of the policies of the given kinds that select the entity on its side. */
export function policiesOf(db: AnyDb, side: Side, entityId: string, kinds: PolicyKind[]) {
  return db.selectFrom('policyMembers').select('policyId').where('entityId', '=', entityId).where('side', '=', side).where('kind', 'in', kinds);
}

/** Ids of the entities a policy selects on one side. */
export function membersOf(db: AnyDb, policyId: string, side: Side) {
  return db.selectFrom('policyMembers').select('entityId').where('policyId', '=', policyId).where('side', '=', side);
}

/** `e.id in (subquery)`, for scoping a list. */
export const idIn = (sub: { compile(): unknown }): RawBuilder<SqlBool> => sql<SqlBool>`${sql.ref('e.id')} in (${sub as never})`;

/** Edge routers an identity may use for a service: allowed for the identity and for the service. */
export function sharedEdgeRouters(db: AnyDb, identityId: string, serviceId: string) {
  return relatedIds(db, 'identity', identityId, 'edge-router', ['erp']).where('t.entityId', 'in', relatedIds(db, 'service', serviceId, 'edge-router', ['serp']));
}

export interface Grant {
  serviceId: string;
  policyId: string;
  kind: PolicyKind;
}

/** For a page of services: the service policies that grant the identity Dial or Bind on each. */
export async function grantsFor(db: AnyDb, identityId: string, serviceIds: string[]): Promise<Grant[]> {
  return (await grantsForMany(db, [identityId], serviceIds)).map(({ identityId: _, ...g }) => g);
}

/** The same for several identities at once (one query for a page of sessions). */
export async function grantsForMany(db: AnyDb, identityIds: string[], serviceIds: string[]): Promise<(Grant & { identityId: string })[]> {
  if (!serviceIds.length || !identityIds.length) return [];
  const rows = await db
    .selectFrom('policyMembers as f')
    .innerJoin('policyMembers as t', (j) => j.onRef('t.policyId', '=', 'f.policyId').on('t.side', '=', 'service'))
    .select(['f.entityId as identityId', 't.entityId as serviceId', 't.policyId as policyId', 't.kind as kind'])
    .where('f.entityId', 'in', [...new Set(identityIds)])
    .where('f.side', '=', 'identity')
    .where('f.kind', 'in', SERVICE_POLICY_KINDS)
    .where('t.entityId', 'in', [...new Set(serviceIds)])
    .execute();
  return rows as (Grant & { identityId: string })[];
}

export async function canUse(db: AnyDb, identityId: string, serviceId: string, kinds: PolicyKind[] = SERVICE_POLICY_KINDS): Promise<boolean> {
  const row = await relatedIds(db, 'identity', identityId, 'service', kinds).where('t.entityId', '=', serviceId).executeTakeFirst();
  return !!row;
}
