// Role expressions (#attr, @id, #all) as SQL over an entity's role attributes: used by the
// roleFilter/roleSemantic list parameters, and by policy evaluation.
import { sql, type RawBuilder, type SqlBool } from 'kysely';
import { ApiError } from '../../model/errors.js';

export type RoleSemantic = 'AllOf' | 'AnyOf';

/** One role as a condition on the row aliased `e`, through the role-attribute index. A bare word is an attribute. */
function roleCondition(role: string): RawBuilder<SqlBool> {
  if (role === '#all') return sql<SqlBool>`(1 = 1)`;
  if (role.startsWith('@')) return sql<SqlBool>`(${sql.ref('e.id')} = ${role.slice(1)})`;
  const attr = role.startsWith('#') ? role.slice(1) : role;
  return sql<SqlBool>`(${sql.ref('e.id')} in (select r.entity_id from entity_role_attributes r where r.attribute = ${attr}))`;
}

export function rolesCondition(roles: string[], semantic: string | undefined): RawBuilder<SqlBool> | undefined {
  if (!roles.length) return undefined;
  const sem = semantic ?? 'AllOf';
  if (sem !== 'AllOf' && sem !== 'AnyOf') throw new ApiError(400, 'INVALID_FIELD', `roleSemantic must be AllOf or AnyOf, got '${sem}'`, { field: 'roleSemantic', reason: 'must be AllOf or AnyOf', value: sem });
  for (const r of roles) {
    if (!r || r === '#' || r === '@') throw new ApiError(400, 'INVALID_FIELD', `'${r}' is not a role: use #attribute, @id or #all`, { field: 'roleFilter', reason: 'not a role', value: r });
  }
  const parts = roles.map(roleCondition);
  return sql<SqlBool>`(${sql.join(parts, sql.raw(sem === 'AllOf' ? ' and ' : ' or '))})`;
}
