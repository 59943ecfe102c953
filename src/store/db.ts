import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { CamelCasePlugin, Kysely, Migrator, PostgresDialect, sql, type LogEvent } from 'kysely';
import { dialects, type DialectHelpers } from './dialect.js';
import { migrations } from './migrations/index.js';
import type { Database, Db, Tx } from './schema.js';
import { groupCommitter } from './group-commit.js';
import { walSyncer } from './wal-sync.js';
import { registerVersion } from './count-cache.js';
import { describedOnce, prepareRepeated, statementNames, type Pg } from './pg-prepared.js';
import { AUTOCHECKPOINT_PAGES, startCheckpointer, type Checkpointer } from './checkpointer.js';
import { beginImmediate, ImmediateSqliteDialect, loadSqlite } from './sqlite-driver.js';
import { integrityProblems, quickCheck } from './sqlite-health.js';

export type { Db, Tx } from './schema.js';

/** Whoever wants query durations subscribes here; with nobody listening the cost is one call per query. */
export class QueryTimes {
  observer?: (ms: number, failed: boolean) => void;
  readonly log = (e: LogEvent) => this.observer?.(e.queryDurationMillis, e.level === 'error');
}

export interface Store {
  db: Db;
  dialect: DialectHelpers;
  /** The SQLite file, when the store is SQLite. */
  file?: string;
  /**
   * Run `fn` in a write transaction. On SQLite concurrent writes share transactions (group-commit.ts);
   * on PostgreSQL each has its own, the server groups their commits.
   */
  write<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * SQLite only: a write transaction of its own whose commit does not wait for the disk (synchronous
   * NORMAL: it survives a crash of the process, not a power loss). For writes whose durability a later
   * write provides: a batch of a journaled import (model/import-journal.ts), made final by its last
   * transaction, which commits with the usual fsync and so makes every earlier frame of the WAL durable.
   */
  relaxedWrite?<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /** Why the store may behave differently from SQLite (shown at start), if anything. */
  warnings: string[];
  /** Told of every query's duration (the metrics' store latency); Kysely measures it anyway when a log is set. */
  queryTimes: QueryTimes;
  /**
   * A consistent copy of the live database at `dest` (SQLite's online backup API; pg_dump on
   * PostgreSQL, when installed), taken while the controller keeps serving.
   */
  snapshot(dest: string, progress?: (fraction: number) => void): Promise<void>;
  /**
   * SQLite only: the API connection's wal_autocheckpoint when nothing else is going on: 0 while the
   * checkpoints' thread (store/checkpointer.ts) checkpoints, else SQLite's default.
   */
  autocheckpointPages?: number;
  /** SQLite only: the checkpoints' thread, when it runs. */
  checkpoints?: Checkpointer;
  /** SQLite's own integrity_check of the file (SQLite only; PostgreSQL checks its pages itself). */
  integrityCheck?(): string[];
  close(): Promise<void>;
}

/**
 * PostgreSQL when `url` is given, else the data dir's SQLite file, checkpointed by a thread of its own
 * unless `checkpointThread` is false (a CLI command's few writes: starting a thread costs more).
 */
export function openStore(o: { url?: string; file: string; poolSize?: number; checkpointThread?: boolean }): Promise<Store> {
  return o.url ? openPostgres(o.url, o.poolSize) : openSqlite(o.file, { checkpointThread: o.checkpointThread ?? true });
}

/** The connections that run a store's fixed-shape statements (store/precompiled.ts), where it has its own. */
const fixedShape = new WeakMap<Db, Db>();
export const fixedShapeDb = (db: Db): Db => fixedShape.get(db) ?? db;

export async function openPostgres(url: string, poolSize = 10): Promise<Store> {
  // Loaded only here: a controller or CLI command on SQLite never pays for the driver.
  const { default: pg } = await import('pg');
  // int8 (count(*)) as a JS number: counts here stay far below 2^53.
  pg.types.setTypeParser(20, (v) => Number(v));
  const queryTimes = new QueryTimes();
  const connect = (generic: boolean) => {
    const pool = new pg.Pool({ connectionString: url, max: poolSize });
    // A pool error (server restart) must not crash the process: the next query reconnects.
    pool.on('error', () => {});
    // Queued before anything the pool hands the connection out for (a client runs its queries in order).
    if (generic) pool.on('connect', (client) => void client.query('set plan_cache_mode = force_generic_plan').catch(() => {}));
    // Repeated SQL texts as named prepared statements (store/pg-prepared.ts); ZTC_PG_PREPARE=0 turns it off.
    if (process.env.ZTC_PG_PREPARE !== '0') {
      const names = statementNames();
      const make = describedOnce(pg as unknown as Pg);
      pool.on('connect', (client) => prepareRepeated(client as never, names, make));
    }
    return new Kysely<Database>({ dialect: new PostgresDialect({ pool }), plugins: [new CamelCasePlugin()], log: queryTimes.log });
  };
  const db = connect(false);
  // Statements we wrote with a fixed shape (store/precompiled.ts: the session lookup, a caller's service
  // reads) run on connections that always use the generic plan. Left to choose, PostgreSQL planned the
  // client's service reads anew on every call in some runs and not in others (0.4 of their 0.5 ms): it
  // keeps a generic plan only while that looks no dearer than the custom ones, and the generic plan's
  // cost depends on the statistics ANALYZE sampled. The main connections keep the choice, which lists
  // need: a filter's values (a LIKE pattern) decide their best plan. Transactions stay on the main ones.
  const generic = connect(true);
  fixedShape.set(db, generic);
  const store: Store = {
    db,
    dialect: dialects.postgres,
    write: (fn) => db.transaction().execute(fn),
    warnings: [],
    queryTimes,
    snapshot: (dest) => pgDump(url, dest),
    close: async () => {
      await generic.destroy();
      await db.destroy();
    },
  };
  try {
    await sql`select 1`.execute(db);
  } catch (err) {
    await store.close();
    throw new Error(`cannot connect to PostgreSQL at ${redactUrl(url)}: ${(err as Error).message}`);
  }
  const { rows } = await sql<{ collate: string }>`select datcollate as collate from pg_database where datname = current_database()`.execute(db);
  const collate = rows[0]?.collate ?? '';
  if (!/^(C|POSIX)(\.|$)/.test(collate)) {
    store.warnings.push(`the database collation is ${collate}: text sorts and compares by that locale, not byte-wise as on SQLite (create the database with LC_COLLATE 'C' for identical results)`);
  }
  // Migrations run on a connection of their own whose statements stay unnamed: a read a migration repeats
  // would otherwise leave a named statement on a pooled connection (pg-prepared.ts) that the DDL of a later
  // migration changes under it, and the first request to reuse it on that connection failed ("cached plan
  // must not change result type": `select *` of config types after 0043 added a column).
  const migrating = new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 1 }) }), plugins: [new CamelCasePlugin()] });
  // A failed migration leaves no connection behind (the caller gets the error, not a store to close).
  await migrate({ ...store, db: migrating })
    .catch(async (err) => {
      await store.close();
      throw err;
    })
    .finally(() => migrating.destroy());
  return store;
}

export class SnapshotUnavailable extends Error {}

/** pg_dump's custom format, from its own consistent transaction. */
function pgDump(url: string, dest: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('pg_dump', ['--format=custom', '--file', dest, '--dbname', url], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', (e: NodeJS.ErrnoException) =>
      reject(e.code === 'ENOENT' ? new SnapshotUnavailable(`pg_dump is not installed on this host: install the PostgreSQL client tools, or run \`pg_dump --format=custom --file ztc.dump ${redactUrl(url)}\` where it is`) : e),
    );
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`pg_dump failed (exit ${code}): ${err.replace(/postgres(ql)?:\/\/\S+/g, (u) => redactUrl(u)).trim()}`))));
  });
}

export const redactUrl = (url: string) => url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');

/**
 * `check: false`: a second connection of the process that opened the file, which checked it already (its import's thread).
 * `checkpointThread`: the WAL's checkpoints on a thread of their own rather than in this connection's commits (the API's connection).
 */
export async function openSqlite(file: string, o: { check?: boolean; checkpointThread?: boolean; migrate?: boolean } = {}): Promise<Store> {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  // Before anything writes to it (WAL mode, migrations): a damaged file is refused, untouched.
  if (o.check !== false) quickCheck(file);
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
  const queryTimes = new QueryTimes();
  const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database: conn }), plugins: [new CamelCasePlugin()], log: queryTimes.log });
  const snapshot = async (dest: string, progress?: (fraction: number) => void) => {
    await conn.backup(dest, {
      progress: ({ totalPages, remainingPages }) => {
        progress?.(totalPages ? (totalPages - remainingPages) / totalPages : 1);
        return 200;
      },
    });
  };
  // On the one connection held for the whole of it, so no other commit runs while synchronous is NORMAL.
  const relaxedWrite = <T>(fn: (tx: Tx) => Promise<T>) =>
    db.connection().execute(async (c) => {
      await sql`pragma synchronous = normal`.execute(c);
      try {
        await beginImmediate((q) => sql.raw(q).execute(c));
        try {
          const out = await fn(c as unknown as Tx);
          await sql`commit`.execute(c);
          return out;
        } catch (err) {
          await sql`rollback`.execute(c).catch(() => {});
          throw err;
        }
      } finally {
        await sql`pragma synchronous = full`.execute(c);
      }
    });
  let closeCheckpoints = async () => {};
  const store: Store = {
    db,
    dialect: dialects.sqlite,
    write: groupCommitter(db, walSyncer(file)),
    relaxedWrite,
    file,
    warnings: [],
    queryTimes,
    snapshot,
    autocheckpointPages: AUTOCHECKPOINT_PAGES,
    close: async () => {
      await closeCheckpoints();
      await db.destroy();
    },
    integrityCheck: () => integrityProblems(conn),
  };
  // `migrate: false`: a reader that takes the store only as it is (cli/local-read.ts checks upToDate).
  if (o.migrate !== false) await migrate(store);
  // What a remembered list count depends on (store/count-cache.ts): other connections' commits and this one's changes.
  const dataVersion = conn.prepare('pragma data_version').pluck();
  const totalChanges = conn.prepare('select total_changes()').pluck();
  registerVersion(db, () => (conn.inTransaction ? undefined : `${dataVersion.get()}:${totalChanges.get()}`));
  if (o.checkpointThread) {
    const checkpoints = await startCheckpointer(file, () => {
      // The thread failed: this connection checkpoints in its commits again.
      store.autocheckpointPages = AUTOCHECKPOINT_PAGES;
      void sql`pragma wal_autocheckpoint = ${sql.raw(String(AUTOCHECKPOINT_PAGES))}`.execute(db).catch(() => {});
    });
    if (checkpoints) {
      await sql`pragma wal_autocheckpoint = 0`.execute(db);
      store.autocheckpointPages = 0;
      closeCheckpoints = () => checkpoints.close();
      store.checkpoints = checkpoints;
    }
  }
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
    const why = String((error as Error)?.message ?? error);
    // Before any migration ran (results empty): Kysely creating its own bookkeeping tables failed.
    const step = failed ? `migration ${failed.migrationName}` : 'preparing the migrations (the kysely_migration tables)';
    // PostgreSQL 15 no longer lets every user create tables in schema public.
    const hint = /permission denied/i.test(why) && store.dialect.name === 'postgres'
      ? ': the database user must be allowed to create tables: make it the database\'s owner (createdb -O USER, or ALTER DATABASE NAME OWNER TO USER), or GRANT CREATE ON SCHEMA public TO USER'
      : '';
    throw new MigrationFailed(`the database could not be brought up to date (${step}): ${why}${hint}`);
  }
}

/**
 * Whether every migration this program knows has run on the store, and no other: what a reader that does
 * not migrate needs (one that finds otherwise leaves the store to the open that migrates, or refuses).
 */
export async function upToDate(store: Store): Promise<boolean> {
  const known = Object.keys(migrations(store.dialect));
  try {
    const { rows } = await sql<{ name: string }>`select name from kysely_migration`.execute(store.db);
    const done = new Set(rows.map((r) => r.name));
    return rows.length === known.length && known.every((n) => done.has(n));
  } catch {
    return false;
  }
}

/** A schema migration that failed: the message names the step, the cause and, where known, the fix. */
export class MigrationFailed extends Error {}
