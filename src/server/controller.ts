// Opening a data dir and running the controller: shared by `ztc serve`, the CLI's local mode and tests.
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { expireApiSessions } from '../model/auth/api-sessions.js';
import { bootstrap, type BootstrapResult } from '../model/bootstrap.js';
import { systemClock, type Clock } from '../model/clock.js';
import type { Ctx } from '../model/context.js';
import { controllerId, registerController, registeredApiAddress, setCtrlAddress } from '../model/resources/controllers.js';
import { configureCryptoPool } from '../model/crypto/pool.js';
import { loadOrCreatePki, type Progress } from '../model/pki/pki.js';
import { reissueEnrollmentJwts } from '../model/pki/jwt.js';
import { secureContextOptions } from './tls-context.js';
import { ownCertificates, ownExpiryWarnings, OWN_WARNING_DAYS } from '../model/pki/status.js';
import { edgeRouterPem } from '../model/pki/renewal.js';
import type { PkiEvent } from '../model/events/types.js';
import { openStore } from '../store/db.js';
import { loadSealer } from '../model/secrets.js';
import { Events } from '../model/events/hub.js';
import { pruneAudit } from '../model/events/audit-store.js';
import { undoUnfinishedImports } from '../model/import-journal.js';
import { buildApp, type App, type AppOptions } from './app.js';
import { ensureWritableDir, refuseMissingDatabase } from './data-dir.js';
import { capConnectionsPerAddress, closeUnfinishedHandshakes, closeWithGrace, openSockets, serverTimeouts, type OpenSockets } from './connections.js';
import { lockDataDir } from './serve-lock.js';
import { startFabricThread, type DataPlaneStats, type RunningFabric } from '../fabric/thread.js';
import { startOpsListener } from './ops-listener.js';
import type http from 'node:http';
import { setEdgeConnections } from '../model/edge-connections.js';
import { ROUTER_MODEL_ENTITIES } from '../model/router-data-model.js';

/**
 * Entities whose changes the data plane acts on: those that can take a grant away (who may dial or bind
 * what, through which routers, under which posture), and what 2.x routers hold in their data model.
 */
const WATCHED_ENTITIES = new Set(['identities', 'services', 'servicePolicies', 'edgeRouterPolicies', 'serviceEdgeRouterPolicies', 'edgeRouters', 'postureChecks', 'postureResponses', 'mfas', 'revocations', ...ROUTER_MODEL_ENTITIES]);

export interface Opened {
  ctx: Ctx;
  boot: BootstrapResult;
  close(): Promise<void>;
}

/**
 * Open a data dir's PKI and database. `local`: for a command on the host (the CLI's --data-dir), perhaps
 * beside the controller serving this data dir: the server certificate is used as it is (a command's
 * own host names must not re-issue what the controller serves), stored enrollment JWTs are left as
 * they are, and JWTs the command signs name the address this controller registered when it served.
 */
export async function openDataDir(config: Config, o: { clock?: Clock; progress?: Progress; checkpointThread?: boolean; local?: boolean } = {}): Promise<Opened> {
  const progress = o.progress ?? (() => {});
  ensureWritableDir(config.dataDir);
  if (fs.existsSync(path.join(config.dataDir, 'pki'))) ensureWritableDir(path.join(config.dataDir, 'pki'));
  refuseMissingDatabase(config.dataDir, config.db);
  const pki = await loadOrCreatePki(config.dataDir, config.hostnames, progress, { keepServer: o.local });
  configureCryptoPool({ queueLimit: config.cryptoQueueLimit });
  const store = await openStore({ url: config.db || undefined, file: path.join(config.dataDir, 'ztc.db'), checkpointThread: o.checkpointThread });
  for (const w of store.warnings) progress(`warning: ${w}`);
  const clock = o.clock ?? systemClock;
  const cfg = o.local ? { ...config, apiAddress: (await registeredApiAddress(store.db, config.dataDir)) ?? config.apiAddress } : config;
  const ctx: Ctx = { store, pki, config: cfg, clock, sealer: loadSealer(path.join(config.dataDir, 'pki')), events: new Events(store, () => clock.now()) };
  const boot = await bootstrap(ctx);
  // An import that a crash cut short on SQLite left part of its entities (model/import-journal.ts).
  if (store.dialect.name === 'sqlite') await undoUnfinishedImports(ctx, progress);
  const resigned = o.local ? 0 : await reissueEnrollmentJwts(ctx);
  if (resigned) progress(`re-signed ${resigned} outstanding enrollment JWT(s) with the server certificate's key (SDKs check it): hand out the new ones (ztc enrollment list)`);
  return { ctx, boot, close: () => store.close() };
}

export { TLS_CIPHERS } from './tls-context.js';

export interface Running {
  app: App;
  ctx: Ctx;
  boot: BootstrapResult;
  url: string;
  /** The data plane: the embedded edge router (config.router) and the control channel (config.ctrl). */
  fabric?: RunningFabric;
  /**
   * Stop: listeners closed, requests in flight answered, event streams ended, what is still open after
   * CLOSE_GRACE_MS destroyed, then the events file and the database closed. Each part is bounded but the
   * database's close: a caller that must end (serve.ts) sets its own deadline and names unfinished().
   */
  close(): Promise<void>;
  /** The parts of a stop under way that have not finished (empty before close() and after it). */
  unfinished(): string[];
}

/** How long a stop lets requests in flight finish before their connections are destroyed. */
export const CLOSE_GRACE_MS = 5000;

/** Serve both APIs over TLS. The TLS layer asks for a client certificate but does not require one. */
export async function startController(config: Config, o: { clock?: Clock; progress?: Progress; logger?: AppOptions['logger'] } = {}): Promise<Running> {
  // SQLite: one serving process per data dir (PostgreSQL controllers each have their own data dir anyway).
  ensureWritableDir(config.dataDir);
  const unlock = lockDataDir(config.dataDir);
  let opened: Opened;
  try {
    opened = await openDataDir(config, o);
  } catch (err) {
    unlock();
    throw err;
  }
  const { ctx } = opened;
  // The data plane's thread starts while the app is built; its log lines go to the app's logger.
  let app: App | undefined;
  const routerStarting = config.router || config.ctrl
    ? startFabricThread(config, {
        progress: o.progress,
        log: { info: (x, m) => app?.log.info(x, m), warn: (x, m) => app?.log.warn(x, m), debug: (x, m) => app?.log.debug(x, m) },
        stats: (s: DataPlaneStats) => app?.metrics?.dataPlaneStats(s),
        // Its events (routers, links, circuits, terminators) reach this process's file and live stream.
        events: (e) => ctx.events.emit(e, true),
        // Which identities are connected to its routers (identity details' hasEdgeRouterConnection).
        connected: (ids) => setEdgeConnections(ctx, ids),
      })
    : undefined;
  // Caught here, thrown below, so a failed start is never an unhandled rejection.
  routerStarting?.catch(() => {});
  try {
    app = await buildApp(ctx, {
      logger: o.logger,
      https: {
        ...secureContextOptions(ctx.pki),
        requestCert: true,
        rejectUnauthorized: false,
        ...serverTimeouts(config).server,
      },
    });
  } catch (err) {
    await routerStarting?.then((r) => r.close(), () => {});
    await opened.close();
    unlock();
    throw err;
  }
  const apiSockets = openSockets(app.server, { tls: true });
  capConnectionsPerAddress(app.server, config.maxConnectionsPerAddress, () => app?.metrics?.connectionRefused());
  closeUnfinishedHandshakes(app.server, config.headersTimeoutSeconds * 1000);
  // The edge router is up before the APIs answer: a controller that answers /version is all there.
  let router: RunningFabric | undefined;
  if (routerStarting) {
    try {
      router = await routerStarting;
    } catch (err) {
      await app.close();
      await opened.close();
      unlock();
      throw err;
    }
    // Router-side terminators written here are routed to at once (the data plane reads them every second too).
    const running = router;
    ctx.events.subscribe((e) => {
      if (e.namespace !== 'entityChange') return;
      if (e.entityType === 'terminators') running.terminatorsChanged();
      // A grant taken away, or a change of the routers' data model, through this controller is acted on
      // now, not at the access watch's next half second or the model's next second (other controllers'
      // changes still come with those).
      else if (WATCHED_ENTITIES.has(e.entityType)) running.changedHere();
    });
  }
  // A failed start past this point leaves nothing open behind it (a busy port, the metrics port).
  const release = async () => {
    await router?.close();
    clearInterval(sweep);
    clearInterval(pruning);
    await app.close();
    await opened.close();
    unlock();
  };
  const sweep = setInterval(() => void expireApiSessions(ctx).catch(() => {}), 60_000);
  sweep.unref();
  if (config.eventsFile) ctx.events.openFile({ file: config.eventsFile, maxBytes: config.eventsFileMaxMb * 1024 * 1024, keep: config.eventsFileKeep });
  // The audit's retention: pruned at start and every hour (any controller on the database may do it).
  // A sink that cannot write (a full disk) is said in the log then too; serving goes on.
  const prune = () => {
    void pruneAudit(ctx.store.db, ctx.clock.now(), config.auditRetentionDays).catch(() => {});
    for (const p of ctx.events.problems()) app?.log.warn(p);
  };
  prune();
  const pruning = setInterval(prune, 3_600_000);
  pruning.unref();
  try {
    await app.listen({ port: config.port, host: config.bind });
  } catch (err) {
    await release();
    throw err;
  }
  // Readiness: the API listener, and the data plane's thread while it lives.
  app.health.add('api.listener', () => {
    if (!app.server.listening) throw new Error('the API port is not listening');
  });
  if (router) {
    const plane = router;
    app.health.add('data-plane.thread', () => {
      if (!plane.alive()) throw new Error('the data plane\'s thread has stopped');
      return [plane.edge && `edge router on ${plane.edge.port}`, plane.ctrlPort && `control channel on ${plane.ctrlPort}`].filter(Boolean).join(', ') || undefined;
    });
  }
  let ops: http.Server | undefined;
  let opsSockets: OpenSockets = { all: new Set(), handshaking: new Set() };
  if (config.metricsPort) {
    try {
      ops = await startOpsListener({ host: config.bind, port: config.metricsPort, metrics: app.metrics, health: app.health });
      opsSockets = openSockets(ops, { tls: false });
    } catch (err) {
      await release();
      throw err;
    }
  }
  // Certificates that renew themselves (model/pki/renewal.ts): at each look, the data plane first (it
  // follows the controller's clock, serves the renewed certificates on its ports and announces a new
  // key to routers before this process signs with it), then the API port's TLS context. Connections
  // open keep the certificate they were made with.
  const renewal = app.pkiRenewal;
  if (router) {
    const plane = router;
    renewal.beforeUse((p) => plane.pkiChanged(p));
  }
  renewal.afterUse(({ changed }) => {
    if (changed) (app.server as unknown as import('node:tls').Server).setSecureContext(secureContextOptions(ctx.pki));
  });
  // Our own certificates close to expiry (the root, or a renewal that keeps failing): said at start
  // and once a day while serving, in the log and as an event.
  const warnExpiry = () => {
    const routerPem = edgeRouterPem(config.dataDir);
    for (const w of ownExpiryWarnings(ctx.pki, ctx.clock.now(), { edgeRouterPem: routerPem })) {
      app.log.warn(w);
      o.progress?.(`warning: ${w}`);
    }
    for (const c of ownCertificates(ctx.pki, ctx.clock.now(), { edgeRouterPem: routerPem })) {
      if (c.kind === 'signer' || c.daysLeft === null || c.daysLeft >= OWN_WARNING_DAYS) continue;
      ctx.events.emit(ctx.events.stamp<PkiEvent>({ namespace: 'pki', event_type: 'expiring', certificate: c.kind, fingerprint: c.fingerprint, not_after: c.notAfter ?? undefined, ...(c.renewsAt ? { renews_at: c.renewsAt } : {}) }));
    }
  };
  warnExpiry();
  const expiryCheck = setInterval(warnExpiry, 86_400_000);
  expiryCheck.unref();
  const port = (app.server.address() as { port: number }).port;
  // Port 0 asks the OS for a free port: advertise the one we got.
  config.port = port;
  const stopHeartbeat = await registerController(ctx);
  // The first look now (what came due while stopped), then every minute.
  renewal.start();
  // Where routers reach the control channel, as the banner says it: /controllers shows it (ctrlAddress),
  // every controller's on the database, so a router's config can be written without asking (ztc
  // edge-router create --router-config lists them all).
  const ownId = controllerId(config.dataDir);
  await setCtrlAddress(ctx, ownId, router?.ctrlPort ? `tls:${config.hostnames[0] ?? 'localhost'}:${router.ctrlPort}` : null);
  let closing: Promise<void> | undefined;
  // What the stop has begun and not finished, by name: the log line of a stop that ran out of time (serve.ts).
  const pending = new Set<string>();
  const step = async (name: string, fn: () => Promise<unknown> | undefined) => {
    pending.add(name);
    try {
      await fn();
    } finally {
      pending.delete(name);
    }
  };
  return {
    app,
    ctx,
    boot: opened.boot,
    fabric: router,
    url: `https://${config.bind === '0.0.0.0' || config.bind === '::' ? 'localhost' : config.bind}:${port}`,
    unfinished: () => [...pending],
    close() {
      closing ??= (async () => {
        clearInterval(sweep);
        clearInterval(pruning);
        clearInterval(expiryCheck);
        renewal.stop();
        // Side by side, each bounded: the listeners stop taking connections at once; requests in flight
        // are answered (new ones on kept-alive connections get 503), event streams are ended (their
        // preClose hook), idle connections closed, and what is left after the grace is destroyed.
        await Promise.all([
          step('controller heartbeat', () => stopHeartbeat()),
          step('metrics listener', () => ops && closeWithGrace(new Promise<void>((resolve) => ops!.close(() => resolve())), opsSockets, CLOSE_GRACE_MS)),
          step('data plane', () => router?.close()),
          step('API listener', () => closeWithGrace(app.close(), apiSockets, CLOSE_GRACE_MS)),
        ]);
        await step('events file', () => ctx.events.close());
        await step('database', () => opened.close());
        unlock();
      })();
      return closing;
    },
  };
}
