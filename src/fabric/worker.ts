// The edge router's thread: its own event loop (and its own connection to the store), so relaying at
// full speed never delays an API answer on the main thread. Started by fabric/thread.ts; speaks to it
// in a few messages: ready (or failed), progress and log lines, close -> closed.
import os from 'node:os';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import type { Config } from '../config.js';
import { systemClock } from '../model/clock.js';
import type { Ctx } from '../model/context.js';
import { loadOrCreatePki } from '../model/pki/pki.js';
import { loadSealer } from '../model/secrets.js';
import { openPostgres, openSqlite } from '../store/db.js';
import { setSqliteNativeBinding } from '../store/sqlite-driver.js';
import { startEdgeRouter } from './index.js';
import type { FromRouter, RouterWorkerData } from './thread.js';

const data = workerData as RouterWorkerData;
// ZTC_RELAY_NICE: the relay thread's nice value (0 to 19; default 10).
const RELAY_NICE = Math.min(19, Math.max(0, Number(process.env.ZTC_RELAY_NICE ?? 10) || 0));
const post = (m: FromRouter) => parentPort!.postMessage(m);
const level = (l: 'info' | 'warn' | 'debug') => (o: object, msg: string) => post({ log: { level: l, o, msg } });

try {
  // On Linux a thread has its own nice value and setpriority(0) sets the caller's: the relay yields the
  // CPU to the API thread when both want it (on two cores the SDKs' own processes compete too).
  try {
    os.setPriority(RELAY_NICE);
  } catch {
    // Not permitted or not supported: the same thread priority as the APIs.
  }
  if (data.sqliteAddon) {
    // The single executable unpacked the addon for the main thread; this thread loads it too.
    const m = { exports: {} };
    process.dlopen(m as never, data.sqliteAddon);
    setSqliteNativeBinding(m.exports);
  }
  const config: Config = data.config;
  const pki = await loadOrCreatePki(config.dataDir, config.hostnames);
  const store = config.db ? await openPostgres(config.db, 2) : await openSqlite(path.join(config.dataDir, 'ztc.db'));
  const ctx: Ctx = { store, pki, config, clock: systemClock, sealer: loadSealer(path.join(config.dataDir, 'pki')) };
  const router = await startEdgeRouter(ctx, {
    bind: config.bind,
    port: config.routerPort,
    address: config.routerAddress || config.hostnames[0] || 'localhost',
    helloTimeoutMs: config.headersTimeoutSeconds * 1000,
    maxPerAddress: config.maxConnectionsPerAddress,
    progress: (step) => post({ progress: step }),
    log: { info: level('info'), warn: level('warn'), debug: level('debug') },
  });
  post({ ready: { id: router.router.id, name: router.router.name, url: router.router.url, port: router.port } });
  parentPort!.on('message', (m: 'close') => {
    if (m !== 'close') return;
    void (async () => {
      await router.close();
      await store.close();
      post({ closed: true });
    })();
  });
} catch (e) {
  const err = e as NodeJS.ErrnoException;
  post({ failed: { message: err.message, code: err.code } });
}
