// The data plane's thread (the embedded edge router, the control channel): its own event loop (and its own connection to the store), so relaying at
// full speed never delays an API answer on the main thread. Started by fabric/thread.ts; speaks to it
// in a few messages: ready (or failed), progress and log lines, close -> closed.
import os from 'node:os';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import type { Config } from '../config.js';
import { systemClock } from '../model/clock.js';
import { Events } from '../model/events/hub.js';
import type { ZtcEvent } from '../model/events/types.js';
import { TlsFailures } from '../model/events/tls-failures.js';
import { ListenerGuard } from './channel/guard.js';
import type { Ctx } from '../model/context.js';
import { loadOrCreatePki } from '../model/pki/pki.js';
import { loadSealer } from '../model/secrets.js';
import { openPostgres, openSqlite } from '../store/db.js';
import { niceFrom, prepareStoreThread } from '../store/store-thread.js';
import { controllerId } from '../model/resources/controllers.js';
import { VERSION } from '../version.js';
import { CtrlServer } from './ctrl/listener.js';
import { clearFabricState } from '../model/fabric-state.js';
import { AccessWatch } from './access-watch.js';
import { CircuitRecorder } from './recorder.js';
import { StaticTerminators } from './static-terminators.js';
import { startEdgeRouter } from './index.js';
import { LinkDialer, type Peer } from './link/dial.js';
import { followingClock, listenForPki } from './pki-reload.js';
import type { FromRouter, RouterWorkerData } from './thread.js';

const data = workerData as RouterWorkerData;
// ZTC_RELAY_NICE: the relay thread's nice value (0 to 19; default 10).
const RELAY_NICE = niceFrom(process.env.ZTC_RELAY_NICE);
// ZTC_STATS_MS: how often the data plane reports its counters to the metrics (default 5 s).
const STATS_MS = Math.max(100, Number(process.env.ZTC_STATS_MS ?? 5000) || 5000);
/** How long the data plane's events wait to go to the main thread together (postEvents below). */
const EVENTS_MS = 20;
/** How often the connected identities are looked at (and sent when they changed). */
const CONNECTED_MS = 1000;
const post = (m: FromRouter) => parentPort!.postMessage(m);
const level = (l: 'info' | 'warn' | 'debug') => (o: object, msg: string) => post({ log: { level: l, o, msg } });

try {
  // The relay yields the CPU to the API thread when both want it (on two cores the SDKs' own processes
  // compete too); in the single executable this thread loads the unpacked addon too.
  prepareStoreThread(RELAY_NICE, data.sqliteAddon);
  const config: Config = data.config;
  const pki = await loadOrCreatePki(config.dataDir, config.hostnames);
  const store = config.db ? await openPostgres(config.db, 2) : await openSqlite(path.join(config.dataDir, 'ztc.db'));
  // Events of the data plane's thread reach the audit table; the file and the stream are the API thread's.
  // The controller's clock, as the API thread tells it at each look at the certificates (pki-reload.ts).
  const clock = followingClock(systemClock);
  const ctx: Ctx = { store, pki, config, clock, sealer: loadSealer(path.join(config.dataDir, 'pki')), events: new Events(store) };
  const log = { info: level('info'), warn: level('warn'), debug: level('debug') };
  // The data plane's events go to the main thread, which writes the events file and serves the stream:
  // those of EVENTS_MS as one message. A message an event cost the thread a sixth of a dial's CPU, and one
  // a turn of this loop still two a dial (a circuit's created and deleted events come in different turns):
  // by profile a seventh of this thread's time for dials through an upstream router. The file and the
  // stream write every 50 ms anyway (model/events/hub.ts).
  const events: ZtcEvent[] = [];
  let eventsTimer: NodeJS.Timeout | undefined;
  const postEvents = () => {
    if (eventsTimer) clearTimeout(eventsTimer);
    eventsTimer = undefined;
    if (events.length) post({ events: events.splice(0) });
  };
  ctx.events.subscribe((e) => {
    if (!events.length) eventsTimer = setTimeout(postEvents, EVENTS_MS);
    events.push(e);
  });
  // Failed TLS handshakes on the edge and control ports are among them (ziti#1834).
  const tlsFailures = new TlsFailures(ctx.events);
  ListenerGuard.tlsFailed = (listener, address, why) => tlsFailures.failed(listener === 'ctrl' ? 'ctrl' : 'edge', address, why);
  // Links and circuits a previous run left in the store ended with it; circuits from now on are recorded.
  const id = controllerId(config.dataDir);
  await clearFabricState(ctx, id);
  const recorder = new CircuitRecorder(ctx, id, log);
  // Terminators an administrator made, which routers serve themselves (the embedded router and upstream's).
  const statics = new StaticTerminators(ctx, log);
  await statics.start();
  const router = !config.router ? undefined : await startEdgeRouter(ctx, {
    bind: config.bind,
    port: config.routerPort,
    address: config.routerAddress || config.hostnames[0] || 'localhost',
    helloTimeoutMs: config.headersTimeoutSeconds * 1000,
    maxPerAddress: config.maxConnectionsPerAddress,
    progress: (step) => post({ progress: step }),
    log,
    recorder,
    statics,
  });
  // The control channel for upstream routers, in the same room (its terminators and circuits are the data plane's).
  let ctrl: CtrlServer | undefined;
  let ctrlPort: number | undefined;
  if (config.ctrl) {
    ctrl = new CtrlServer(ctx, log, recorder, statics);
    ctrlPort = await ctrl.start({
      host: config.bind,
      port: config.ctrlPort,
      certPem: pki.serverPem + pki.intermediatePem,
      keyPem: pki.serverKeyPem,
      caPem: pki.caBundlePem,
      helloTimeoutMs: config.headersTimeoutSeconds * 1000,
      maxPerAddress: config.maxConnectionsPerAddress,
      // A development version to upstream's routers: no minimum-version check holds them to older behaviour.
      version: `v0.0.0|ztc-v${VERSION}|${new Date(0).toISOString().slice(0, 10)}|${os.platform()}|${os.arch()}`,
      controllerId: id,
    });
  }
  // The embedded router is a router of the mesh: upstream routers are told of it and dial their links to
  // it; paths and terminator choices include it; its SDKs' dials with no terminator here go across links.
  let dialer: LinkDialer | undefined;
  if (router && ctrl) {
    const network = ctrl.network;
    const { fabric, mesh } = router;
    mesh.network = network;
    network.local = mesh;
    fabric.across = (side, s, token, connect, instanceId) => mesh.dialAcross(side, s, token, connect, instanceId);
    fabric.elsewhere = (serviceId) => network.terminatorsOfService(serviceId, fabric.routerId);
    // Routers that announce a link listener and do not dial here are dialed (their server certificate
    // must chain to this network's CAs, the router's own certificate is the one it presents).
    const edge = router;
    dialer = new LinkDialer(mesh, () => ({ certPem: edge.router.certPem, keyPem: edge.router.keyPem, caPem: ctx.pki.caBundlePem }));
    mesh.dialer = dialer;
    ctrl.peerChanged = (conn, up) => dialer?.peer({ id: conn.routerId, name: conn.name, version: conn.hello.version, listeners: conn.hello.listeners as Peer['listeners'] }, up);
    ctrl.localPeer = { id: fabric.routerId, version: `v${VERSION}`, listeners: [{ address: `tls:${router.router.url.replace(/^tls:\/\//, '')}`, protocol: 'tls', groups: ['default'] }] };
  }
  // Access taken away (a policy, a role attribute, a posture check...) ends the traffic it granted.
  const access = new AccessWatch(
    ctx,
    log,
    () => {
      router?.fabric.accessChanged();
      ctrl?.accessChanged();
    },
    (list) => router?.fabric.revoking(list),
  );
  access.start();
  // Which identities have SDKs connected to this data plane's routers (identity details' status), sent
  // when that changed: the embedded router's connections, and what upstream routers report.
  let connected = new Set<string>();
  const connections = setInterval(() => {
    const now = new Set<string>(ctrl?.connectedIdentities());
    for (const c of router?.fabric.conns ?? []) now.add(c.apiSession.identityId);
    if (now.size === connected.size && [...now].every((id) => connected.has(id))) return;
    connected = now;
    post({ connected: [...now] });
  }, CONNECTED_MS);
  connections.unref();
  // Counters for the main thread's metrics: a few numbers every few seconds, nothing per packet.
  let dialsReported = 0;
  const stats = setInterval(() => {
    const f = router?.fabric;
    const dialsOk = f?.dials.ok ?? 0;
    const fresh = Math.min(dialsOk - dialsReported, f?.dials.setupMs.length ?? 0);
    dialsReported = dialsOk;
    post({ stats: {
      routers: ctrl?.routers.size ?? 0,
      sdkConnections: f?.conns.size ?? 0,
      circuits: f?.circuits.size ?? 0,
      bytesRelayed: f?.bytesIn ?? 0,
      dialsOk,
      dialsFailed: f?.dials.failed ?? 0,
      dialSetupMs: fresh > 0 ? f!.dials.setupMs.slice(-fresh) : [],
      listeners: { ...(router ? { edge: { ...router.guard.counts } } : {}), ...(ctrl ? { ctrl: { ...ctrl.guard.counts } } : {}) },
    } });
  }, STATS_MS);
  stats.unref();
  // Certificates renewed while serving: taken up here without a restart (pki-reload.ts).
  listenForPki({ ctx, clock, ctrl, router, log });
  post({ ready: { edge: router && { id: router.router.id, name: router.router.name, url: router.router.url, port: router.port }, ctrlPort } });
  parentPort!.on('message', (m: 'close' | 'terminators' | 'changed' | object) => {
    // A terminator written through this controller's API (those of others arrive with the next read).
    if (m === 'terminators') return void statics.refresh();
    // A grant or the routers' model changed through this controller's API: the access watch and the
    // model look now (the markers and the recorded changes say what moved).
    if (m === 'changed') {
      void access.tick();
      void ctrl?.rdm.check();
      return;
    }
    if (m !== 'close') return;
    clearInterval(stats);
    clearInterval(connections);
    post({ connected: [] });
    access.stop();
    statics.stop();
    dialer?.stop();
    void (async () => {
      await ctrl?.stop();
      await router?.close();
      tlsFailures.close();
      await recorder.flush();
      await clearFabricState(ctx, id).catch(() => {});
      await store.close();
      postEvents();
      post({ closed: true });
    })();
  });
} catch (e) {
  const err = e as NodeJS.ErrnoException;
  post({ failed: { message: err.message, code: err.code } });
}
