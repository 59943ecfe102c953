// The disk flush of SQLite's commits, off the thread that serves requests. With synchronous FULL each
// commit's fdatasync of the WAL (3-10 ms here, 190 ms at p99 on this shared disk) ran inside better-sqlite3's
// synchronous commit, so the event loop stood still for it: no request was parsed, no other write
// gathered, while the disk worked (40% of the server's time loading the Large model). Group commits now
// commit with synchronous NORMAL (the frames reach the OS, which a process crash does not lose) and
// their callers wait for this flush of the WAL file on libuv's thread pool, which makes the frames
// durable as FULL's would have: Linux's fdatasync flushes the file (its inode), whichever descriptor asks.
import fs from 'node:fs';

export interface WalSyncer {
  /** Resolves once everything written to the WAL before this call is on the disk. */
  sync(): Promise<void>;
}

/**
 * At most one flush at a time: the callers that arrive while one runs share the next, so a slow disk
 * gets fewer, larger flushes instead of a queue of them.
 */
export function walSyncer(dbFile: string): WalSyncer {
  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  const datasync = async (file: string) => {
    // Opened each time: cheap beside the flush, and never a descriptor of a file SQLite replaced.
    const fh = await fs.promises.open(file, 'r');
    try {
      await fh.datasync();
    } finally {
      await fh.close();
    }
  };
  const flush = async () => {
    try {
      await datasync(`${dbFile}-wal`);
    } catch (err) {
      // The last connection closed meanwhile: SQLite checkpointed the WAL into the database and removed
      // it. The database file then holds the frames (already flushed by the checkpoint; once more is cheap).
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      await datasync(dbFile);
    }
  };
  const start = (): Promise<void> => {
    const p = flush().finally(() => {
      if (running === p) running = undefined;
    });
    running = p;
    return p;
  };
  return {
    sync() {
      if (!running) return start();
      // A flush already running may have begun before this caller's frames were written: wait for it,
      // then one more, shared with everyone else who arrives meanwhile.
      next ??= running.catch(() => {}).then(() => {
        next = undefined;
        return start();
      });
      return next;
    },
  };
}
