// Hot-path queries compiled once per database and reused with new parameter values: building and
// compiling a Kysely query costs more than SQLite takes to run a simple indexed one.
import { CompiledQuery, type Compilable } from 'kysely';
import type { Db } from './db.js';

const marker = (i: number) => `\u0000ztc-param-${i}\u0000`;
const MARKER = /^\u0000ztc-param-(\d+)\u0000$/;

type Slot = number | { value: unknown };

export interface Precompiled<R> {
  (db: Db, params: unknown[]): CompiledQuery<R>;
}

/** `build` receives `p(i)`: a stand-in for parameter i, to use wherever a value goes. */
export function precompile<R>(build: (db: Db, p: (i: number) => string) => Compilable<R>): Precompiled<R> {
  const byDb = new WeakMap<object, { sql: string; slots: Slot[] }>();
  return (db, params) => {
    // A transaction is its own Kysely object but compiles to the same SQL: cache per dialect adapter.
    const key = db.getExecutor().adapter;
    let c = byDb.get(key);
    if (!c) {
      const compiled = build(db, marker).compile();
      c = {
        sql: compiled.sql,
        slots: compiled.parameters.map((v) => {
          const m = typeof v === 'string' ? MARKER.exec(v) : null;
          return m ? Number(m[1]) : { value: v };
        }),
      };
      byDb.set(key, c);
    }
    return CompiledQuery.raw(c.sql, c.slots.map((s) => (typeof s === 'number' ? params[s] : s.value))) as CompiledQuery<R>;
  };
}

export async function first<R>(db: Db, q: Precompiled<R>, params: unknown[]): Promise<R | undefined> {
  return (await db.executeQuery(q(db, params))).rows[0];
}
