// The resource declaration: one object per resource drives its routes, validation, OpenAPI entries,
// filterable fields and CLI subcommands (see docs/architecture.md).
import { sql, type RawBuilder, type SelectQueryBuilder } from 'kysely';
import type { TSchema } from 'typebox';
import type { Db, Tx } from '../store/db.js';
import type { DialectName } from '../store/dialect.js';
import type { Database } from '../store/schema.js';
import type { Ctx } from './context.js';
import { fromJson } from '../store/json.js';
import type { Side } from './policy/membership.js';

export type FieldType = 'string' | 'number' | 'boolean' | 'datetime' | 'set' | 'tags';

export interface FieldSpec {
  /** SQL reference, qualified by the alias `e` of the resource's own table (or a join's alias). */
  column: string;
  /** A computed value instead of the column (an upstream symbol with no column of its own). */
  expr?: RawBuilder<unknown> | ((d: DialectName) => RawBuilder<unknown>);
  type: FieldType;
  sortable?: boolean;
  /** For a set field: backed by the entity_role_attributes index (the resource's role attributes). */
  indexed?: boolean;
  /** For a set field: its elements are rows of a link table, `value` of the rows whose `owner` is the entity. */
  members?: { table: string; owner: string; value: string; where?: string };
  /**
   * String literals are stored differently (a token's hash, a policy type's number): compared after this
   * conversion; contains does not apply.
   */
  encode?: (value: string) => string | number;
  /**
   * A value names at most one row (an id, a unique name): a filter `field = "x"` pins a list to one row,
   * so a scope checks that row (EXISTS) instead of listing every row it allows first.
   */
  unique?: boolean;
  /**
   * A name we accepted before following upstream's symbols: still filterable, but not listed in
   * meta.filterableFields (which answers upstream's names only).
   */
  alias?: boolean;
}

/** The SQL a field reads: its computed expression or its column. */
export const fieldRef = (f: FieldSpec, d: DialectName): RawBuilder<unknown> => (typeof f.expr === 'function' ? f.expr(d) : f.expr) ?? sql.ref(f.column);

/**
 * A value inside a JSON text column, for upstream symbols that read into a stored document
 * (`primary.cert.allowed` on auth policies). SQLite's json_extract and PostgreSQL's #>> differ in how
 * they answer booleans, so both are brought to what our comparisons expect (1/0, numbers, text).
 */
export const jsonField = (column: string, path: string[], type: 'boolean' | 'number' | 'string'): FieldSpec => ({
  column,
  type,
  sortable: true,
  expr: (d) => jsonValueSql(d, column, path, type),
});

function jsonValueSql(d: DialectName, column: string, path: string[], type: 'boolean' | 'number' | 'string'): RawBuilder<unknown> {
  if (d === 'sqlite') return sql`json_extract(${sql.ref(column)}, ${'$.' + path.join('.')})`;
  const text = sql`(${sql.ref(column)}::jsonb #>> ${'{' + path.join(',') + '}'})`;
  if (type === 'boolean') return sql`(${text})::boolean::int`;
  if (type === 'number') return sql`(${text})::numeric`;
  return text;
}

/** Marks fields as aliases of upstream symbols (accepted, not listed). */
export const aliases = (fields: Record<string, FieldSpec>): Record<string, FieldSpec> =>
  Object.fromEntries(Object.entries(fields).map(([k, f]) => [k, { ...f, alias: true }]));

export type Operation = 'list' | 'get' | 'create' | 'update' | 'patch' | 'delete';
export type WriteMode = 'create' | 'update' | 'patch';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyQuery = SelectQueryBuilder<Database & Record<string, any>, any, any>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Row = Record<string, any>;

export interface ResourceDecl {
  /** Singular, for messages and the CLI: "identity". */
  name: string;
  /** URL segment and `entity` in references: "identities". */
  plural: string;
  table: keyof Database;
  apis: ('management' | 'client')[];
  ops: Operation[];
  /** Sentence for the OpenAPI tag and the CLI help. */
  description: string;
  schemas: { detail: TSchema; create?: TSchema; update?: TSchema; patch?: TSchema };
  filterable: Record<string, FieldSpec>;
  /**
   * Fields whose value this controller knows only at the time of the request, not in a column (an
   * identity's edge-router connection): added to `filterable` for each list.
   */
  filterableNow?: (ctx: Ctx) => Record<string, FieldSpec>;
  /** The filterable set field holding role attributes: enables roleFilter/roleSemantic on the list. */
  roleAttributes?: string;
  /** The policy side this resource's entities sit on: their membership is kept in step on every write. */
  policySide?: Side;
  /** Writes can change identities' service lists: they move the service-change marker (model/changes.ts). */
  touchesServices?: boolean;
  /**
   * Optional text fields where an empty string means "not given" (upstream's clients send "", e.g. ZAC's
   * `externalId` and `terminatorStrategy`): stored as if null was sent, so the field's default applies.
   */
  blankAsNull?: string[];
  /**
   * Fields upstream's clients send on writes that upstream's controller ignores (Go's JSON decoding drops
   * what its definition lacks): ZAC posts `"id": ""` on creates and an edge router's fields for a
   * transit router. Accepted in the body with this shape, documented as ignored, then dropped.
   */
  ignored?: Record<string, TSchema>;
  /**
   * Write bodies whose keys upstream matches case-insensitively (Go's JSON decoding), because its own CLI
   * sends them capitalised (server/case-fold.ts): the schema that names the keys at every depth.
   */
  caseInsensitiveKeys?: TSchema;
  /**
   * The writes that can answer 409 (a state the request alone cannot fix: a second authenticator of a
   * method, a schema its configs break, a delete of what others use). Only these declare 409, so the OpenAPI document does not
   * promise statuses upstream's document lacks (update covers PUT and PATCH).
   */
  conflictsOn?: ('create' | 'update' | 'delete')[];
  /** Rows to filter, count and sort: the table aliased `e` plus any joins the filterable fields need. */
  source?: (db: Db) => AnyQuery;
  /** Everything toDetail reads, for a set of ids (one query per page, never one per row). */
  detailQuery?: (db: Db) => AnyQuery;
  /** Adds to a page of rows what one join cannot give (child lists, names of referenced entities), in a few queries. */
  expand?: (db: Db, rows: Row[], ctx: Ctx) => Promise<void>;
  toDetail: (row: Row, ctx: Ctx) => Record<string, unknown>;
  /**
   * The id a create takes from its body instead of a new random one (a revocation is named by what it
   * revokes); a create whose id is taken fails unless toRow first removes the row it replaces.
   */
  idOf?: (input: Row) => string;
  /** Turn a validated request body into column values; throw ApiError for what the schema cannot say. */
  toRow?: (input: Row, mode: WriteMode, tx: Tx, ctx: Ctx, existing?: Row) => Promise<Row>;
  hooks?: {
    /** Slow work (password hashing) done before the transaction opens; returns the input to store. */
    prepare?: (input: Row, mode: WriteMode, ctx: Ctx) => Promise<Row>;
    afterCreate?: (tx: Tx, id: string, input: Row, ctx: Ctx) => Promise<Record<string, unknown> | void>;
    afterWrite?: (tx: Tx, id: string, ctx: Ctx, input: Row, mode: WriteMode) => Promise<void>;
    beforeDelete?: (tx: Tx, existing: Row, ctx: Ctx) => Promise<void>;
  };
  /**
   * Columns of the CLI's table view, as detail field paths; `listFlags`: flags of its list command that
   * each add a condition to the filter (`ztc identity list --online`).
   */
  cli: { columns: string[]; listFlags?: Record<string, { help: string; filter: string }> };
}

export const defineResource = (decl: ResourceDecl): ResourceDecl => decl;

export const selfLink = (plural: string, id: string) => ({ self: { href: `./${plural}/${id}` } });

/** The filterable fields every stored entity has (spread into a declaration's `filterable`). */
export const baseFilterable: Record<string, FieldSpec> = {
  id: { column: 'e.id', type: 'string', sortable: true, unique: true },
  // Upstream's system entities; only tables with an is_system column override this constant.
  isSystem: { column: 'e.id', expr: sql`0`, type: 'boolean', sortable: true },
  createdAt: { column: 'e.created_at', type: 'datetime', sortable: true },
  updatedAt: { column: 'e.updated_at', type: 'datetime', sortable: true },
  tags: { column: 'e.tags', type: 'tags' },
};

/**
 * The fields every stored entity's detail starts with. A detail adds its own with
 * `Object.assign(baseDetail(...), { ... })`, not `{ ...baseDetail(...), ... }`: V8 builds a literal that
 * starts with a spread property by property, 6 us a service where assign takes 0.5 (a client's list of
 * 200 services spent 1.2 ms in it, and its garbage). The links likewise: a resource's own links that
 * carry `self` are used as they are.
 */
export const baseDetail = (plural: string, r: Row, links?: Record<string, unknown>) => ({
  id: r.id as string,
  _links: links && 'self' in links ? links : Object.assign(selfLink(plural, r.id), links),
  createdAt: r.createdAt as string,
  updatedAt: r.updatedAt as string,
  tags: fromJson(r.tags, {}),
});

export const entityRef = (plural: string, id: string, name: string) => ({
  _links: selfLink(plural, id),
  entity: plural,
  id,
  name,
});
