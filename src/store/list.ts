// The generic list: filter, sort and page in SQL, then fetch the details of one page in one query.
import { sql } from 'kysely';
import { ApiError } from '../model/errors.js';
import type { ResourceDecl, Row, AnyQuery } from '../model/resource.js';
import type { Db } from './db.js';
import type { DialectHelpers } from './dialect.js';
import { compileFilter } from './filter/index.js';
import { rolesCondition } from './filter/roles.js';

export const PAGE_DEFAULT = 10;
export const PAGE_MAX = 500;
export const OFFSET_MAX = 100_000;

export interface ListParams {
  limit?: number;
  offset?: number;
  filter?: string;
  /** Roles (#attr, @id, #all) on lists whose source declares a role-attribute column. */
  roleFilter?: string[];
  roleSemantic?: string;
}

export interface Page {
  rows: Row[];
  pagination: { limit: number; offset: number; totalCount: number };
}

export interface ListSource {
  filterable: ResourceDecl['filterable'];
  /** roleFilter applies (the resource has indexed role attributes). */
  hasRoles?: boolean;
  source: (db: Db) => AnyQuery;
  detailQuery: (db: Db) => AnyQuery;
}

/** In-filter `skip`/`limit` win over the query string's offset/limit; limit is capped at PAGE_MAX. */
export function resolvePaging(params: ListParams, fromFilter: { skip?: number; limit?: number | 'none' }) {
  let limit: number | 'none' = fromFilter.limit ?? params.limit ?? PAGE_DEFAULT;
  const offset = fromFilter.skip ?? params.offset ?? 0;
  if (limit !== 'none') {
    if (!Number.isInteger(limit) || limit < 1) throw new ApiError(400, 'INVALID_PAGINATION', `limit must be a whole number of at least 1, got ${limit}`);
    limit = Math.min(limit, PAGE_MAX);
  }
  if (!Number.isInteger(offset) || offset < 0 || offset > OFFSET_MAX) {
    throw new ApiError(400, 'INVALID_PAGINATION', `offset must be a whole number from 0 to ${OFFSET_MAX}, got ${offset}`);
  }
  return { limit, offset };
}

export async function listPage(db: Db, dialect: DialectHelpers, src: ListSource, params: ListParams, scope?: (q: AnyQuery) => AnyQuery): Promise<Page> {
  const compiled = compileFilter(params.filter, src.filterable, dialect);
  const { limit, offset } = resolvePaging(params, compiled);
  let base = src.source(db);
  if (scope) base = scope(base);
  if (compiled.where) base = base.where(compiled.where as never);
  if (src.hasRoles && params.roleFilter) {
    const roles = rolesCondition(params.roleFilter, params.roleSemantic);
    if (roles) base = base.where(roles as never);
  }

  const counted = await base.select(sql<number>`count(*)`.as('n')).executeTakeFirst();
  const totalCount = Number(counted?.n ?? 0);

  let ids = base.select(sql.ref('e.id').as('id'));
  for (const s of compiled.sort) ids = ids.orderBy(sql.ref(s.column), s.desc ? 'desc' : 'asc');
  ids = ids.orderBy(sql.ref('e.created_at'), 'asc').orderBy(sql.ref('e.id'), 'asc');
  if (limit !== 'none') ids = ids.limit(limit);
  if (offset) ids = (limit === 'none' ? dialect.withoutLimit(ids) : ids).offset(offset);
  const idRows = await ids.execute();
  const order = idRows.map((r) => String(r.id));
  let rows: Row[] = [];
  if (order.length) {
    const found = await src.detailQuery(db).where(sql.ref('e.id'), 'in', order).execute();
    const byId = new Map(found.map((r: Row) => [r.id, r]));
    rows = order.map((id) => byId.get(id)).filter((r): r is Row => r !== undefined);
  }
  return { rows, pagination: { limit: limit === 'none' ? totalCount : limit, offset, totalCount } };
}
