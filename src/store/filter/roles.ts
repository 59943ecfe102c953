// Role expressions (#attr, @id, #all) as SQL over an entity's role attributes: used by the
// roleFilter/roleSemantic list parameters, and by policy evaluation.
//
// The condition has the same shape whatever the number of roles: a list of ids and one sub-query over
// the attribute index with a list of attributes. One `or`/`and` term per role nests one level per role
// in the database's expression tree, and SQLite refuses trees deeper than 1000 (a policy may hold
// 1000 roles).
import { sql, type RawBuilder, type SqlBool } from 'kysely';
import { ApiError } from '../../model/errors.js';

export type RoleSemantic = 'AllOf' | 'AnyOf';

/** Roles split by kind: #all, @ids and attributes (#attr, or a bare word). */
function split(roles: string[]) {
  const ids = new Set<string>();
  const attributes = new Set<string>();
  let all = false;
  for (const role of roles) {
    if (role === '#all') all = true;
    else if (role.startsWith('@')) ids.add(role.slice(1));
    else attributes.add(role.startsWith('#') ? role.slice(1) : role);
  }
  return { all, ids: [...ids], attributes: [...attributes] };
}

const TRUE = sql<SqlBool>`(1 = 1)`;
const FALSE = sql<SqlBool>`(1 = 0)`;
const idIn = (ids: string[]) => sql<SqlBool>`(${sql.ref('e.id')} in (${sql.join(ids)}))`;

export function rolesCondition(roles: string[], semantic: string | undefined): RawBuilder<SqlBool> | undefined {
  if (!roles.length) return undefined;
  const sem = semantic ?? 'AllOf';
  if (sem !== 'AllOf' && sem !== 'AnyOf') throw new ApiError(400, 'INVALID_FIELD', `roleSemantic must be AllOf or AnyOf, got '${sem}'`, { field: 'roleSemantic', reason: 'must be AllOf or AnyOf', value: sem });
  for (const r of roles) {
    if (!r || r === '#' || r === '@') throw new ApiError(400, 'INVALID_FIELD', `'${r}' is not a role: use #attribute, @id or #all`, { field: 'roleFilter', reason: 'not a role', value: r });
  }
  // Upstream's rule: #all selects everything; @ids are always selected; the semantic joins the
  // attributes only (AllOf: every one of them, AnyOf: any). So AllOf [@a, @b] selects a and b, and
  // AllOf [@a, #x] selects a and every entity with x.
  const { all, ids, attributes } = split(roles);
  if (all) return TRUE;
  const parts: RawBuilder<SqlBool>[] = [];
  if (ids.length) parts.push(idIn(ids));
  if (attributes.length) {
    // AllOf: the entities holding every one of the (distinct) attributes.
    const every = sem === 'AllOf' ? sql` group by r.entity_id having count(*) = ${attributes.length}` : sql``;
    parts.push(sql<SqlBool>`(${sql.ref('e.id')} in (select r.entity_id from entity_role_attributes r where r.attribute in (${sql.join(attributes)})${every}))`);
  }
  return parts.length ? sql<SqlBool>`(${sql.join(parts, sql` or `)})` : FALSE;
}
