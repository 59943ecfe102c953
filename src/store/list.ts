// The generic list: filter, sort and page in SQL; a page of rows in one query, or its ids and then their details.
import { sql } from 'kysely';
import { ApiError } from '../model/errors.js';
import type { ResourceDecl, Row, AnyQuery } from '../model/resource.js';
import type { Db } from './db.js';
import type { DialectHelpers } from './dialect.js';
import { compileFilter, compileSortParam } from './filter/index.js';
import { rolesCondition } from './filter/roles.js';
import { cachedCount } from './count-cache.js';

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
  /** Sort order as `sort=name desc,createdAt`, used when the filter has no `sort by` (as upstream). */
  sort?: string;
}

export interface Page {
  rows: Row[];
  /** Set instead of rows for an unlimited list too large to hold at once: its rows, a chunk at a time. */
  chunks?: AsyncIterable<Row[]>;
  pagination: { limit: number; offset: number; totalCount: number };
}

export interface ListSource {
  filterable: ResourceDecl['filterable'];
  /** roleFilter applies (the resource has indexed role attributes). */
  hasRoles?: boolean;
  source: (db: Db) => AnyQuery;
  detailQuery: (db: Db) => AnyQuery;
  /** The details are the source's own rows (no detailQuery of its own): a page is then one query. */
  rowsAreDetails?: boolean;
}

/**
 * Paging as upstream reads it (filter-symbols.md, "limit / offset rules"): in-filter `skip`/`limit` win over
 * the query string's offset/limit; -1 (or `limit none`) means no limit; a missing limit, 0 or anything below
 * -1 is the default page; above the maximum the limit is clamped, and the offset is kept within 0..OFFSET_MAX.
 */
/** Upstream reads the query string's limit and offset as 64-bit integers: anything else (1.5, 1e400) is a 400. */
export function checkPagingParams(params: Pick<ListParams, 'limit' | 'offset'>) {
  for (const [name, v] of [['limit', params.limit], ['offset', params.offset]] as const) {
    if (v !== undefined && !(Number.isInteger(v) && Math.abs(v) < 2 ** 63)) {
      throw new ApiError(400, 'INVALID_PAGINATION', `${name} must be a whole number, got ${v}`, { field: name, reason: 'must be a whole number', value: String(v) });
    }
  }
}

export function resolvePaging(params: ListParams, fromFilter: { skip?: number; limit?: number | 'none' }) {
  checkPagingParams(params);
  const asked = fromFilter.limit ?? params.limit;
  let limit: number | 'none';
  if (asked === 'none' || asked === -1) limit = 'none';
  else if (asked === undefined || !Number.isFinite(asked) || asked < 1) limit = PAGE_DEFAULT;
  else limit = Math.min(Math.floor(asked), PAGE_MAX);
  const skip = fromFilter.skip ?? params.offset ?? 0;
  const offset = !Number.isFinite(skip) || skip < 0 ? 0 : Math.min(Math.floor(skip), OFFSET_MAX);
  return { limit, offset };
}

/** Every row of a chunked answer, for the few lists that are small by nature (role attributes). */
export async function collect<T>(chunks: AsyncIterable<T[]>): Promise<T[]> {
  const all: T[] = [];
  for await (const c of chunks) all.push(...c);
  return all;
}

/** Rows fetched per query when a list has no limit: memory stays bounded whatever the table's size. */
export const STREAM_CHUNK = 500;

/**
 * Narrows a list to the rows a caller may see. `pinned`: the query allows one row at most (a unique
 * field's value, a get by id), so the scope is best checked on that row than listed whole first.
 */
export type Scope = (q: AnyQuery, how?: { pinned?: boolean }) => AnyQuery;

export async function listPage(db: Db, dialect: DialectHelpers, src: ListSource, params: ListParams, scope?: Scope): Promise<Page> {
  const compiled = compileFilter(params.filter, src.filterable, dialect);
  if (!compiled.sort.length && params.sort) compiled.sort = compileSortParam(params.sort, src.filterable, dialect);
  const { limit, offset } = resolvePaging(params, compiled);
  let base = src.source(db);
  if (scope) base = scope(base, { pinned: compiled.pinned });
  if (compiled.where) base = base.where(compiled.where as never);
  if (src.hasRoles && params.roleFilter) {
    const roles = rolesCondition(params.roleFilter, params.roleSemantic);
    if (roles) base = base.where(roles as never);
  }

  // Remembered while nothing is written (store/count-cache.ts): paging through one filter counts once.
  const count = () =>
    cachedCount(db, base.select(sql<number>`count(*)`.as('n')).compile(), async (q) => Number(((await db.executeQuery<{ n: number }>(q)).rows[0] as { n?: number } | undefined)?.n ?? 0));

  const sorted = (q: AnyQuery) => {
    for (const s of compiled.sort) q = q.orderBy(s.ref, s.desc ? 'desc' : 'asc');
    // Without a sort (and after it, to break ties) by id, as upstream lists its stores in key order.
    return q.orderBy(sql.ref('e.id'), 'asc');
  };
  const ids = sorted(base.select(sql.ref('e.id').as('id')));
  // Details that are the rows themselves come with the page: one query (on PostgreSQL one round trip)
  // instead of the page's ids and then their rows.
  const whole = src.rowsAreDetails ? sorted(base.selectAll('e' as never)) : undefined;

  // How many ids the last fetch found: a page that is not full, and starts at 0 or has rows, ends the
  // list, so the total is its offset plus its length without counting again (one query fewer for the
  // small answers clients ask most: one service by name, a short filtered list).
  let found = 0;
  const fetch = async (n: number, from: number): Promise<Row[]> => {
    // The limit is written into the SQL (a whole number from resolvePaging, never the caller's text), not
    // sent as a parameter: a generic plan on PostgreSQL takes a parameter limit for a tenth of the rows,
    // which makes walking the sort's index with the filter look cheap for any filtered page.
    const lim = sql.lit(n);
    if (whole) {
      const rows = (await (from ? whole.limit(lim).offset(from) : whole.limit(lim)).execute()) as Row[];
      found = rows.length;
      return rows;
    }
    let q = ids.limit(lim);
    if (from) q = q.offset(from);
    const order = (await q.execute()).map((r) => String(r.id));
    found = order.length;
    if (!order.length) return [];
    const details = await src.detailQuery(db).where(sql.ref('e.id'), 'in', order).execute();
    const byId = new Map(details.map((r: Row) => [r.id, r]));
    return order.map((id) => byId.get(id)).filter((r): r is Row => r !== undefined);
  };

  const totalAfter = (n: number, from: number) => (found < n && (found > 0 || from === 0) ? from + found : count());

  if (limit === 'none') {
    // The first chunk is read before counting: when it is the whole answer, it is the count.
    const first = await fetch(STREAM_CHUNK, offset);
    const totalCount = await totalAfter(STREAM_CHUNK, offset);
    const pagination = { limit: Math.max(totalCount - offset, 0), offset, totalCount };
    // Small answers are read at once; large ones are streamed a chunk at a time.
    if (totalCount - offset <= STREAM_CHUNK) return { rows: first, pagination };
    async function* chunks() {
      for (let at = offset; ; at += STREAM_CHUNK) {
        const rows = at === offset ? first : await fetch(STREAM_CHUNK, at);
        if (rows.length) yield rows;
        if (rows.length < STREAM_CHUNK) return;
      }
    }
    return { rows: [], chunks: chunks(), pagination };
  }
  const rows = await fetch(limit, offset);
  return { rows, pagination: { limit, offset, totalCount: await totalAfter(limit, offset) } };
}
