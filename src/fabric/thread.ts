// The main thread's handle on the data plane (the embedded edge router and the control channel for
// upstream routers), which runs on its own thread (fabric/worker.ts): the
// relay's TLS and copying would otherwise compete with the APIs for one event loop (measured: a client's
// service-list p99 went from 3.8 to 37 ms while four streams relayed; README, Benchmarks).
import { Worker } from 'node:worker_threads';
import type { Config } from '../config.js';
import type { ZtcEvent } from '../model/events/types.js';
import { sqliteAddonFile, threadProgram } from '../store/store-thread.js';
import type { ListenerCounts } from './channel/guard.js';
import type { FabricLog } from './fabric.js';
import type { PkiDone, PkiMessage } from './pki-reload.js';

export interface RouterWorkerData {
  config: Config;
  /** In the single executable: the unpacked better-sqlite3 addon, for this thread to load. */
  sqliteAddon?: string;
}

export type FromRouter =
  | { ready: { edge?: EmbeddedEdge; ctrlPort?: number } }
  | { failed: { message: string; code?: string } }
  | { progress: string }
  | { log: { level: 'info' | 'warn' | 'debug'; o: object; msg: string } }
  | { closed: true }
  | { stats: DataPlaneStats }
  /** Every identity with an SDK connected to one of this data plane's routers, when that changed. */
  | { connected: string[] }
  /** The data plane's events since the last such message, in order (one message a turn of its loop, not one an event). */
  | { events: ZtcEvent[] }
  | PkiDone;

/** What the data plane reports to the main thread every few seconds, for the metrics (server/metrics.ts). */
export interface DataPlaneStats {
  routers: number;
  sdkConnections: number;
  circuits: number;
  /** Totals since the thread started. */
  bytesRelayed: number;
  dialsOk: number;
  dialsFailed: number;
  /** Set-up times of the dials that completed since the last report, in milliseconds. */
  dialSetupMs: number[];
  /** The edge and control ports (those listening): connections closed by their limits, bytes held in partial frames. */
  listeners: { edge?: ListenerCounts; ctrl?: ListenerCounts };
}

/** The embedded edge router: its record's id and name, the tls:// address SDKs are given, its port. */
export interface EmbeddedEdge {
  id: string;
  name: string;
  url: string;
  port: number;
}

/** The data plane's thread: the embedded edge router (config.router) and the control channel (config.ctrl). */
export interface RunningFabric {
  edge?: EmbeddedEdge;
  /** Where upstream routers connect, if listening. */
  ctrlPort?: number;
  /** False once the thread has failed or exited (the readiness check). */
  alive(): boolean;
  /** A terminator was written through this controller's API: the data plane reads router-side ones again at once. */
  terminatorsChanged(): void;
  /** Something that can take a grant away, or that 2.x routers' data model holds, was written here: the data plane looks now. */
  changedHere(): void;
  /**
   * The controller looked at its certificates (model/pki/renewal.ts): the data plane follows its clock,
   * loads pki/ again when it changed (new certificates on its ports, the keys announced to routers)
   * and renews its router's certificate when due. Resolves once done.
   */
  pkiChanged(o: { now: number; changed: boolean }): Promise<void>;
  close(): Promise<void>;
}

function workerUrl(): URL | string {
  // Compiled, it is beside this module; bundled (dist/src/bundle/), in ../fabric; run from the
  // TypeScript sources (vitest), the compiled copy, as the crypto pool does.
  return threadProgram((globalThis as { __ztcRouterWorker?: string }).__ztcRouterWorker, ['./worker.js', '../fabric/worker.js'], import.meta.url) ?? new URL('../../dist/src/fabric/worker.js', import.meta.url);
}

/** The longest the data plane's thread may take to close (its listeners, its store) before it is ended. */
const CLOSE_MS = 5000;
/** Changes within this long of the first make one nudge of the data plane (changedHere). */
const ACCESS_NUDGE_MS = 20;

export function startFabricThread(config: Config, o: { progress?: (s: string) => void; log: FabricLog; stats?: (s: DataPlaneStats) => void; events?: (e: ZtcEvent) => void; connected?: (identityIds: string[]) => void }): Promise<RunningFabric> {
  const sqliteAddon = sqliteAddonFile();
  const worker = new Worker(workerUrl(), { workerData: { config, sqliteAddon } satisfies RouterWorkerData });
  let onClosed: (() => void) | undefined;
  let pkiAsked = 0;
  let nudging: NodeJS.Timeout | undefined;
  const pkiWaiting = new Map<number, { resolve(): void; reject(e: Error): void }>();
  return new Promise((resolve, reject) => {
    let started = false;
    let alive = true;
    worker.on('message', (m: FromRouter) => {
      if ('stats' in m) o.stats?.(m.stats);
      else if ('connected' in m) o.connected?.(m.connected);
      else if ('events' in m) for (const e of m.events) o.events?.(e);
      else if ('progress' in m) o.progress?.(m.progress);
      else if ('pkiDone' in m) {
        const w = pkiWaiting.get(m.pkiDone.id);
        pkiWaiting.delete(m.pkiDone.id);
        if (m.pkiDone.error) w?.reject(new Error(m.pkiDone.error));
        else w?.resolve();
      }
      else if ('log' in m) o.log[m.log.level](m.log.o, m.log.msg);
      else if ('closed' in m) onClosed?.();
      else if ('failed' in m) {
        void worker.terminate();
        reject(Object.assign(new Error(m.failed.message), { code: m.failed.code }));
      } else if ('ready' in m) {
        started = true;
        let closing: Promise<void> | undefined;
        resolve({
          edge: m.ready.edge,
          ctrlPort: m.ready.ctrlPort,
          alive: () => alive,
          terminatorsChanged: () => {
            if (alive) worker.postMessage('terminators');
          },
          changedHere: () => {
            // One nudge for a burst of changes (an import writes thousands in a second).
            if (!alive || nudging) return;
            nudging = setTimeout(() => {
              nudging = undefined;
              if (alive) worker.postMessage('changed');
            }, ACCESS_NUDGE_MS);
          },
          pkiChanged: (p) =>
            new Promise<void>((resolve, reject) => {
              if (!alive) return resolve();
              const id = ++pkiAsked;
              pkiWaiting.set(id, { resolve, reject });
              worker.postMessage({ pki: { id, ...p } } satisfies PkiMessage);
            }),
          close() {
            closing ??= new Promise<void>((done) => {
              // A thread that has already ended has nothing to close (and would never answer).
              if (!alive) return done();
              const end = () => {
                clearTimeout(timer);
                void worker.terminate().then(() => done(), () => done());
              };
              // Its own close is bounded: past CLOSE_MS (a database that does not answer) the thread is ended.
              const timer = setTimeout(() => {
                o.log.warn({ ms: CLOSE_MS }, 'the data plane did not finish closing in time: its thread is ended');
                end();
              }, CLOSE_MS);
              onClosed = end;
              worker.once('exit', end);
              worker.postMessage('close');
            });
            return closing;
          },
        });
      }
    });
    worker.on('error', (e) => {
      alive = false;
      if (!started) reject(e);
      else o.log.warn({ err: String(e) }, 'edge: the router thread failed');
    });
    worker.on('exit', (code) => {
      alive = false;
      for (const w of pkiWaiting.values()) w.reject(new Error('the data plane\'s thread has stopped'));
      pkiWaiting.clear();
      if (!started) reject(new Error(`the edge router thread exited (${code}) before it started`));
    });
  });
}
