// The import's thread (started by import-thread.ts): creates ahead (import-ahead.ts) on its own
// connection to the SQLite file, then answers what it made; or the error, which the API thread answers
// the client with after undoing the run. Messages: event*, then done or failed.
import os from 'node:os';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { openSqlite } from '../store/db.js';
import { setSqliteNativeBinding } from '../store/sqlite-driver.js';
import type { Ctx } from './context.js';
import { ApiError } from './errors.js';
import { Events } from './events/hub.js';
import { Names } from './export-import.js';
import { createAhead } from './import-ahead.js';
import type { FromImport, ImportWorkerData } from './import-thread.js';
import { loadOrCreatePki } from './pki/pki.js';
import { loadSealer } from './secrets.js';

const data = workerData as ImportWorkerData;
// ZTC_IMPORT_NICE: the import thread's nice value (0 to 19; default 10): when both want the CPU, the API thread gets it.
const NICE = Math.min(19, Math.max(0, Number(process.env.ZTC_IMPORT_NICE ?? 10) || 0));
/**
 * After each batch the thread pauses this long: the API thread's writes try for the lock every few ms
 * from a timer (sqlite-driver.ts), and the next batch would otherwise take it first (SQLite's locks
 * queue nobody). About a tenth of a 50 ms batch.
 */
const GAP_MS = 5;
const post = (m: FromImport) => parentPort!.postMessage(m);

let store: Awaited<ReturnType<typeof openSqlite>> | undefined;
let answer: FromImport;
try {
  try {
    // On Linux a thread has its own nice value, and setPriority(n) sets the caller's.
    os.setPriority(NICE);
  } catch {
    // Not permitted: the API thread's priority.
  }
  if (data.sqliteAddon) {
    const m = { exports: {} };
    process.dlopen(m as never, data.sqliteAddon);
    setSqliteNativeBinding(m.exports);
  }
  const { config } = data;
  store = await openSqlite(data.file, { check: false });
  const now = () => new Date(Date.now() + data.clockOffsetMs);
  const ctx: Ctx = {
    store,
    config,
    clock: { now, monotonic: () => performance.now() },
    pki: await loadOrCreatePki(config.dataDir, config.hostnames),
    sealer: loadSealer(path.join(config.dataDir, 'pki')),
    events: new Events(store, now),
    actor: data.actor,
  };
  ctx.events.subscribe((e) => post({ event: e }));
  const names = Object.setPrototypeOf(data.names, Names.prototype) as Names;
  try {
    answer = { done: await createAhead(ctx, data.runId, data.work, names, { between: () => new Promise((r) => setTimeout(r, GAP_MS)) }) };
  } finally {
    // The audit rows of events that are not entity changes (the batcher's, outside the transactions).
    await ctx.events.close();
  }
} catch (err) {
  answer = { failed: err instanceof ApiError ? { message: err.message, status: err.status, code: err.code, fieldCause: err.fieldCause, extra: err.extra } : { message: err instanceof Error ? err.message : String(err) } };
}
// Closed before answering: the API thread's undo or last transaction comes next, on its own connection.
await store?.close().catch(() => {});
post(answer);
