// SQLite's WAL checkpoints off the thread that serves requests. With the default wal_autocheckpoint
// (1,000 pages) the commit that crossed it copied the WAL into the database and fsynced it inside
// better-sqlite3's synchronous commit: the event loop stood still 2.5-4.7 ms for it about every 100
// creates while loading the Large model. The API connection now runs with wal_autocheckpoint = 0 and
// a thread of its own (store/checkpoint-worker.ts), on its own connection, checkpoints (PASSIVE) every
// CHECKPOINT_MS, and restarts the WAL once it holds AUTOCHECKPOINT_PAGES (store/checkpoint-worker.ts):
// the WAL stays near that size plus what is written in CHECKPOINT_MS. Durability is unchanged: a
// commit's frames are durable in the WAL (store/wal-sync.ts) before anyone is answered, and a
// checkpoint syncs the WAL before it copies and the database after.
// Where the thread cannot be had (its program is missing, ZTC_CHECKPOINT_THREAD=0, or it failed), the
// API connection keeps SQLite's own autocheckpoint.
import { Worker } from 'node:worker_threads';
import type { CheckpointWorkerData, FromCheckpoints } from './checkpoint-worker.js';
import { sqliteAddonFile, threadProgram } from './store-thread.js';

/** SQLite's default, kept by a connection whose checkpoints are its own. */
export const AUTOCHECKPOINT_PAGES = 1000;
export const CHECKPOINT_MS = Number(process.env.ZTC_CHECKPOINT_MS ?? 200);

export interface Checkpointer {
  /** For tests: called with each checkpoint's frames (busy, log, checkpointed) and its duration. */
  observe(f: (c: { busy: number; log: number; checkpointed: number; ms: number }) => void): void;
  close(): Promise<void>;
}

const workerUrl = () =>
  threadProgram((globalThis as { __ztcCheckpointWorker?: string }).__ztcCheckpointWorker, ['./checkpoint-worker.js', '../store/checkpoint-worker.js', '../../dist/src/store/checkpoint-worker.js'], import.meta.url);

/**
 * Starts the checkpoints' thread; resolves once it has its connection, or undefined when it cannot
 * (then `fallback` is not called: the caller keeps autocheckpoint). Should the thread fail later,
 * `fallback` is called, for the API connection to take checkpoints back.
 */
export async function startCheckpointer(file: string, fallback: () => void): Promise<Checkpointer | undefined> {
  const url = workerUrl();
  if (!url || process.env.ZTC_CHECKPOINT_THREAD === '0') return undefined;
  const data: CheckpointWorkerData = { file, intervalMs: CHECKPOINT_MS, restartPages: AUTOCHECKPOINT_PAGES, sqliteAddon: sqliteAddonFile() };
  let worker: Worker;
  try {
    worker = new Worker(url, { workerData: data });
  } catch {
    return undefined;
  }
  let observer: ((c: { busy: number; log: number; checkpointed: number; ms: number }) => void) | undefined;
  let closing = false;
  let failed = false;
  const fail = () => {
    if (failed || closing) return;
    failed = true;
    fallback();
    void worker.terminate();
  };
  const ready = await new Promise<boolean>((resolve) => {
    worker.on('message', (m: FromCheckpoints) => {
      if ('ready' in m) resolve(true);
      else if ('checkpoint' in m) observer?.(m.checkpoint);
      else if ('failed' in m) {
        resolve(false);
        fail();
      }
    });
    worker.on('error', () => (resolve(false), fail()));
    worker.on('exit', () => (resolve(false), fail()));
  });
  if (!ready) {
    failed = true;
    return undefined;
  }
  // An idle controller's process may exit though the thread ticks.
  worker.unref();
  return {
    observe(f) {
      observer = f;
      worker.postMessage('report');
    },
    async close() {
      if (closing || failed) return;
      closing = true;
      const exited = new Promise((r) => worker.once('exit', r));
      // Referenced again while it closes: else a process with nothing else to do exits before it (code 13, a top-level await unsettled).
      worker.ref();
      worker.postMessage('close');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 2000))]);
      await worker.terminate();
    },
  };
}
