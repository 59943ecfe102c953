// better-sqlite3, loaded so that the single executable can hand it the embedded native addon.
import Database from 'better-sqlite3';
import { CompiledQuery, SqliteAdapter, SqliteDialect, SqliteDriver, type DatabaseConnection, type DialectAdapter, type Driver, type SqliteDialectConfig } from 'kysely';

type Options = Database.Options;

let nativeBinding: unknown;

/** Set by the single-executable launcher: the addon object it loaded with process.dlopen. */
export function setSqliteNativeBinding(binding: unknown) {
  nativeBinding = binding;
}

export function loadSqlite(): new (file: string, opts?: Options) => Database.Database {
  if (!nativeBinding) return Database;
  return function open(file: string, opts?: Options) {
    // better-sqlite3 accepts the loaded addon object itself (a path would need a real require).
    return new Database(file, { ...opts, nativeBinding: nativeBinding as string });
  } as unknown as typeof Database;
}

/**
 * Kysely's SQLite dialect, with write transactions that take the write lock when they begin (BEGIN
 * IMMEDIATE). The data plane's thread has its own connection to the same file: a deferred transaction
 * that read before writing fails at once with SQLITE_BUSY_SNAPSHOT when that connection committed in
 * between (busy_timeout does not cover it; seen as 500s under the control channel's bench). Every
 * transaction here writes, so waiting for the lock up front costs nothing.
 */
export class ImmediateSqliteDialect extends SqliteDialect {
  constructor(private readonly settings: SqliteDialectConfig) {
    super(settings);
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.settings);
  }

  override createAdapter(): DialectAdapter {
    return new TransactionalDdlAdapter();
  }
}

/**
 * SQLite runs DDL inside transactions, but Kysely's adapter says it does not, so its migrator ran each
 * migration bare: a process killed mid-migration (a first start or a local command timed out on a
 * loaded machine) left half a migration behind ("table cas already exists" at every later start),
 * and two processes opening a new data dir at once could both migrate it. In one transaction taken
 * with the write lock, a migration is all or nothing, and the second process waits, then sees it done.
 */
class TransactionalDdlAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

class ImmediateSqliteDriver extends SqliteDriver {
  private waiting?: DatabaseConnection;

  constructor(private readonly settings: SqliteDialectConfig) {
    super(settings);
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await super.acquireConnection();
    const db = typeof this.settings.database === 'function' ? undefined : (this.settings.database as { inTransaction?: boolean });
    return (this.waiting ??= db ? lockWaiting(connection, db) : connection);
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await beginImmediate((q) => connection.executeQuery(CompiledQuery.raw(q)));
  }
}

/** How long a write waits for another connection's write lock before it fails with SQLITE_BUSY (as busy_timeout did). */
const LOCK_WAIT_MS = 5000;

/** Statements that need the write lock: outside a transaction, each takes it for itself. */
const WRITES = new Set(['InsertQueryNode', 'UpdateQueryNode', 'DeleteQueryNode']);

/**
 * The connection, with its writes outside transactions waiting for the lock as BEGIN IMMEDIATE does
 * (untilNotBusy). A login writes its API session so, in autocommit: while a large import's thread
 * held the lock for a batch, every login stopped the API thread inside better-sqlite3 for up to that
 * batch (and under load once for the whole 5 s, failing with SQLITE_BUSY), and every other client
 * waited with it. Inside a transaction the lock is held already; reads never wait for it (WAL).
 */
function lockWaiting(connection: DatabaseConnection, db: { inTransaction?: boolean }): DatabaseConnection {
  const exec = (q: string) => connection.executeQuery(CompiledQuery.raw(q));
  return {
    executeQuery: (query) => (db.inTransaction || !WRITES.has(query.query.kind) ? connection.executeQuery(query) : untilNotBusy(exec, () => connection.executeQuery(query))),
    streamQuery: (query, chunkSize) => connection.streamQuery(query, chunkSize),
  };
}

/**
 * BEGIN IMMEDIATE without blocking the thread. With busy_timeout, better-sqlite3 waits for another
 * connection's write lock inside the call, so the whole event loop stood still meanwhile: a login on
 * the API thread while the import's thread (model/import-thread.ts) or the data plane's held the lock
 * for a batch kept even /version waiting. Here the attempt does not wait (busy_timeout 0 for it), and a
 * busy database is tried again a millisecond or two later, from a timer, while other requests run.
 */
export async function beginImmediate(exec: (q: string) => Promise<unknown>): Promise<void> {
  await untilNotBusy(exec, () => exec('begin immediate'));
}

/**
 * `attempt` (a statement that takes the write lock) with busy_timeout 0, tried again from a timer
 * while the database is busy, for up to LOCK_WAIT_MS. The caller holds the connection throughout
 * (Kysely's connection mutex), so no other statement runs with busy_timeout 0 meanwhile.
 */
async function untilNotBusy<T>(exec: (q: string) => Promise<unknown>, attempt: () => Promise<T>): Promise<T> {
  const deadline = performance.now() + LOCK_WAIT_MS;
  await exec('pragma busy_timeout = 0');
  try {
    for (let wait = 1; ; wait = Math.min(wait + 1, 4)) {
      try {
        return await attempt();
      } catch (err) {
        if ((err as { code?: string }).code !== 'SQLITE_BUSY' || performance.now() >= deadline) throw err;
      }
      await new Promise((r) => setTimeout(r, wait));
    }
  } finally {
    await exec(`pragma busy_timeout = ${LOCK_WAIT_MS}`);
  }
}
