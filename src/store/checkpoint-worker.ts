// The WAL's checkpoints, on a thread of their own with a connection of their own (store/checkpointer.ts).
// A PASSIVE checkpoint every CHECKPOINT_MS: copies the WAL's committed frames into the database (SQLite
// fsyncs the WAL before and the database after), without waiting for readers or writers. With nothing
// new in the WAL it only reads the WAL index (shared memory): an idle controller pays nothing.
// PASSIVE alone does not bound the WAL under steady writes: a writer starts the WAL over from its
// beginning only when every frame has been copied, and by the time a checkpoint beside them ends, they
// have appended more (measured: 91-113 MB after 20,000 writes). So once the WAL holds RESTART_PAGES
// frames, the PASSIVE copy is followed by a RESTART checkpoint: it takes the write lock (writers on the
// API thread wait for it from a timer, store/sqlite-driver.ts), copies the few frames written since, and
// waits for readers to leave the WAL, so the next write starts it over: the WAL stays near that size.
import { parentPort, workerData } from 'node:worker_threads';
import { loadSqlite } from './sqlite-driver.js';
import { prepareStoreThread } from './store-thread.js';

export interface CheckpointWorkerData {
  file: string;
  intervalMs: number;
  /** WAL frames (pages) from which a checkpoint also restarts the WAL. */
  restartPages: number;
  sqliteAddon?: string;
}

/** What the thread tells its owner: each checkpoint's frames (for tests and the metrics' curiosity), or why it stopped. */
export type FromCheckpoints = { checkpoint: { busy: number; log: number; checkpointed: number; ms: number } } | { failed: string } | { ready: true };

const RESTART_WAIT_MS = 100;
/** The interval while the WAL fills fast (a quarter of RESTART_PAGES or more at the last look). */
const BUSY_INTERVAL_MS = 25;
const data = workerData as CheckpointWorkerData;
const port = parentPort!;
try {
  // The API thread's priority (nice 0): checkpoints are the API's own writes' upkeep.
  prepareStoreThread(0, data.sqliteAddon);
  const Sqlite = loadSqlite();
  const conn = new Sqlite(data.file, { fileMustExist: true });
  conn.pragma('synchronous = FULL');
  // It never writes: a reader's lock held by another connection is skipped over, never waited for.
  conn.pragma('busy_timeout = 0');
  const passive = conn.prepare('pragma wal_checkpoint(PASSIVE)');
  const restart = conn.prepare('pragma wal_checkpoint(RESTART)');
  let report = false;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const tick = () => {
    let next = data.intervalMs;
    const start = performance.now();
    try {
      let r = passive.get() as { busy: number; log: number; checkpointed: number };
      // Writes are coming fast: look again soon, so the WAL does not grow far past RESTART_PAGES in one interval.
      if (r.log >= data.restartPages / 4) next = BUSY_INTERVAL_MS;
      if (r.log >= data.restartPages) {
        // Waits for the write lock and the readers at most RESTART_WAIT_MS (the busy handler), on this thread.
        conn.pragma(`busy_timeout = ${RESTART_WAIT_MS}`);
        try {
          r = restart.get() as typeof r;
        } finally {
          conn.pragma('busy_timeout = 0');
        }
      }
      if (report) port.postMessage({ checkpoint: { ...r, ms: performance.now() - start } } satisfies FromCheckpoints);
    } catch (err) {
      // Another connection checkpoints right now (an import's, with its own autocheckpoint): next time.
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' && (err as { code?: string }).code !== 'SQLITE_LOCKED') {
        port.postMessage({ failed: (err as Error).message } satisfies FromCheckpoints);
      }
    }
    if (!closed) timer = setTimeout(tick, next);
  };
  timer = setTimeout(tick, data.intervalMs);
  port.on('message', (m: 'close' | 'report') => {
    if (m === 'report') report = true;
    else {
      closed = true;
      clearTimeout(timer);
      conn.close();
      port.close();
    }
  });
  port.postMessage({ ready: true } satisfies FromCheckpoints);
} catch (err) {
  port.postMessage({ failed: (err as Error).message } satisfies FromCheckpoints);
}
