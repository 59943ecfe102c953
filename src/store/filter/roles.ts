// Role expressions (#attr, @id, #all) as SQL over an entity's role attributes: used by the
// roleFilter/roleSemantic list parameters, and by policy evaluation.
import { sql, type RawBuilder, type SqlBool } from 'kysely';
import { ApiError } from '../../model/errors.js';
import type { DialectHelpers } from '../dialect.js';

export type RoleSemantic = 'AllOf' | 'AnyOf';

/** One role as a condition on the row aliased `e`. A bare word is taken as an attribute. */
function roleCondition(role: string, attributesColumn: string, d: DialectHelpers): RawBuilder<SqlBool> {
  if (role === '#all') return sql<SqlBool>`(1 = 1)`;
  if (role.startsWith('@')) return sql<SqlBool>`(${sql.ref('e.id')} = ${role.slice(1)})`;
  const attr = role.startsWith('#') ? role.slice(1) : role;
  return sql<SqlBool>`exists (select 1 from ${d.setElements(sql.ref(attributesColumn))} where ${sql.ref('je.value')} = ${attr})`;
}

export function rolesCondition(roles: string[], semantic: string | undefined, attributesColumn: string, d: DialectHelpers): RawBuilder<SqlBool> | undefined {
  if (!roles.length) return undefined;
  const sem = semantic ?? 'AllOf';
  if (sem !== 'AllOf' && sem !== 'AnyOf') throw new ApiError(400, 'INVALID_FIELD', `roleSemantic must be AllOf or AnyOf, got '${sem}'`, { field: 'roleSemantic', reason: 'must be AllOf or AnyOf', value: sem });
  for (const r of roles) {
    if (!r || r === '#' || r === '@') throw new ApiError(400, 'INVALID_FIELD', `'${r}' is not a role: use #attribute, @id or #all`, { field: 'roleFilter', reason: 'not a role', value: r });
  }
  const parts = roles.map((r) => roleCondition(r, attributesColumn, d));
  return sql<SqlBool>`(${sql.join(parts, sql.raw(sem === 'AllOf' ? ' and ' : ' or '))})`;
}
