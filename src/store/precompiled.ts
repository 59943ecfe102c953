// Hot-path queries compiled once per database and reused with new parameter values: building and
// compiling a Kysely query costs more than SQLite takes to run a simple indexed one.
import { CompiledQuery, PostgresAdapter, type Compilable, type Expression, type RawBuilder, type SqlBool } from 'kysely';
import { fixedShapeDb, type Db } from './db.js';
import { dialects, type DialectHelpers } from './dialect.js';

const marker = (i: number) => `\u0000ztc-param-${i}\u0000`;
const listMarker = (i: number) => `\u0000ztc-list-${i}\u0000`;
const MARKER = /^\u0000ztc-(param|list)-(\d+)\u0000$/;

/** A parameter's place: a value, a list (as the dialect takes an array), or a constant of the query. */
type Slot = number | { list: number } | { value: unknown };

export interface Precompiled<R> {
  (db: Db, params: unknown[]): CompiledQuery<R>;
}

/** Stand-ins for a precompiled query's parameters. */
export interface Params {
  /** Parameter i, wherever a value goes. */
  (i: number): string;
  /**
   * `ref` is one of parameter i's values (an array): one statement whatever the array's length, so
   * PostgreSQL prepares it once and SQLite keeps one statement, instead of one per length of `in (...)`.
   */
  anyOf(ref: Expression<unknown> | RawBuilder<unknown>, i: number): RawBuilder<SqlBool>;
  /** `ref` is one of parameter i's values, tested against their hash (`DialectHelpers.inSet`). */
  inSet(ref: Expression<unknown> | RawBuilder<unknown>, i: number): RawBuilder<SqlBool>;
}

const dialectOf = (db: Db): DialectHelpers => (db.getExecutor().adapter instanceof PostgresAdapter ? dialects.postgres : dialects.sqlite);

function params(d: DialectHelpers): Params {
  const p = ((i: number) => marker(i)) as Params;
  p.anyOf = (ref, i) => d.anyOf(ref, listMarker(i));
  p.inSet = (ref, i) => d.inSet(ref, listMarker(i));
  return p;
}

/** `build` receives `p`: `p(i)` stands for parameter i, `p.anyOf(ref, i)` for a list parameter; and the dialect. */
export function precompile<R>(build: (db: Db, p: Params, d: DialectHelpers) => Compilable<R>): Precompiled<R> {
  const byDb = new WeakMap<object, { sql: string; slots: Slot[]; d: DialectHelpers }>();
  return (db, values) => {
    // A transaction is its own Kysely object but compiles to the same SQL: cache per dialect adapter.
    const key = db.getExecutor().adapter;
    let c = byDb.get(key);
    if (!c) {
      const d = dialectOf(db);
      const compiled = build(db, params(d), d).compile();
      c = {
        sql: compiled.sql,
        d,
        slots: compiled.parameters.map((v) => {
          const m = typeof v === 'string' ? MARKER.exec(v) : null;
          if (!m) return { value: v };
          return m[1] === 'list' ? { list: Number(m[2]) } : Number(m[2]);
        }),
      };
      byDb.set(key, c);
    }
    const d = c.d;
    const bound = c.slots.map((s) => (typeof s === 'number' ? values[s] : 'list' in s ? d.arrayParam(values[s.list] as unknown[]) : s.value));
    return CompiledQuery.raw(c.sql, bound) as CompiledQuery<R>;
  };
}

// Outside a transaction, on PostgreSQL's connections that keep the generic plan (store/db.ts).
export async function first<R>(db: Db, q: Precompiled<R>, params: unknown[]): Promise<R | undefined> {
  return (await fixedShapeDb(db).executeQuery(q(db, params))).rows[0];
}

export async function all<R>(db: Db, q: Precompiled<R>, params: unknown[]): Promise<R[]> {
  return (await fixedShapeDb(db).executeQuery(q(db, params))).rows;
}
