// A large SQLite import, whole, on a thread of its own (import-worker.ts) with its own connection to
// the store: the body's parsing, the plan, the creates ahead (import-ahead.ts) and the last
// transaction. On the API thread even yielding every 8 ms, a 100,000-identity import kept that thread
// busy for minutes; with only the creates ahead on a thread, what stayed on the API thread (parsing and
// checking 10 MB of JSON, the plan, copying the work list to the thread and what it made back, the last
// transaction) still held it for spans of 100 to 900 ms, and a client polling /version every 50 ms saw
// a p99 of 618-938 ms. Now the API thread hands over the body's bytes as they arrived (a copy of
// a Buffer, not a structured clone of 100,000 objects) and waits for the answer: the plan's first
// steps, or an error. The import's thread runs at a lower priority (nice), and the API thread's writes
// wait for its transactions' write lock from a timer (store/sqlite-driver.ts, beginImmediate), not inside the call.
import { Worker } from 'node:worker_threads';
import { sql } from 'kysely';
import type { Config } from '../config.js';
import { sqliteAddonFile, threadProgram } from '../store/store-thread.js';
import type { Ctx } from './context.js';
import { ApiError } from './errors.js';
import type { Actor, ZtcEvent } from './events/types.js';
import { undoImportRun } from './import-journal.js';
import type { ImportResult } from './import-model.js';

/**
 * Import bodies at least this large (bytes; about 1,000 identities) run on the import's thread; smaller
 * ones on the API thread, whose turns between batches cost less than a thread's start.
 */
export const THREAD_MIN_BYTES = Number(process.env.ZTC_IMPORT_THREAD_MIN_BYTES ?? 100 * 1024);

export interface ImportWorkerData {
  config: Config;
  file: string;
  /** The request's body, unparsed (JSON). */
  body: Uint8Array;
  options: { dryRun?: boolean; prune?: boolean };
  actor?: Actor;
  /** The API thread's clock minus the system's, so the entities' timestamps follow the controller's clock. */
  clockOffsetMs: number;
  sqliteAddon?: string;
}

export type FromImport =
  | { run: string }
  | { event: ZtcEvent }
  | { done: ImportResult }
  | { failed: { message: string; status?: number; code?: string; fieldCause?: unknown; extra?: unknown } };

/**
 * The import's program. Compiled, it is beside this module; bundled (dist/src/bundle/), in ../model;
 * run from the TypeScript sources (vitest), the compiled copy; in the single executable, the file its
 * loader unpacked (scripts/sea-loader.cjs), as the data plane's thread is found (fabric/thread.ts).
 */
const workerUrl = () =>
  threadProgram((globalThis as { __ztcImportWorker?: string }).__ztcImportWorker, ['./import-worker.js', '../model/import-worker.js', '../../dist/src/model/import-worker.js'], import.meta.url);

/** Whether an import body of this many bytes runs on the import's thread: a large one, into a SQLite file, where the thread's program is at hand. */
export function importsOnThread(ctx: Ctx, bytes: number): boolean {
  return bytes >= THREAD_MIN_BYTES && !!ctx.store.file && ctx.store.dialect.name === 'sqlite' && workerUrl() !== undefined;
}

/**
 * The whole import of `body` (JSON, unparsed) on the import's thread; its answer or its error (bad
 * input is an ApiError, 4xx, as on the API thread). Its events reach this thread's sinks (the events
 * file, the live stream); it writes their audit rows itself, as the data plane's thread does.
 */
export async function importInThread(ctx: Ctx, body: Uint8Array, options: ImportWorkerData['options']): Promise<ImportResult> {
  const data: ImportWorkerData = {
    config: ctx.config,
    file: ctx.store.file!,
    body,
    options,
    actor: ctx.actor,
    clockOffsetMs: ctx.clock.now().getTime() - Date.now(),
    sqliteAddon: sqliteAddonFile(),
  };
  // While the thread writes, checkpoints are its connection's: one that a login's commit ran here
  // (the WAL holds megabytes of the import's batches) stopped this thread for as long as it copied.
  await sql`pragma wal_autocheckpoint = 0`.execute(ctx.store.db);
  const worker = new Worker(workerUrl()!, { workerData: data });
  let runId: string | undefined;
  return new Promise<ImportResult>((resolve, reject) => {
    let settled = false;
    // The thread undoes its run when the import fails; if the thread itself dies (out of memory), here.
    const died = (err: Error) => {
      if (settled) return;
      settled = true;
      if (!runId) return reject(err);
      undoImportRun(ctx, runId).then(() => reject(err), reject);
    };
    worker.on('message', (m: FromImport) => {
      if ('run' in m) runId = m.run;
      else if ('event' in m) ctx.events.emit(m.event, true);
      else if ('done' in m) ((settled = true), resolve(m.done));
      else if ('failed' in m) {
        settled = true;
        const f = m.failed;
        reject(f.status && f.code ? new ApiError(f.status, f.code, f.message, f.fieldCause as never, f.extra as never) : new Error(f.message));
      }
    });
    worker.on('error', died);
    worker.on('exit', (code) => died(new Error(`the import's thread exited (${code}) before it finished`)));
  }).finally(() => {
    void worker.terminate();
    // Back to the connection's usual: 0 when the checkpoints' thread does them (store/checkpointer.ts).
    void sql`pragma wal_autocheckpoint = ${sql.raw(String(ctx.store.autocheckpointPages ?? 1000))}`.execute(ctx.store.db).catch(() => {});
  });
}
