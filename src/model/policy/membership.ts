// Policy evaluation, kept denormalised. Every policy side (identities, services, edge routers, posture
// checks) lists roles; policy_members holds the entities each side selects, so "which services may this
// identity dial" is two index lookups (identity -> its policies -> their services), never an evaluation.
//
// Why per-policy membership rather than an identity x service table: the product grows with
// identities x services (a #all policy over 100k identities and 1k services is 100M rows), while
// membership grows with the policies' sizes only, and the join over it stays indexed.
//
// Kept in step in the same transaction as every change that can move it:
// - a policy is created or changed: its members are recomputed in SQL (evaluatePolicy);
// - an entity is created or its role attributes change: its rows are recomputed against the policies
//   that name #all, @it or one of its attributes, found through policy_roles (evaluateEntity);
// - an entity or policy is deleted: its rows go (forgetEntity, forgetPolicy).
import { sql, type Kysely } from 'kysely';
import { ApiError } from '../errors.js';
import { rolesCondition } from '../../store/filter/roles.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

export type Side = 'identity' | 'service' | 'edge-router' | 'posture-check';
/** Policy kinds as stored: edge router policies, service edge router policies, service policies by type. */
export type PolicyKind = 'erp' | 'serp' | 'dial' | 'bind' | 'invalid';
export type Semantic = 'AllOf' | 'AnyOf';

export interface PolicyShape {
  id: string;
  kind: PolicyKind;
  semantic: Semantic;
  sides: Partial<Record<Side, string[]>>;
}

/** The entities one side selects from: the table and any condition on it. */
export const SIDE_TABLES: Record<Side, { table: string; where?: string }> = {
  identity: { table: 'identities' },
  service: { table: 'services' },
  'edge-router': { table: 'routers', where: 'is_edge = 1' },
  'posture-check': { table: 'posture_checks' },
};

/**
 * Membership changes are serialized across transactions (and controllers): two concurrent writes, one
 * adding a policy and one adding an entity, would each miss the other's uncommitted row. Updating one
 * row takes its lock until commit (PostgreSQL); statements after it see everything committed before
 * (READ COMMITTED). SQLite runs one writer at a time anyway. Taken before the service-change marker
 * (see touchServices), so the two locks are always taken in the same order.
 */
export async function lockMembership(tx: AnyDb) {
  await tx.updateTable('changeMarkers').set({ changedAt: sql`changed_at` }).where('name', '=', 'policy-membership').execute();
}

/**
 * How a new entity's evaluation takes the lock. Creates of entities do not race each other (each writes
 * only its own member rows), only policy changes, so on PostgreSQL they take the row shared (FOR SHARE):
 * concurrent identity creates no longer queue behind one another's commit, while a policy change (its
 * UPDATE) still waits for them, and they for it. SQLite: nothing to take, its writers run one at a time.
 * A transaction that took it shared and then changes a policy or the service marker upgrades it; two
 * such at once deadlock, which PostgreSQL detects and writeTx retries (only imports do that).
 */
export type MembershipLock = 'exclusive' | 'shared' | 'none';

async function takeMembership(tx: AnyDb, lock: MembershipLock) {
  if (lock === 'exclusive') await lockMembership(tx);
  else if (lock === 'shared') await sql`select name from change_markers where name = 'policy-membership' for share`.execute(tx);
}

export function sideQuery(db: AnyDb, side: Side) {
  const t = SIDE_TABLES[side];
  let q = db.selectFrom(`${t.table} as e`);
  if (t.where) q = q.where(sql.raw(`e.${t.where}`) as never);
  return q;
}

/** The JavaScript twin of rolesCondition (store/filter/roles.ts), for one entity. */
export function matches(roles: string[], semantic: Semantic, id: string, attributes: ReadonlySet<string>): boolean {
  // Upstream's rule (see rolesCondition): #all, or named by @id, or the attributes by the semantic.
  if (roles.includes('#all') || roles.includes(`@${id}`)) return true;
  const wanted = roles.filter((r) => !r.startsWith('@')).map((r) => (r.startsWith('#') ? r.slice(1) : r));
  if (!wanted.length) return false;
  const has = (a: string) => attributes.has(a);
  return semantic === 'AnyOf' ? wanted.some(has) : wanted.every(has);
}

/** Recompute one policy: its role index and the members of each side. */
export async function evaluatePolicy(tx: AnyDb, p: PolicyShape) {
  await lockMembership(tx);
  await forgetPolicy(tx, p.id);
  const roleRows = Object.entries(p.sides).flatMap(([side, roles]) =>
    [...new Set(roles ?? [])].map((role) => ({ policyId: p.id, side, role, kind: p.kind, semantic: p.semantic })),
  );
  if (roleRows.length) await tx.insertInto('policyRoles').values(roleRows).execute();
  for (const [side, roles] of Object.entries(p.sides) as [Side, string[]][]) {
    const cond = rolesCondition(roles ?? [], p.semantic);
    if (!cond) continue;
    const select = sideQuery(tx, side)
      .where(cond as never)
      .select([sql<string>`${p.id}`.as('policy_id'), sql<string>`${p.kind}`.as('kind'), sql<string>`${side}`.as('side'), sql.ref<string>('e.id').as('entity_id')]);
    await tx.insertInto('policyMembers').columns(['policyId', 'kind', 'side', 'entityId']).expression(select as never).execute();
  }
}

export async function forgetPolicy(tx: AnyDb, policyId: string) {
  await lockMembership(tx);
  await tx.deleteFrom('policyMembers').where('policyId', '=', policyId).execute();
  await tx.deleteFrom('policyRoles').where('policyId', '=', policyId).execute();
}

/** Recompute one entity's membership on one side, after it was created or its role attributes changed. */
export async function evaluateEntity(tx: AnyDb, side: Side, id: string, attributes: string[], o: { lock?: MembershipLock; fresh?: boolean } = {}) {
  await takeMembership(tx, o.lock ?? 'exclusive');
  // fresh: a row created in this transaction has no member rows to delete.
  if (!o.fresh) await tx.deleteFrom('policyMembers').where('entityId', '=', id).where('side', '=', side).execute();
  const names = ['#all', `@${id}`, ...attributes.map((a) => `#${a}`)];
  const candidates = tx.selectFrom('policyRoles').select('policyId').where('side', '=', side).where('role', 'in', names);
  const roles = await tx
    .selectFrom('policyRoles')
    .select(['policyId', 'role', 'kind', 'semantic'])
    .where('side', '=', side)
    .where('policyId', 'in', candidates)
    .execute();
  const byPolicy = new Map<string, { kind: string; semantic: Semantic; roles: string[] }>();
  for (const r of roles as { policyId: string; role: string; kind: string; semantic: Semantic }[]) {
    const p = byPolicy.get(r.policyId) ?? { kind: r.kind, semantic: r.semantic, roles: [] };
    p.roles.push(r.role);
    byPolicy.set(r.policyId, p);
  }
  const attrs = new Set(attributes);
  const rows = [...byPolicy].filter(([, p]) => matches(p.roles, p.semantic, id, attrs)).map(([policyId, p]) => ({ policyId, kind: p.kind, side, entityId: id }));
  for (let i = 0; i < rows.length; i += 500) await tx.insertInto('policyMembers').values(rows.slice(i, i + 500)).execute();
}

const POLICY_TABLE: Record<PolicyKind, string> = { erp: 'edge_router_policies', serp: 'service_edge_router_policies', dial: 'service_policies', bind: 'service_policies', invalid: 'service_policies' };
const ROLE_COLUMN: Record<Side, string> = { identity: 'identity_roles', service: 'service_roles', 'edge-router': 'edge_router_roles', 'posture-check': 'posture_check_roles' };

/**
 * A deleted entity leaves every policy: its member rows, and the @id roles that named it, whatever the
 * semantic, as upstream. An @id only ever adds its own entity (the semantic joins attributes only), so
 * dropping it selects no one new.
 */
export async function forgetEntity(tx: AnyDb, id: string) {
  await lockMembership(tx);
  await tx.deleteFrom('policyMembers').where('entityId', '=', id).execute();
  const naming = (await tx.selectFrom('policyRoles').select(['policyId', 'side', 'kind']).where('role', '=', `@${id}`).execute()) as { policyId: string; side: Side; kind: PolicyKind }[];
  for (const r of naming) await removeRole(tx, r.policyId, r.kind, r.side, `@${id}`);
  await tx.deleteFrom('policyRoles').where('role', '=', `@${id}`).execute();
}

/** Take one role out of a policy's stored role list for a side; returns the roles kept. */
export async function removeRole(tx: AnyDb, policyId: string, kind: PolicyKind, side: Side, role: string): Promise<string[]> {
  const table = sql.table(POLICY_TABLE[kind]);
  const column = sql.ref(ROLE_COLUMN[side]);
  const row = await sql<{ roles: string }>`select ${column} as roles from ${table} where id = ${policyId}`.execute(tx);
  const kept = (JSON.parse(row.rows[0]?.roles ?? '[]') as string[]).filter((x) => x !== role);
  await sql`update ${table} set ${column} = ${JSON.stringify(kept)} where id = ${policyId}`.execute(tx);
  return kept;
}

/** Roles as a policy stores them: #attribute, @id (a @name is resolved to the id), #all. */
export async function normaliseRoles(tx: AnyDb, side: Side, field: string, roles: string[] | null | undefined): Promise<string[]> {
  const out: string[] = [];
  // #all stands alone, as upstream requires (counted before repeats are dropped, as there).
  if (roles && roles.length > 1 && roles.includes('#all')) {
    throw new ApiError(400, 'COULD_NOT_VALIDATE', `The field '${field}' is not valid: if using #all, it should be the only role specified`, { field, reason: 'if using #all, it should be the only role specified', value: roles });
  }
  for (const role of roles ?? []) {
    if (typeof role !== 'string' || role.length < 2 || !/^[#@]/.test(role)) {
      // COULD_NOT_VALIDATE with upstream's reason, as its controller answers.
      throw new ApiError(400, 'COULD_NOT_VALIDATE', `The field '${field}' is not valid: '${role}' is not a role; use #attribute, @id, @name or #all`, { field, reason: 'role entries must prefixed with # (to indicate role attributes) or @ (to indicate a name or id)', value: role });
    }
    if (role.startsWith('@')) {
      const ref = role.slice(1);
      const byId = await sideQuery(tx, side).select('e.id').where('e.id', '=', ref).executeTakeFirst();
      const byName = byId ?? (await sideQuery(tx, side).select('e.id').where('e.name', '=', ref).executeTakeFirst());
      if (!byName) throw new ApiError(400, 'COULD_NOT_VALIDATE', `The field '${field}' is not valid: no ${side} has the id or name '${ref}'`, { field, reason: `no ${side} has the id or name '${ref}'`, value: role });
      out.push(`@${(byName as { id: string }).id}`);
    } else out.push(role);
  }
  return [...new Set(out)];
}

/** Names for the @id roles of a page of policies, one query per side: for the *RolesDisplay fields. */
export async function roleNames(db: AnyDb, side: Side, roleLists: string[][]): Promise<Map<string, string>> {
  const ids = [...new Set(roleLists.flat().filter((r) => r.startsWith('@')).map((r) => r.slice(1)))];
  const names = new Map<string, string>();
  if (!ids.length) return names;
  for (let i = 0; i < ids.length; i += 500) {
    const rows = await sideQuery(db, side).select(['e.id', 'e.name']).where('e.id', 'in', ids.slice(i, i + 500)).execute();
    for (const r of rows as { id: string; name: string }[]) names.set(r.id, r.name);
  }
  return names;
}

export const displayRoles = (roles: string[], names: Map<string, string>) =>
  roles.map((role) => ({ role, name: role.startsWith('@') ? `@${names.get(role.slice(1)) ?? role.slice(1)}` : role }));

/**
 * Every policy evaluated from scratch, as "policyId|side|entityId" strings: what policy_members must hold.
 * Used by the integrity scan and by the test that checks the incremental updates.
 */
export async function expectedMembers(db: AnyDb, policies: PolicyShape[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const p of policies) {
    for (const [side, roles] of Object.entries(p.sides) as [Side, string[]][]) {
      const cond = rolesCondition(roles ?? [], p.semantic);
      if (!cond) continue;
      const rows = await sideQuery(db, side).where(cond as never).select('e.id').execute();
      for (const r of rows as { id: string }[]) out.add(`${p.id}|${side}|${r.id}`);
    }
  }
  return out;
}

export async function storedMembers(db: AnyDb): Promise<Set<string>> {
  const rows = await db.selectFrom('policyMembers').select(['policyId', 'side', 'entityId']).execute();
  return new Set(rows.map((r: { policyId: string; side: string; entityId: string }) => `${r.policyId}|${r.side}|${r.entityId}`));
}
