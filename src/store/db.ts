import fs from 'node:fs';
import path from 'node:path';
import { CamelCasePlugin, Kysely, Migrator, SqliteDialect, type Transaction } from 'kysely';
import { dialects, type DialectHelpers } from './dialect.js';
import { migrations } from './migrations/index.js';
import type { Database } from './schema.js';
import { loadSqlite } from './sqlite-driver.js';

export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;

export interface Store {
  db: Db;
  dialect: DialectHelpers;
  /** The SQLite file, when the store is SQLite. */
  file?: string;
  close(): Promise<void>;
}

export async function openSqlite(file: string): Promise<Store> {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const Sqlite = loadSqlite();
  const conn = new Sqlite(file);
  fs.chmodSync(file, 0o600);
  conn.pragma('journal_mode = WAL');
  conn.pragma('foreign_keys = ON');
  // WAL + NORMAL is durable across process crashes (the case we test); FULL also covers power loss.
  conn.pragma('synchronous = FULL');
  conn.pragma('busy_timeout = 5000');
  // Makes LIKE case-sensitive, as it is on PostgreSQL; case-insensitive matching uses lower().
  conn.pragma('case_sensitive_like = ON');
  cachePreparedStatements(conn);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: conn }), plugins: [new CamelCasePlugin()] });
  const store: Store = { db, dialect: dialects.sqlite, file, close: () => db.destroy() };
  await migrate(store);
  return store;
}

/**
 * Kysely's SQLite driver prepares every query anew, which costs more than running it. Kysely always
 * binds values as parameters, so the SQL texts repeat and a bounded cache by text is safe.
 */
function cachePreparedStatements(conn: { prepare: (sql: string) => unknown }) {
  const prepare = conn.prepare.bind(conn);
  const cache = new Map<string, unknown>();
  conn.prepare = (sql: string) => {
    let stmt = cache.get(sql);
    if (!stmt) {
      if (cache.size >= 2000) cache.clear();
      stmt = prepare(sql);
      cache.set(sql, stmt);
    }
    return stmt;
  };
}

export async function migrate(store: Store): Promise<void> {
  const migrator = new Migrator({
    db: store.db,
    provider: { getMigrations: async () => migrations(store.dialect) },
  });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${String((error as Error)?.message ?? error)}`);
  }
}
