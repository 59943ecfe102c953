// Group commit for SQLite. Writes that arrive together (in one turn of the event loop, or while a
// transaction runs) are collected and run together
// in the next one, each inside its own savepoint: one write failing rolls back only itself, and every
// write's caller hears of it only after the commit that made it durable. The disk's flush of a commit
// runs off the request thread (store/wal-sync.ts) while the next group already runs.
import { sql } from 'kysely';
import type { Db, Tx } from './schema.js';
import { beginImmediate } from './sqlite-driver.js';
import type { WalSyncer } from './wal-sync.js';

interface Job {
  fn(tx: Tx): Promise<unknown>;
  resolve(v: unknown): void;
  reject(e: unknown): void;
}

/** At most this many writes or this long per group, so reads waiting for the connection are not held up. */
const MAX_WRITES = 64;
const MAX_MS = 20;
/**
 * Each group commits without waiting for the disk (synchronous NORMAL, for the group's commit only: any
 * other write on the connection keeps FULL); its callers are told once `wal` has flushed it.
 */
export function groupCommitter(db: Db, wal: WalSyncer): <T>(fn: (tx: Tx) => Promise<T>) => Promise<T> {
  const pending: Job[] = [];
  let running = false;
  let scheduled = false;

  /** A transaction on the one connection held for all of it, committed with synchronous NORMAL. */
  const transaction = (fn: (tx: Tx) => Promise<void>): Promise<void> =>
    db.connection().execute(async (c) => {
      await sql`pragma synchronous = normal`.execute(c);
      try {
        // Waiting for another connection's lock (the import's thread) from a timer, not inside SQLite.
        await beginImmediate((q) => sql.raw(q).execute(c));
        try {
          await fn(c as unknown as Tx);
          await sql`commit`.execute(c);
        } catch (err) {
          await sql`rollback`.execute(c).catch(() => {});
          throw err;
        }
      } finally {
        await sql`pragma synchronous = full`.execute(c);
      }
    });

  async function runGroup() {
    const done: { job: Job; ok: boolean; value: unknown }[] = [];
    let current: Job | undefined;
    const start = performance.now();
    try {
      await transaction(async (tx) => {
        // Writes that arrive while the group runs join it, within the bounds.
        while (pending.length && done.length < MAX_WRITES && (done.length === 0 || performance.now() - start < MAX_MS)) {
          const job = (current = pending.shift()!);
          await sql`savepoint w`.execute(tx);
          try {
            const value = await job.fn(tx);
            await sql`release w`.execute(tx);
            done.push({ job, ok: true, value });
          } catch (err) {
            await sql`rollback to w`.execute(tx);
            await sql`release w`.execute(tx);
            done.push({ job, ok: false, value: err });
          }
          current = undefined;
        }
      });
    } catch (err) {
      // The commit itself failed: none of the group's writes happened.
      for (const d of done) d.job.reject(err);
      current?.reject(err);
      // The transaction did not even begin (a closed store): the first write hears it, so the loop in
      // drain moves on instead of spinning on a queue that never shrinks.
      if (!done.length && !current) pending.shift()?.reject(err);
      return;
    }
    const answer = () => {
      for (const d of done) (d.ok ? d.job.resolve : d.job.reject)(d.value);
    };
    // Not awaited: the next group runs while the disk flushes this one. A failed flush leaves the
    // commit's durability unknown, so nobody is told it succeeded.
    wal.sync().then(answer, (err) => {
      for (const d of done) d.job.reject(err);
    });
  }

  async function drain() {
    scheduled = false;
    running = true;
    try {
      while (pending.length) await runGroup();
    } finally {
      running = false;
    }
  }

  return <T>(fn: (tx: Tx) => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      pending.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      // The group starts after this turn of the event loop: a transaction runs without yielding to I/O
      // (better-sqlite3 is synchronous), so the requests whose bytes arrived with this one reach their
      // writes only if it waits for them; setImmediate waits for exactly those, never for a timer.
      if (!running && !scheduled) {
        scheduled = true;
        setImmediate(() => void drain());
      }
    });
}
