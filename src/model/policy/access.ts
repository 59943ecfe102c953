// Reading the denormalised policy state: every question ("which services may this identity dial",
// "which edge routers serve this service") is a subquery over policy_members, driven by its indexes.
import { sql, type Kysely, type RawBuilder, type SqlBool } from 'kysely';
import type { Db } from '../../store/db.js';
import { all, precompile } from '../../store/precompiled.js';
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

/**
 * `e` (a service) is granted to the identity by some Dial or Bind policy: its memberships by the entity
 * index, each probed for the identity by primary key. For one row; a list is `idIn(relatedIds(...))`.
 */
export function grantedHere(identityId: string): RawBuilder<SqlBool> {
  // Raw SQL: built on every lookup, the query builder's form cost more (20 us) than the check runs.
  return sql<SqlBool>`exists (select 1 from policy_members t inner join policy_members f on f.policy_id = t.policy_id and f.side = 'identity' and f.entity_id = ${identityId} where t.entity_id = e.id and t.side = 'service' and t.kind in ('dial', 'bind'))`;
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

/**
 * For a page of services: the service policies that grant the identity Dial or Bind on each. One
 * query (on PostgreSQL one statement of the call's reads fewer than grantsForMany's two): the page's
 * services' memberships by the entity index, each kept when a primary-key probe finds the identity in
 * its policy. Not `policy_id in (the identity's policies)`: SQLite then probed the entity index for
 * every service, kind and policy of the identity (200 x 2 x 250 on the Large model: 5.7 ms, 0.28 so).
 */
export async function grantsFor(db: AnyDb, identityId: string, serviceIds: string[]): Promise<Grant[]> {
  if (!serviceIds.length) return [];
  return all(db as Db, grantsQuery, [[...new Set(serviceIds)], identityId]);
}

/**
 * The grants query for the services `among` admits (the page's ids, as the caller gives them), the
 * caller's membership a scalar subquery on the primary key, not EXISTS: PostgreSQL turns EXISTS into
 * a join, and its generic plan, guessing one membership per identity, drove from the identity's
 * memberships and probed the page's ids for each (100 x 100 for the bench's probe: 6.8 ms, 0.6 so).
 */
export const grantsOf = (db: AnyDb, among: (ref: RawBuilder<unknown>) => RawBuilder<SqlBool>, identityId: unknown) =>
  db
    .selectFrom('policyMembers as g')
    .select(['g.entityId as serviceId', 'g.policyId', 'g.kind'])
    .where(among(sql.ref('g.entityId')))
    .where('g.side', '=', 'service')
    .where('g.kind', 'in', SERVICE_POLICY_KINDS)
    .where(sql<SqlBool>`(select 1 from policy_members h where h.policy_id = g.policy_id and h.side = 'identity' and h.entity_id = ${identityId}) = 1`);

/**
 * The same grants read from the identity's side, for a page of many services: the identity's Dial and
 * Bind policies by the entity index, each policy's services by the primary key's prefix, kept when
 * `inPage` (a hash of the page's ids, `p.inSet`) holds them. Its cost follows the identity's policies,
 * not the page: grantsOf probes each of the page's services and each of their policies. For the bench's
 * probe identity on PostgreSQL: Medium's 100 services 0.31-0.34 ms -> 0.15-0.20, Large's 200 2.1 ->
 * 1.2-1.3; but a page of 25 on Large 0.18 -> 0.95 (its 250 policies read for 25 services), hence
 * WIDE_PAGE. The kind is the identity's membership's (one policy, one kind): the services' memberships
 * are then read from the primary key alone.
 */
export const grantsFromIdentity = (db: AnyDb, inPage: (ref: RawBuilder<unknown>) => RawBuilder<SqlBool>, identityId: unknown) =>
  db
    .selectFrom('policyMembers as h')
    .innerJoin('policyMembers as g', (j) => j.onRef('g.policyId', '=', 'h.policyId').on('g.side', '=', 'service'))
    .select(['g.entityId as serviceId', 'g.policyId', 'h.kind'])
    .where('h.entityId', '=', identityId as string)
    .where('h.side', '=', 'identity')
    .where('h.kind', 'in', SERVICE_POLICY_KINDS)
    .where(inPage(sql.ref('g.entityId')));

// Compiled once, the page's ids one array parameter (a page of 1 and of 500 are the same statement).
const grantsQuery = precompile<Grant>((db, p) => grantsOf(db, (g) => p.anyOf(g, 0), p(1)) as never);

/** A grant with its policy's name (a session's access log names it). */
export type NamedGrant = Grant & { policyName: string };

// The grants query with each policy's name joined by its primary key: the same statement, no more round trips.
const namedGrantsQuery = precompile<NamedGrant>((db, p) =>
  (grantsOf(db, (g) => p.anyOf(g, 0), p(1)) as ReturnType<typeof grantsOf>)
    .innerJoin('servicePolicies as sp', 'sp.id', 'g.policyId')
    .select('sp.name as policyName') as never,
);

/** grantsFor, with the policies' names (session creation: what granted it goes into its event). */
export async function namedGrantsFor(db: AnyDb, identityId: string, serviceIds: string[]): Promise<NamedGrant[]> {
  if (!serviceIds.length) return [];
  return all(db as Db, namedGrantsQuery, [[...new Set(serviceIds)], identityId]);
}

/**
 * The same for several identities at once (a page of sessions). Two index lookups joined here rather
 * than one SQL join: the join drove from the identity's policies and probed every one of them for every
 * service of the page, policies × services, which grows with the model; these read only the
 * identities' policies and the page's services' memberships.
 */
export async function grantsForMany(db: AnyDb, identityIds: string[], serviceIds: string[]): Promise<(Grant & { identityId: string })[]> {
  if (!serviceIds.length || !identityIds.length) return [];
  // Independent reads, sent at once: on PostgreSQL one round trip's wait instead of two.
  const [held, granted] = await Promise.all([
    db
      .selectFrom('policyMembers')
      .select(['entityId', 'policyId'])
      .where('entityId', 'in', [...new Set(identityIds)])
      .where('side', '=', 'identity')
      .where('kind', 'in', SERVICE_POLICY_KINDS)
      .execute(),
    db
      .selectFrom('policyMembers')
      .select(['entityId', 'policyId', 'kind'])
      .where('entityId', 'in', [...new Set(serviceIds)])
      .where('side', '=', 'service')
      .where('kind', 'in', SERVICE_POLICY_KINDS)
      .execute(),
  ]);
  if (!held.length) return [];
  const holders = new Map<string, string[]>();
  for (const h of held as { entityId: string; policyId: string }[]) {
    const list = holders.get(h.policyId);
    if (list) list.push(h.entityId);
    else holders.set(h.policyId, [h.entityId]);
  }
  return (granted as { entityId: string; policyId: string; kind: PolicyKind }[]).flatMap((g) =>
    (holders.get(g.policyId) ?? []).map((identityId) => ({ identityId, serviceId: g.entityId, policyId: g.policyId, kind: g.kind })),
  );
}

/**
 * May the identity use the service? From the service's few policies to one primary-key probe each, so
 * the cost does not grow with how many policies select the identity.
 */
export async function canUse(db: AnyDb, identityId: string, serviceId: string, kinds: PolicyKind[] = SERVICE_POLICY_KINDS): Promise<boolean> {
  const row = await db
    .selectFrom('policyMembers as f')
    .select('f.policyId')
    .where('f.policyId', 'in', policiesOf(db, 'service', serviceId, kinds))
    .where('f.side', '=', 'identity')
    .where('f.entityId', '=', identityId)
    .executeTakeFirst();
  return !!row;
}
