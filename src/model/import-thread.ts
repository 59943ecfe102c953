// A large SQLite import's creates-ahead (import-ahead.ts) on a thread of its own (import-worker.ts),
// with its own connection to the store. On the API thread they shared its event loop: even yielding
// every 8 ms, a 100,000-identity import kept that thread busy for minutes, and on a loaded machine a
// busy thread waits for a core where an idle one is woken at once (another client's /version p99 was
// 130 ms beside logins). Here the API thread only waits for messages; the import's thread runs at a
// lower priority (nice), and the API thread's writes wait for its batches' write lock from a timer
// (store/sqlite-driver.ts, beginImmediate), not inside the call.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { sql } from 'kysely';
import type { Config } from '../config.js';
import type { Ctx } from './context.js';
import { ApiError } from './errors.js';
import type { Actor, ZtcEvent } from './events/types.js';
import { nameKind, type Names } from './export-import.js';
import { kindOf, type Ahead, type AheadWork } from './import-ahead.js';

/** Imports with fewer creates ahead than this run them on the API thread: a thread's start costs more than they take. */
export const THREAD_MIN_CREATES = Number(process.env.ZTC_IMPORT_THREAD_MIN ?? 1000);

export interface ImportWorkerData {
  config: Config;
  file: string;
  runId: string;
  work: AheadWork[];
  names: Names;
  actor?: Actor;
  /** The API thread's clock minus the system's, so the entities' timestamps follow the controller's clock. */
  clockOffsetMs: number;
  sqliteAddon?: string;
}

export type FromImport =
  | { event: ZtcEvent }
  | { done: Ahead }
  | { failed: { message: string; status?: number; code?: string; fieldCause?: unknown; extra?: unknown } };

function workerUrl(): URL | undefined {
  // Compiled, it is beside this module; bundled (dist/src/bundle/), in ../model; run from the TypeScript
  // sources (vitest), the compiled copy, as the data plane's thread is found (fabric/thread.ts). The
  // single executable carries no copy: there the API thread does the work (createAheadInThread answers undefined).
  for (const candidate of ['./import-worker.js', '../model/import-worker.js', '../../dist/src/model/import-worker.js']) {
    const url = new URL(candidate, import.meta.url);
    if (fs.existsSync(fileURLToPath(url))) return url;
  }
  return undefined;
}

/**
 * Create ahead on the import's thread; undefined when the import is small, the store is not a SQLite
 * file, or the thread cannot be had (the caller then does it on this thread). Its events reach this
 * thread's sinks (the events file, the live stream); it writes their audit rows itself, as the data plane's thread does.
 */
export async function createAheadInThread(ctx: Ctx, runId: string, work: AheadWork[], names: Names): Promise<Ahead | undefined> {
  const file = ctx.store.file;
  if (!file || ctx.store.dialect.name !== 'sqlite') return undefined;
  if (work.filter((w) => w.action === 'create').length < THREAD_MIN_CREATES) return undefined;
  const url = workerUrl();
  if (!url) return undefined;
  const data: ImportWorkerData = {
    config: ctx.config,
    file,
    runId,
    work,
    names,
    actor: ctx.actor,
    clockOffsetMs: ctx.clock.now().getTime() - Date.now(),
    sqliteAddon: (globalThis as { __ztcSqliteAddon?: string }).__ztcSqliteAddon,
  };
  // While the thread writes, checkpoints are its connection's: one that a login's commit ran here
  // (the WAL holds megabytes of the import's batches) stopped this thread for as long as it copied.
  await sql`pragma wal_autocheckpoint = 0`.execute(ctx.store.db);
  const worker = new Worker(url, { workerData: data });
  const ahead = await new Promise<Ahead>((resolve, reject) => {
    let settled = false;
    worker.on('message', (m: FromImport) => {
      if ('event' in m) ctx.events.emit(m.event, true);
      else if ('done' in m) ((settled = true), resolve(m.done));
      else if ('failed' in m) {
        settled = true;
        const f = m.failed;
        reject(f.status && f.code ? new ApiError(f.status, f.code, f.message, f.fieldCause as never, f.extra as never) : new Error(f.message));
      }
    });
    worker.on('error', (e) => ((settled = true), reject(e)));
    worker.on('exit', (code) => settled || reject(new Error(`the import's thread exited (${code}) before it finished`)));
  }).finally(() => {
    void worker.terminate();
    // Back to the connection's usual: 0 when the checkpoints' thread does them (store/checkpointer.ts).
    void sql`pragma wal_autocheckpoint = ${sql.raw(String(ctx.store.autocheckpointPages ?? 1000))}`.execute(ctx.store.db).catch(() => {});
  });
  // What the thread created, by name, for the last transaction's references.
  for (const [key, name, id] of ahead.created) names.set(nameKind(kindOf(key)), id, name);
  return ahead;
}
