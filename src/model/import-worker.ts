// The import's thread (started by import-thread.ts): parses the body, plans, creates ahead and runs the
// last transaction (import-model.ts, the same code as on the API thread) on its own connection to the
// SQLite file, then answers the plan; or the error, after undoing what it made. Messages: run, event*,
// then done or failed.
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { openSqlite } from '../store/db.js';
import { niceFrom, prepareStoreThread } from '../store/store-thread.js';
import type { Ctx } from './context.js';
import { ApiError } from './errors.js';
import { Events } from './events/hub.js';
import { importModel } from './import-model.js';
import type { FromImport, ImportWorkerData } from './import-thread.js';
import { parseJsonBody } from './json-body.js';
import { loadOrCreatePki } from './pki/pki.js';
import { loadSealer } from './secrets.js';

const data = workerData as ImportWorkerData;
// ZTC_IMPORT_NICE: the import thread's nice value (0 to 19; default 10): when both want the CPU, the API thread gets it.
const NICE = niceFrom(process.env.ZTC_IMPORT_NICE);
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
  prepareStoreThread(NICE, data.sqliteAddon);
  const doc = parseJsonBody(Buffer.from(data.body.buffer, data.body.byteOffset, data.body.byteLength).toString('utf8'));
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
  try {
    // Nothing else runs on this thread: no turns within a batch, only the pause between batches.
    answer = { done: await importModel(ctx, doc, { ...data.options, pace: () => undefined, between: () => new Promise((r) => setTimeout(r, GAP_MS)), onRun: (run) => post({ run }) }) };
  } finally {
    // The audit rows of events that are not entity changes (the batcher's, outside the transactions).
    await ctx.events.close();
  }
} catch (err) {
  answer = { failed: err instanceof ApiError ? { message: err.message, status: err.status, code: err.code, fieldCause: err.fieldCause, extra: err.extra } : { message: err instanceof Error ? err.message : String(err) } };
}
await store?.close().catch(() => {});
post(answer);
